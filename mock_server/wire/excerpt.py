"""What is kept or shown of a body another server sent (shadow mode's divergences, verify-provider's report):
the value whole when its JSON text is small, else the first bytes of that text with a marker saying how much there
was. A backend's 8 MiB answer costs a divergence 64 KiB, not 8 MiB and its parsed objects."""

from __future__ import annotations

from typing import Any

from mock_server.wire.encoding import encode_json

CUT = "[truncated: {size} bytes in all]"  # the request journal's own marker


def excerpt(value: Any, limit: int) -> tuple[Any, int]:
    """(what to keep, its size in bytes): `value` itself when its text fits in `limit` bytes, else a string of
    the text's first `limit` bytes and the marker. A string is its own text; None stays None."""
    if value is None:
        return None, 0
    raw = value.encode("utf-8", "replace") if isinstance(value, str) else encode_json(value)
    if len(raw) <= limit:
        return value, len(raw)
    return raw[:limit].decode("utf-8", "ignore") + CUT.format(size=len(raw)), limit


def excerpt_lines(lines: list[str], max_lines: int, line_limit: int) -> list[str]:
    """At most `max_lines` lines of at most `line_limit` characters each; what is left out is counted."""
    kept = [line if len(line) <= line_limit else f"{line[:line_limit]}... ({len(line)} characters)" for line in lines]
    if len(kept) > max_lines:
        kept = [*kept[: max_lines - 1], f"... and {len(lines) - max_lines + 1} more"]
    return kept
