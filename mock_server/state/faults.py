"""Injected faults of one session: per operation, count-limited, answered before anything else.

A fault's `kind` says what the call gets (admin/openapi.yaml, POST /__mock/faults): `respond` a status and body
(or only a delay), `reset` no answer at all, `malformed` a body that is not JSON, `slow_body` its answer dribbled.
How the last three go on the wire is http/fault_replies.py's job; which fault a call gets is decided here: the first
armed fault of the operation whose `match` (path parameters, a JSON subset of the body) holds for the call.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mock_server.domain.errors import CapacityExceeded
from mock_server.domain.matching import contains
from mock_server.state.bounds import MAX_FAULTS, check_room
from mock_server.wire.encoding import encode_json

if TYPE_CHECKING:
    from mock_server.state.sessions import Session

MAX_FAULT_BODY_BYTES = 1024 * 1024  # their bodies and texts together, per session (one request body's worth)


class FaultKind(enum.StrEnum):
    RESPOND = "respond"  # a status and body, or only a delay (the only kind before kinds existed: the default)
    RESET = "reset"  # the connection dropped without an answer
    MALFORMED = "malformed"  # a body that is not JSON, sent as application/json
    SLOW_BODY = "slow_body"  # the answer's body dribbled over delay_ms


NO_BODY: Any = object()  # the call carries no JSON body (none sent, or not JSON): no body pattern holds


@dataclass(frozen=True, slots=True)
class FaultMatch:
    """Which calls of its operation a fault hits: every path parameter named equal to the value given, and the
    JSON body holding `body` (matching.contains, the rule verification uses) when a body pattern is given."""

    path: Mapping[str, str] = field(default_factory=dict)
    body: Any = NO_BODY  # NO_BODY: no body pattern (a pattern of JSON null is a pattern)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FaultMatch:
        """The admin spec's FaultMatch, validated."""
        return cls(dict(data.get("path", {})), data.get("body_contains", NO_BODY))

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {}
        if self.path:
            shown["path"] = dict(self.path)
        if self.body is not NO_BODY:
            shown["body_contains"] = self.body
        return shown

    @property
    def needs_body(self) -> bool:
        return self.body is not NO_BODY

    def holds(self, path: Mapping[str, str], body: Any = NO_BODY) -> bool:
        """Whether a call with these path parameters and JSON body (NO_BODY: none) is one to hit."""
        if any(path.get(name) != value for name, value in self.path.items()):
            return False
        return self.body is NO_BODY or (body is not NO_BODY and contains(self.body, body))


@dataclass(slots=True)
class Fault:
    fault_id: str
    operation_id: str
    status: int | None  # None: no injected status (a delay, the real answer slowed, a reset)
    body: Any  # None: the default injected_fault body
    delay_ms: int
    times: int | None  # calls left; None: until cleared
    kind: FaultKind = FaultKind.RESPOND
    text: str | None = None  # the body a malformed fault sends
    match: FaultMatch | None = None  # None: every call of the operation

    def to_json(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it copies `body` recursively, and a deeply nested body (valid JSON the
        # parser took) would exhaust Python's stack.
        shown = {
            "fault_id": self.fault_id,
            "operation_id": self.operation_id,
            "kind": self.kind.value,
            "status": self.status,
            "body": self.body,
            "delay_ms": self.delay_ms,
            "times": self.times,
        }
        if self.text is not None:
            shown["text"] = self.text
        if self.match is not None:
            shown["match"] = self.match.to_json()
        return shown

    def default_body(self) -> dict[str, str]:
        return {"code": "injected_fault", "message": f"Fault {self.fault_id} injected into {self.operation_id}."}

    def default_text(self) -> str:
        """What a malformed fault sends unless told: the default body's JSON cut in half. A proper prefix of a
        JSON object's text is never JSON (the object closes only at its last byte), so every parser fails."""
        whole = encode_json(self.default_body()).decode()
        return whole[: len(whole) // 2]

    def size(self) -> int:
        """The bytes it holds against MAX_FAULT_BODY_BYTES."""
        held = 0 if self.body is None else len(encode_json(self.body))
        if self.match is not None and self.match.needs_body:
            held += len(encode_json(self.match.body))
        return held + (0 if self.text is None else len(self.text.encode()))


class Faults:
    def __init__(self, max_faults: int = MAX_FAULTS) -> None:
        self._faults: list[Fault] = []
        # The armed faults themselves (the same list, changed in place, never replaced), read as a plain attribute
        # where every call asks whether any is armed: `len(faults)` is a frame of this module at every request.
        self.armed: Sequence[Fault] = self._faults
        self._count = 0
        self.max_faults = max_faults

    def add(
        self,
        operation_id: str,
        status: int | None,
        body: Any,
        delay_ms: int,
        times: int | None,
        kind: FaultKind = FaultKind.RESPOND,
        text: str | None = None,
        match: FaultMatch | None = None,
    ) -> Fault:
        """Arm a fault. The combinations a kind forbids (a reset with a status, a malformed with a JSON body)
        are the admin spec's to refuse; a malformed fault without `text` gets the default one."""
        check_room(len(self._faults), self.max_faults, "armed faults", "--max-faults")
        fault = Fault(f"fault-{self._count + 1}", operation_id, status, body, delay_ms, times, kind, text, match)
        if kind is FaultKind.MALFORMED and text is None:
            fault.text = fault.default_text()
        size = fault.size()
        if size and sum(f.size() for f in self._faults) + size > MAX_FAULT_BODY_BYTES:
            raise CapacityExceeded(
                f"The session's armed faults would carry over {MAX_FAULT_BODY_BYTES} bytes of bodies; clear some."
            )
        self._count += 1
        self._faults.append(fault)
        return fault

    def needs_body(self, operation_id: str) -> bool:
        """Whether an armed fault of the operation matches on the body: the call's body must be read first."""
        return any(f.operation_id == operation_id and f.match is not None and f.match.needs_body for f in self._faults)

    def take(self, operation_id: str, path: Mapping[str, str] | None = None, body: Any = NO_BODY) -> Fault | None:
        """The first armed fault for the operation whose match holds for the call (its path parameters and JSON
        body, NO_BODY for none), spending one of its calls. A fault that does not match spends nothing."""
        for fault in self._faults:
            if fault.operation_id == operation_id and (fault.match is None or fault.match.holds(path or {}, body)):
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    def all(self) -> list[Fault]:
        return list(self._faults)

    def __len__(self) -> int:
        """How many faults are armed: none, for nearly every call, which then looks no further."""
        return len(self._faults)

    def clear(self) -> None:
        self._faults.clear()
        self._count = 0


def decide(
    operation_id: str, now: datetime, session: Session, path: Mapping[str, str] | None = None, body: Any = NO_BODY
) -> Fault | None:
    """The fault a call of `operation_id` in `session` gets at the session clock's `now` (its path parameters and
    JSON body to match, NO_BODY for none), or None: the one decision a turn asks for (state/turn.py), so that another
    rule (a seeded probability, a quota window) replaces this function alone."""
    return session.faults.take(operation_id, path, body)
