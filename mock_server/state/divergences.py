"""Shadow mode's record of one session: the calls where the mock's answer and the backend's differed (the last
1000, within a bound of bytes, each body cut to an excerpt), and the ids the backend generated mapped to the mock's
own, so that later calls naming them compare."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mock_server.domain.answers import Answer
from mock_server.domain.clock import timestamp
from mock_server.wire.decoding import decode_json_text
from mock_server.wire.encoding import encode_json
from mock_server.wire.excerpt import excerpt, excerpt_lines

MAX_DIVERGENCES = 1000  # per session, the oldest go first
KEPT_BODY_BYTES = 64 * 1024  # of each body a divergence keeps (its JSON text); the rest is cut
MAX_DIVERGENCE_BYTES = 4 * 1024 * 1024  # the bodies and differences a session's divergences keep; the oldest go
KEPT_DIFFERENCES, DIFFERENCE_CHARACTERS = 50, 1000  # lines of differences kept, characters of each
ENTRY_OVERHEAD = 1000  # what a divergence costs besides its bodies: the record, its strings, the deque's slot
MAX_MAPPED_IDS = 100_000  # backend id -> mock id, per session; the oldest go first


@dataclass(frozen=True, slots=True)
class Divergence:
    """One call where the two answers differed, as the pipeline saw it (bodies whole)."""

    received_at: datetime
    method: str
    path: str
    operation_id: str
    request_body: Any
    mock: Answer
    backend: Answer
    differences: tuple[str, ...]


class _Body:
    """A body as kept: its JSON text, decoded when read (a parsed body costs several times its text), or the cut
    excerpt of it as a string."""

    __slots__ = ("cut", "text")

    def __init__(self, value: Any) -> None:
        kept, _ = excerpt(value, KEPT_BODY_BYTES)
        self.cut = kept is not value and kept is not None
        self.text: str | bytes | None = kept if self.cut or kept is None else encode_json(kept)

    @property
    def size(self) -> int:
        return len(self.text) if self.text is not None else 0

    def value(self) -> Any:
        if self.text is None or self.cut:
            return self.text
        assert isinstance(self.text, bytes)
        return decode_json_text(self.text.decode())


@dataclass(frozen=True, slots=True)
class _Kept:
    received_at: datetime
    method: str
    path: str
    operation_id: str
    request_body: _Body
    mock: tuple[int | None, _Body, str | None]
    backend: tuple[int | None, _Body, str | None]
    differences: tuple[str, ...]
    cost: int

    def to_json(self) -> dict[str, Any]:
        return {
            "received_at": timestamp(self.received_at),
            "method": self.method,
            "path": self.path,
            "operation_id": self.operation_id,
            "request_body": self.request_body.value(),
            "mock": _answer_json(*self.mock),
            "backend": _answer_json(*self.backend),
            "differences": list(self.differences),
        }


def _answer_json(status: int | None, body: _Body, error: str | None) -> dict[str, Any]:
    shaped: dict[str, Any] = {"status": status, "body": body.value()}
    if error is not None:
        shaped["error"] = error
    return shaped


def _kept(divergence: Divergence) -> _Kept:
    request_body, mock, backend = (
        _Body(v) for v in (divergence.request_body, divergence.mock.body, divergence.backend.body)
    )
    differences = tuple(excerpt_lines(list(divergence.differences), KEPT_DIFFERENCES, DIFFERENCE_CHARACTERS))
    cost = ENTRY_OVERHEAD + request_body.size + mock.size + backend.size + sum(len(d) for d in differences)
    return _Kept(
        divergence.received_at,
        divergence.method,
        divergence.path,
        divergence.operation_id,
        request_body,
        (divergence.mock.status, mock, divergence.mock.error),
        (divergence.backend.status, backend, divergence.backend.error),
        differences,
        cost,
    )


class Divergences:
    def __init__(self, max_bytes: int = MAX_DIVERGENCE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: deque[_Kept] = deque()
        self._bytes = 0
        self._ids: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        """What the kept divergences cost, as counted against `max_bytes`."""
        return self._bytes

    def record(self, divergence: Divergence) -> None:
        """Keep it, its bodies cut to excerpts; the oldest go while more than MAX_DIVERGENCES or `max_bytes`."""
        kept = _kept(divergence)
        self._entries.append(kept)
        self._bytes += kept.cost
        while len(self._entries) > MAX_DIVERGENCES or (self._bytes > self.max_bytes and len(self._entries) > 1):
            self._bytes -= self._entries.popleft().cost

    def entries(self, operation_id: str | None = None) -> list[dict[str, Any]]:
        """Oldest first, in the admin spec's Divergence shape; only those of `operation_id` when given."""
        return [d.to_json() for d in self._entries if operation_id is None or d.operation_id == operation_id]

    def clear(self) -> None:
        """Forget the divergences; the id mapping stays (later calls naming those ids still compare)."""
        self._entries.clear()
        self._bytes = 0

    def reset(self) -> None:
        self.clear()
        self._ids.clear()

    def map_id(self, backend_id: str, mock_id: str) -> None:
        self._ids[backend_id] = mock_id
        self._ids.move_to_end(backend_id)
        while len(self._ids) > MAX_MAPPED_IDS:
            self._ids.popitem(last=False)

    def mock_id(self, backend_id: str) -> str:
        """The mock's id for an id the backend generated (the id itself when the backend's is not known)."""
        return self._ids.get(backend_id, backend_id)
