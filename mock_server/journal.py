"""The request journal of one session: what the public API received and answered, the last 1000."""

from __future__ import annotations

from collections import deque
from typing import Any

JOURNAL_SIZE = 1000


class Journal:
    def __init__(self) -> None:
        self._entries: deque[dict[str, Any]] = deque(maxlen=JOURNAL_SIZE)

    def record(
        self,
        received_at: str,
        method: str,
        path: str,
        operation_id: str,
        status: int,
        request_body: Any,
        response_body: Any,
    ) -> None:
        self._entries.append(
            {
                "received_at": received_at,
                "method": method,
                "path": path,
                "operation_id": operation_id,
                "status": status,
                "request_body": request_body,
                "response_body": response_body,
            }
        )

    def entries(self) -> list[dict[str, Any]]:
        """Oldest first."""
        return list(self._entries)

    def clear(self) -> None:
        self._entries.clear()
