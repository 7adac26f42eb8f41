"""The one place answers are rendered: JSON bodies, and contract errors as `{"code", "message", "details"}`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from mock_server.domain.errors import ApiError
from mock_server.wire.encoding import encode_json


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response (no body for None)."""
    content = b"" if body is None else encode_json(body)
    media_type = None if body is None else "application/json"
    # No mapping at all when there are no headers: Starlette then skips a pass over an empty one.
    return Response(content, status_code=status, headers=headers or None, media_type=media_type)


def error_response(error: ApiError) -> Response:
    """The contract's error body `{"code", "message", "details"}` with the error's status and headers."""
    return json_response(error.status, error.body(), error.headers)
