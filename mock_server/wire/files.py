"""A file read whole, never more than a bound of bytes: what the gates and verify-provider's baseline read."""

from __future__ import annotations

from pathlib import Path


class UnreadableFile(Exception):
    """The file cannot be read, or is larger than its bound; the message names it and says which."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The file's bytes, at most `limit` of them read (one more tells a larger file)."""
    try:
        with path.open("rb") as source:
            data = source.read(limit + 1)
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise UnreadableFile(f"{path}: is larger than {limit // (1024 * 1024)} MiB")
    return data
