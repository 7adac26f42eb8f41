"""JSON on the wire: encoding response bodies, and the one place contract errors become responses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from starlette.responses import Response

from .errors import ApiError


def encode_json(body: Any) -> bytes:
    """Compact UTF-8 JSON. orjson writes it much faster than the json module (encoding was the largest share
    of a lookup's own cost); it refuses integers beyond 64 bits, which only an echoed client value (a fault's
    body) can hold: those go through the json module.

    The result is copied: the bytes orjson returns keep a few kB of heap however short they are, and the
    journal keeps many responses per session (BENCHMARKS.md, 256 busy sessions; the figures are in the
    commit that made this copy). The copy is cheap."""
    try:
        return bytes(memoryview(orjson.dumps(body)))
    except orjson.JSONEncodeError:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response (no body for None)."""
    content = b"" if body is None else encode_json(body)
    media_type = None if body is None else "application/json"
    # No mapping at all when there are no headers: Starlette then skips a pass over an empty one.
    return Response(content, status_code=status, headers=headers or None, media_type=media_type)


def error_response(error: ApiError) -> Response:
    """The contract's error body `{"code", "message", "details"}` with the error's status and headers."""
    return json_response(error.status, error.body(), error.headers)
