"""Injected faults of one session: per operation, count-limited, answered before anything else.

A fault's `kind` says what the call gets (admin/openapi.yaml, POST /__mock/faults): `respond` a status and body
(or only a delay), `reset` no answer at all, `malformed` a body that is not JSON, `slow_body` its answer dribbled,
`quota` a 429 once `limit` calls have gone on in the window of the session's clock. How they go on the wire is
http/fault_replies.py's job; which fault a call gets is decided here, in one call (`Faults.decide`): the armed
faults of the operation whose `match` (path parameters, a JSON subset of the body) holds for the call are asked in
the order they were armed, each drawing whether it fires (domain/chance.py: its `probability` under its `seed`,
from what it is and how many calls it matched alone), and the first that fires answers.
"""

from __future__ import annotations

import enum
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mock_server.domain import chance
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
    QUOTA = "quota"  # `limit` calls a window of `window_s` seconds on the session's clock go on; the rest get 429


NO_BODY: Any = object()  # the call carries no JSON body (none sent, or not JSON): no body pattern holds
SEED_RANGE = 1 << 31  # a seed drawn for a fault of a session with none: small enough to read out of a CI log


@dataclass(frozen=True, slots=True)
class Chance:
    """What makes a fault fire by chance rather than always: kept apart so a plain fault shows (and costs) as
    it did before chance existed. `seed` is resolved when the fault is armed: given, the session's, or drawn.
    `mixes_name`: the draws mix the session's name in (the server's `--seed`, as the session's ids do, so the
    sessions of one run differ); any other seed draws the same in every session of every server, so a seed read
    in a journal replays its run in a session of any name (the pytest plugin's are random)."""

    probability: float
    seed: int
    jitter_ms: int
    mixes_name: bool = False

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"probability": self.probability, "seed": self.seed, "jitter_ms": self.jitter_ms}
        if self.mixes_name:
            shown["seed_mixes_session"] = True
        return shown


@dataclass(frozen=True, slots=True)
class Quota:
    """Kind `quota`: `limit` calls go on per window of `window_s` seconds (aligned to the Unix epoch)."""

    limit: int
    window_s: int

    def to_json(self) -> dict[str, Any]:
        return {"limit": self.limit, "window_s": self.window_s}


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
    chance: Chance | None = None  # None: fires on every matching call, no jitter (shown as before chance existed)
    quota: Quota | None = None  # kind quota's limit and window
    matches: int = 0  # matching calls it was asked about: the last one's draw index
    firings: int = 0  # of those, the ones it answered (or delayed)
    window: int | None = None  # a quota's current window (chance.quota_window's index); None: none yet
    window_calls: int = 0  # calls that went on in it
    definition: bytes = b""  # what it is, for its draws (`canonical`): set when armed

    def canonical(self) -> bytes:
        """What the fault is, as canonical bytes for its draws: everything it was armed with but its seed (the
        draw's key) and what changes as calls come (calls left, counts), and nothing the server chose (its id,
        which counts the faults armed before it in the session)."""
        shown = self.to_json()
        for volatile in ("fault_id", "times", "seed", "seed_mixes_session", "matches", "firings", "window_calls"):
            shown.pop(volatile, None)
        return json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

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
        if self.quota is not None:
            shown |= self.quota.to_json()
            shown["window_calls"] = self.window_calls
        if self.chance is not None:  # a quota always has one
            shown |= self.chance.to_json()
            shown["matches"], shown["firings"] = self.matches, self.firings
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


@dataclass(frozen=True, slots=True)
class FaultMark:
    """One fault's decision on one call, as the journal shows it: which fault, the index of the draw (the call's
    rank among those the fault matched, from 1), whether it fired, and what made it so."""

    fault_id: str
    draw: int
    fired: bool
    chance: Chance | None  # None: a plain fault, which fires on every call it matches
    delay_ms: int = 0  # the wait it added, jitter included

    def to_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"fault_id": self.fault_id, "draw": self.draw, "fired": self.fired}
        if self.chance is not None:
            shown["seed"], shown["probability"] = self.chance.seed, self.chance.probability
            if self.chance.mixes_name:
                shown["seed_mixes_session"] = True
        if self.delay_ms:
            shown["delay_ms"] = self.delay_ms
        return shown


@dataclass(frozen=True, slots=True)
class Decision:
    """What the armed faults made of one call: the fault that fired (None: the call goes on as usual), the wait
    it adds (its delay_ms and jitter), for a quota's 429 the seconds to its window's end, and every fault's mark."""

    fault: Fault | None
    delay_ms: int
    retry_after_s: int | None
    marks: tuple[FaultMark, ...]


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
        probability: float | None = None,
        seed: int | None = None,
        jitter_ms: int = 0,
        quota: Quota | None = None,
        default_seed: int | None = None,
        default_mixes_name: bool = False,
    ) -> Fault:
        """Arm a fault. The combinations a kind forbids (a reset with a status, a malformed with a JSON body, a
        quota without its limit) are the admin spec's to refuse; a malformed fault without `text` gets the default
        one. A fault given a probability, a seed or a jitter, and every quota, fires by chance: under `seed`, else
        `default_seed` (the session's; `default_mixes_name`: the server's --seed, which mixes the session's name
        in), else one drawn now and shown with the fault and in the journal."""
        check_room(len(self._faults), self.max_faults, "armed faults", "--max-faults")
        fault = Fault(f"fault-{self._count + 1}", operation_id, status, body, delay_ms, times, kind, text, match)
        if kind is FaultKind.MALFORMED and text is None:
            fault.text = fault.default_text()
        if quota is not None:
            fault.quota, fault.times = quota, None  # a quota stays until cleared
        if quota is not None or probability is not None or jitter_ms or seed is not None:
            mixes_name = seed is None and default_seed is not None and default_mixes_name
            drawn = seed if seed is not None else default_seed
            if drawn is None:
                drawn = secrets.randbelow(SEED_RANGE)
            fault.chance = Chance(1.0 if probability is None else probability, drawn, jitter_ms, mixes_name)
        fault.definition = fault.canonical()
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

    def decide(
        self,
        operation_id: str,
        now: datetime,
        session: str,
        path: Mapping[str, str] | None = None,
        body: Any = NO_BODY,
    ) -> Decision | None:
        """What the armed faults make of a call of `operation_id` received at `now` (the session's clock) in the
        session named `session`, with these path parameters and JSON body (NO_BODY: none); None when no fault
        matches it. Each matching fault, in the order armed, counts the call and draws; the first that fires
        answers it and spends one of its `times` (the faults after it are not asked). A fault whose match does
        not hold counts and spends nothing."""
        marks: list[FaultMark] = []
        for fault in self._faults:
            if fault.operation_id != operation_id or (
                fault.match is not None and not fault.match.holds(path or {}, body)
            ):
                continue
            fault.matches += 1
            k = fault.matches
            retry_after_s = self._quota_refuses(fault, now) if fault.quota is not None else None
            fired = (fault.quota is None or retry_after_s is not None) and self._draws_yes(fault, session, k)
            if not fired:
                marks.append(FaultMark(fault.fault_id, k, False, fault.chance))
                continue
            fault.firings += 1
            delay_ms = fault.delay_ms
            if fault.chance is not None and fault.chance.jitter_ms:
                odds = fault.chance
                scope = session if odds.mixes_name else ""
                delay_ms += chance.jitter(odds.jitter_ms, odds.seed, scope, fault.definition, k)
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    self._faults.remove(fault)
            marks.append(FaultMark(fault.fault_id, k, True, fault.chance, delay_ms))
            return Decision(fault, delay_ms, retry_after_s, tuple(marks))
        return Decision(None, 0, None, tuple(marks)) if marks else None

    @staticmethod
    def _draws_yes(fault: Fault, session: str, k: int) -> bool:
        """Whether the fault fires on its k-th matching call: always for a plain fault."""
        odds = fault.chance
        if odds is None:
            return True
        return chance.fires(odds.probability, odds.seed, session if odds.mixes_name else "", fault.definition, k)

    @staticmethod
    def _quota_refuses(fault: Fault, now: datetime) -> int | None:
        """For a quota: None when the call is one of the first `limit` of its window (it goes on and is counted),
        else the whole seconds to the window's end (the call is over the quota). A call in another window than
        the last one's, later or earlier (the clock set back), starts that window's count."""
        assert fault.quota is not None
        window, left_s = chance.quota_window(now, fault.quota.window_s)
        if fault.window != window:
            fault.window, fault.window_calls = window, 0
        if fault.window_calls < fault.quota.limit:
            fault.window_calls += 1
            return None
        return left_s

    def take(
        self, operation_id: str, path: Mapping[str, str] | None = None, body: Any = NO_BODY, session: str = ""
    ) -> Fault | None:
        """The fault that fires on a call (`decide` at the wall clock's now), or None: for callers that need no
        mark, delay or quota window."""
        decision = self.decide(operation_id, datetime.now(UTC), session, path, body)
        return None if decision is None else decision.fault

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
) -> Decision | None:
    """What the session's armed faults make of a call of `operation_id` at the session clock's `now` (its path
    parameters and JSON body to match, NO_BODY for none): the one decision a turn asks for (state/turn.py), so the
    pipeline knows nothing of chance, quotas or jitter."""
    return session.faults.decide(operation_id, now, session.name, path, body)
