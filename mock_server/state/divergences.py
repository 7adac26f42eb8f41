"""Shadow mode's record of one session: the calls where the mock's answer and the backend's differed (the last
1000), and the ids the backend generated mapped to the mock's own, so that later calls naming them compare."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mock_server.domain.answers import Answer
from mock_server.domain.clock import timestamp

MAX_DIVERGENCES = 1000  # per session, the oldest go first
MAX_MAPPED_IDS = 100_000  # backend id -> mock id, per session; the oldest go first


@dataclass(frozen=True, slots=True)
class Divergence:
    received_at: datetime
    method: str
    path: str
    operation_id: str
    request_body: Any
    mock: Answer
    backend: Answer
    differences: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "received_at": timestamp(self.received_at),
            "method": self.method,
            "path": self.path,
            "operation_id": self.operation_id,
            "request_body": self.request_body,
            "mock": _answer_json(self.mock),
            "backend": _answer_json(self.backend),
            "differences": list(self.differences),
        }


def _answer_json(answer: Answer) -> dict[str, Any]:
    shaped: dict[str, Any] = {"status": answer.status, "body": answer.body}
    if answer.error is not None:
        shaped["error"] = answer.error
    return shaped


class Divergences:
    def __init__(self) -> None:
        self._entries: deque[Divergence] = deque(maxlen=MAX_DIVERGENCES)
        self._ids: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, divergence: Divergence) -> None:
        self._entries.append(divergence)

    def entries(self, operation_id: str | None = None) -> list[dict[str, Any]]:
        """Oldest first, in the admin spec's Divergence shape; only those of `operation_id` when given."""
        return [d.to_json() for d in self._entries if operation_id is None or d.operation_id == operation_id]

    def clear(self) -> None:
        """Forget the divergences; the id mapping stays (later calls naming those ids still compare)."""
        self._entries.clear()

    def reset(self) -> None:
        self._entries.clear()
        self._ids.clear()

    def map_id(self, backend_id: str, mock_id: str) -> None:
        self._ids[backend_id] = mock_id
        self._ids.move_to_end(backend_id)
        while len(self._ids) > MAX_MAPPED_IDS:
            self._ids.popitem(last=False)

    def mock_id(self, backend_id: str) -> str:
        """The mock's id for an id the backend generated (the id itself when the backend's is not known)."""
        return self._ids.get(backend_id, backend_id)
