"""Request headers as the ASGI server hands them over: a list of (lower-case name, value) byte pairs."""

from __future__ import annotations

from collections.abc import Sequence

RawHeaders = Sequence[tuple[bytes, bytes]]


def header_values(raw: RawHeaders) -> dict[str, str]:
    """The headers by (ASGI: lower-case) name, read in one pass, in reverse order of arrival: the first of a
    repeated header wins, as with Starlette's `Headers.get`, whose every call walks the whole list again."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(raw)}


def header_value(raw: RawHeaders, name: bytes) -> str | None:
    """One header's value (the first, when repeated) without decoding the others; `name` in lower case. A request
    carries a handful of headers: a walk over them costs less than a dict of all of them."""
    for key, value in raw:
        if key == name:
            return value.decode("latin-1")
    return None


def is_repeated(raw: RawHeaders, name: bytes) -> bool:
    """Whether the header `name` (lower case) is sent more than once."""
    return sum(1 for key, _ in raw if key == name) > 1
