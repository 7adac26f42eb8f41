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


class _Entry(NamedTuple):
    received_at: datetime  # written out when read: most entries are never read
    method: str
    path: str
    operation_id: str
    status: int
    request_raw: bytes
    request_is_json: bool
    response_raw: bytes


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
    ) -> None:
        self._entries.append(
            _Entry(received_at, method, path, operation_id, status, request_raw, request_is_json, response_raw)
        )

    def entries(self) -> list[dict[str, Any]]:
        """Oldest first, in the shape of the admin spec's JournalEntry."""
        return [
            {
                "received_at": timestamp(e.received_at),
                "method": e.method,
                "path": e.path,
                "operation_id": e.operation_id,
                "status": e.status,
                "request_body": _decoded(e.request_raw, e.request_is_json),
                "response_body": _decoded(e.response_raw, True),
            }
            for e in self._entries
        ]

    def clear(self) -> None:
        self._entries.clear()
