"""Injected faults of one session: per operation, count-limited, answered before anything else.

A fault's `kind` says what the call gets (admin/openapi.yaml, POST /__mock/faults): `respond` a status and body
(or only a delay), `reset` no answer at all, `malformed` a body that is not JSON, `slow_body` its answer dribbled.
How the last three go on the wire is fault_replies.py's job; which fault a call gets is decided here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .bounds import MAX_FAULTS, check_room
from .encoding import encode_json
from .errors import CapacityExceeded

MAX_FAULT_BODY_BYTES = 1024 * 1024  # their bodies and texts together, per session (one request body's worth)


class FaultKind(enum.StrEnum):
    RESPOND = "respond"  # a status and body, or only a delay (the only kind before kinds existed: the default)
    RESET = "reset"  # the connection dropped without an answer
    MALFORMED = "malformed"  # a body that is not JSON, sent as application/json
    SLOW_BODY = "slow_body"  # the answer's body dribbled over delay_ms


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
        return held + (0 if self.text is None else len(self.text.encode()))


class Faults:
    def __init__(self, max_faults: int = MAX_FAULTS) -> None:
        self._faults: list[Fault] = []
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
    ) -> Fault:
        """Arm a fault. The combinations a kind forbids (a reset with a status, a malformed with a JSON body)
        are the admin spec's to refuse; a malformed fault without `text` gets the default one."""
        check_room(len(self._faults), self.max_faults, "armed faults", "--max-faults")
        fault = Fault(f"fault-{self._count + 1}", operation_id, status, body, delay_ms, times, kind, text)
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

    def take(self, operation_id: str) -> Fault | None:
        """The first armed fault for the operation, spending one of its calls."""
        for fault in self._faults:
            if fault.operation_id == operation_id:
                if fault.times is not None:
                    fault.times -= 1
                    if fault.times <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    def all(self) -> list[Fault]:
        return list(self._faults)

    def clear(self) -> None:
        self._faults.clear()
        self._count = 0
