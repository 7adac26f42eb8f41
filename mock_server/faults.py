"""Injected faults of one session: per operation, count-limited, answered before anything else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .bounds import MAX_FAULTS, check_room
from .encoding import encode_json
from .errors import CapacityExceeded

MAX_FAULT_BODY_BYTES = 1024 * 1024  # their bodies together, per session (one request body's worth)


@dataclass(slots=True)
class Fault:
    fault_id: str
    operation_id: str
    status: int | None  # None: only the delay
    body: Any  # None: the default injected_fault body
    delay_ms: int
    times: int | None  # calls left; None: until cleared

    def to_json(self) -> dict[str, Any]:
        # Not dataclasses.asdict: it copies `body` recursively, and a deeply nested body (valid JSON the
        # parser took) would exhaust Python's stack.
        return {
            "fault_id": self.fault_id,
            "operation_id": self.operation_id,
            "status": self.status,
            "body": self.body,
            "delay_ms": self.delay_ms,
            "times": self.times,
        }

    def default_body(self) -> dict[str, str]:
        return {"code": "injected_fault", "message": f"Fault {self.fault_id} injected into {self.operation_id}."}


class Faults:
    def __init__(self, max_faults: int = MAX_FAULTS) -> None:
        self._faults: list[Fault] = []
        self._count = 0
        self.max_faults = max_faults

    def add(self, operation_id: str, status: int | None, body: Any, delay_ms: int, times: int | None) -> Fault:
        check_room(len(self._faults), self.max_faults, "armed faults", "--max-faults")
        if body is not None:
            held = sum(len(encode_json(f.body)) for f in self._faults if f.body is not None)
            if held + len(encode_json(body)) > MAX_FAULT_BODY_BYTES:
                raise CapacityExceeded(
                    f"The session's armed faults would carry over {MAX_FAULT_BODY_BYTES} bytes of bodies; clear some."
                )
        self._count += 1
        fault = Fault(f"fault-{self._count}", operation_id, status, body, delay_ms, times)
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
