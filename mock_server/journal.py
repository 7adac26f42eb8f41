"""The request journal of one session: what the public API received and answered, the last 1000.

Bodies are kept as the bytes that crossed the wire and decoded only when the journal is read: a parsed
body costs about five times the memory, and 256 sessions of 1000 entries each add up.
"""

from __future__ import annotations

from collections import deque
from datetime import datetime
from typing import Any, NamedTuple

from .body import parse_json
from .clock import timestamp
from .errors import ApiError

JOURNAL_SIZE = 1000
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization"})
REDACTED = "[redacted]"


class _Entry(NamedTuple):
    received_at: datetime  # written out when read: most entries are never read
    method: str
    path: str
    operation_id: str
    status: int
    request_raw: bytes
    request_is_json: bool
    response_raw: bytes
    request_headers: dict[str, str]  # by lower-case name, as received; redacted when read


def _decoded(raw: bytes, is_json: bool) -> Any:
    """JSON when it was sent as JSON and parses (strictly, as the API reads it), else text; None when empty."""
    if not raw:
        return None
    if is_json:
        try:
            return parse_json(raw, "application/json")
        except ApiError:
            pass
    return raw.decode("utf-8", "replace")


def _redacted(headers: dict[str, str]) -> dict[str, str]:
    """The headers in the order sent, credentials replaced: a journal is printed by failing tests and CI logs.
    (`headers` was built from the last header to the first, so that the first of a repeated one wins.)"""
    return {name: REDACTED if name in SECRET_HEADERS else value for name, value in reversed(headers.items())}


class Journal:
    def __init__(self) -> None:
        self._entries: deque[_Entry] = deque(maxlen=JOURNAL_SIZE)

    def record(
        self,
        received_at: datetime,
        method: str,
        path: str,
        operation_id: str,
        status: int,
        request_raw: bytes,
        request_is_json: bool,
        response_raw: bytes,
        *,
        request_headers: dict[str, str] | None = None,
    ) -> None:
        self._entries.append(
            _Entry(
                received_at,
                method,
                path,
                operation_id,
                status,
                request_raw,
                request_is_json,
                response_raw,
                request_headers or {},
            )
        )

    def entries(
        self, operation_id: str | None = None, status: int | None = None, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        """Oldest first, in the shape of the admin spec's JournalEntry; only those of `operation_id`, answered
        with `status`, received at or after `since`, when given."""
        return [
            {
                "received_at": timestamp(e.received_at),
                "method": e.method,
                "path": e.path,
                "operation_id": e.operation_id,
                "status": e.status,
                "request_body": _decoded(e.request_raw, e.request_is_json),
                "response_body": _decoded(e.response_raw, True),
                "request_headers": _redacted(e.request_headers),
            }
            for e in self._entries
            if (operation_id is None or e.operation_id == operation_id)
            and (status is None or e.status == status)
            and (since is None or e.received_at >= since)
        ]

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
