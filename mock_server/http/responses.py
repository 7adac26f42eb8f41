"""JSON answers as Starlette responses, and the one place a contract error becomes `{"code", "message", "details"}`
(other answers: a text or YAML reply and an injected fault's are made by the pipeline and http/fault_replies)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from mock_server.domain.errors import ApiError
from mock_server.wire.encoding import encode_json

JSON_MEDIA_TYPE = "application/json"
JSON_CONTENT_TYPE = (b"content-type", JSON_MEDIA_TYPE.encode("latin-1"))
NO_LENGTH = frozenset({204, 304})  # statuses Starlette writes no Content-Length for (nor below 200)


class _JsonBytes(Response):
    """What `Response(content, status, media_type="application/json")` makes when there are no other headers
    and the status has content: the same two headers in the same order, written directly rather than through
    Response's passes over the headers given (none)."""

    def __init__(self, status: int, content: bytes) -> None:
        self.status_code = status
        self.background = None
        self.body = content
        self.raw_headers = [(b"content-length", str(len(content)).encode("latin-1")), JSON_CONTENT_TYPE]


def json_response(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Response:
    """A JSON response (no body for None)."""
    if body is None:
        # No mapping at all when there are no headers: Starlette then skips a pass over an empty one.
        return Response(b"", status_code=status, headers=headers or None)
    return encoded_response(status, encode_json(body), headers)


def encoded_response(status: int, content: bytes, headers: Mapping[str, str] | None = None) -> Response:
    """A response of JSON already encoded (`content`)."""
    if headers or status < 200 or status in NO_LENGTH:  # Starlette's rules for those: its own Response
        return Response(content, status_code=status, headers=headers or None, media_type=JSON_MEDIA_TYPE)
    return _JsonBytes(status, content)


def error_response(error: ApiError) -> Response:
    """The contract's error body `{"code", "message", "details"}` with the error's status and headers."""
    return json_response(error.status, error.body(), error.headers)
