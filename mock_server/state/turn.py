"""A request's one door into its session: `Sessions.begin(...) -> Turn`, then `Turn.finish(...)`.

Everything the session does for one request happens at those two doors: begin holds the session (never evicted
while held), reads its clock once, applies the schedules that came due and decides the injected fault; finish
journals the call, counts it in the server's coverage, marks an acknowledged write, lets the session go and hands
the finished turn to the server's observers. The pipeline (http/pipeline.py) calls nothing else of the state for a
request; the handler gets the turn's store.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mock_server.state import faults as fault_rules
from mock_server.state.faults import NO_BODY, Decision, Fault

if TYPE_CHECKING:
    from mock_server.domain.certificates import ClientCertificate
    from mock_server.domain.models import Scenario
    from mock_server.state.coverage import Coverage
    from mock_server.state.sessions import Session
    from mock_server.state.store import Store
    from mock_server.wire.headers import RawHeaders

log = logging.getLogger("mock_server")
# Called with every finished turn, in order, after its session was let go (ServerContext.turn_observers).
TurnObserver = Callable[["Turn"], None]


class TurnPlan:
    """What every turn of one operation shares, fixed when the route is built: its id, whether it is public
    (journaled, open to faults, counted in coverage), whether it creates its session on purpose (a reset), whether a
    2xx acknowledges a write, and the server's coverage and observers. One per operation: a turn carries a
    reference to it, not copies of its fields."""

    __slots__ = ("coverage", "explicit", "noting", "observers", "operation_id", "public", "tallies", "writes")

    def __init__(
        self,
        operation_id: str,
        public: bool,
        explicit: bool,
        writes: bool,
        coverage: Coverage,
        observers: tuple[TurnObserver, ...] = (),
        noting: bool = False,
    ) -> None:
        self.operation_id = operation_id
        self.public = public
        self.explicit = explicit
        self.writes = writes
        self.coverage = coverage
        # The operation's coverage counters (Coverage.tallies), counted by `finish` itself (public operations only:
        # coverage knows no other, so another's are its own, never read).
        self.tallies: tuple[Counter[int], Counter[int]] = (
            coverage.tallies(operation_id) if public else (Counter(), Counter())
        )
        self.observers = observers
        # Whether turns keep their domain events (a tracer puts them on the request's span): else `events` stays
        # None, and the state code's `turn.events is not None` test is all a change of state pays.
        self.noting = noting or bool(observers)

    def count(self, status: int, off_spec: bool, refused_fields: list[str] | None) -> None:
        """One answer of the operation in the server's coverage (a turn's, or a call refused before its session
        was opened); `refused_fields`: the fields a 400 refused, None for any other answer."""
        if refused_fields is None:
            self.coverage.count(self.operation_id, status, off_spec)
        else:
            self.coverage.record(self.operation_id, status, refused_fields, off_spec)


class Turn:
    """One request's passage through its session, from `Sessions.begin` to `finish`.

    What it carries: the session (`session.name`, its `scenario`), the operation (`plan.operation_id`), the
    session clock's reading when the request arrived (`now`: every rule of the request reads this one instant), the
    session's `store` (what the handler gets), the injected `fault` decided for it (None: none), the request's
    `method`, `path` and raw `headers` (by reference: read a header only when needed, `traceparent` among them),
    and once finished its `status` (None: the connection was dropped).

    Two hook points for what must see a whole request (a telemetry span, a seeded fault decision, a quota window),
    each free when unused:

    (a) domain events: `note(name, attributes)` appends `(name, attributes, time.time_ns())` to `events`, a list
        when the plan is `noting` (a tracer, or observers), else None: state code notes only when it is a list.
        Code that changes state during the turn reaches it as the store's
        `turn` (set by begin and again as the handler gets the store, cleared by finish; None outside a request):
        `if turn is not None and turn.events is not None: turn.note("pix_mock.event.paid", {...})`. Names are
        `pix_mock.<thing>.<what happened>`.
    (b) observers: the plan's `observers` (ServerContext.turn_observers, an empty tuple by default) are called with
        the turn once it finished and its session was let go. An observer must not raise and must not block: it runs
        on the event loop, inside the request.

    The fault decision is `state/faults.decide(operation_id, now, session, path, body)`: one function, so a seeded
    or quota-bound decision replaces it without the pipeline knowing. A fault matching on the body waits for it:
    `fault_waits_for_body` is then true, and the caller reads the body and calls `decide_fault`.

    No `__init__`: `Sessions.begin` makes a turn with `Turn()` and sets every slot itself, in place (CPython calls a
    Python `__init__` from C, and a function is one more frame: together about 1,000 of a turn's instructions at
    every request, callgrind). A slot added here is set there.
    """

    __slots__ = (
        "decision",
        "events",
        "fault",
        "fault_waits_for_body",
        "headers",
        "method",
        "now",
        "path",
        "plan",
        "session",
        "status",
        "trace",
    )
    plan: TurnPlan
    session: Session
    now: datetime
    method: str
    path: str
    headers: RawHeaders
    fault: Fault | None
    # What the armed faults made of the call (None: none was asked): the wait it adds, a quota's Retry-After, and
    # each fault's mark, which the journal keeps.
    decision: Decision | None
    fault_waits_for_body: bool
    events: list[tuple[str, Mapping[str, Any], int]] | None
    status: int | None
    # (trace id, span id) of the request's span when tracing is on, for the journal (telemetry/tracing.py)
    trace: tuple[int, int] | None

    @property
    def store(self) -> Store:
        """The session's store: what the handler gets."""
        return self.session.store

    @property
    def operation_id(self) -> str:
        return self.plan.operation_id

    @property
    def scenario(self) -> Scenario:
        return self.session.scenario

    def note(self, name: str, attributes: Mapping[str, Any]) -> None:
        """A domain event of this turn (`pix_mock.<thing>.<what happened>`) and its instant, for the span; kept
        only when the turn keeps events (callers test `events is not None` first, to build no attributes)."""
        if self.events is not None:
            self.events.append((name, attributes, time.time_ns()))

    def decide_fault(self, path: Mapping[str, str], body: Any = NO_BODY) -> Fault | None:
        """The injected fault of this call (its path parameters and JSON body, NO_BODY for none), decided once."""
        self.fault_waits_for_body = False
        decision = self.decision = fault_rules.decide(self.plan.operation_id, self.now, self.session, path, body)
        self.fault = None if decision is None else decision.fault
        return self.fault

    def claim_store(self) -> Store:
        """The store, with this turn its current one again: an await since begin (a body read, a fault's delay) may
        have let another request of the session begin."""
        store = self.session.store
        store.turn = self
        return store

    def finish(
        self,
        status: int | None,
        request_body: bytes,
        request_is_json: bool,
        response_body: bytes,
        injected: bool,
        certificate: ClientCertificate | None,
        off_spec: bool,
        refused_fields: list[str] | None,
    ) -> None:
        """The call answered `status` (None: dropped, no answer): journaled and counted when public, a 2xx of a
        writing operation acknowledged (its eviction then leaves a record), the session let go, the observers told.
        `refused_fields`: the fields a 400 refused (counted in coverage), None for any other answer. Positional
        arguments, as the journal's own: keywords cost more, at every public call."""
        plan = self.plan
        session = self.session
        self.status = status
        if plan.public:
            session.journal.record(
                self.now,
                self.method,
                self.path,
                plan.operation_id,
                status,
                request_body,
                request_is_json,
                response_body,
                self.headers,
                injected,
                certificate,
                None if self.decision is None else self.decision.marks,
                self.trace,
            )
            session.calls_answered += 1
            if status is not None and refused_fields is None:  # plan.count's usual case, without its call
                plan.tallies[off_spec][status] += 1  # Coverage.count's work, in place
            elif status is not None:  # (none was answered: nothing to count)
                plan.count(status, off_spec, refused_fields)
        if plan.writes and status is not None and 200 <= status < 300 and not off_spec:
            session.acknowledged_write = True
        session.in_flight -= 1  # leave()'s, inline: a call less at every request
        store = session.store
        if store.turn is self:
            store.turn = None
        if plan.observers:
            try:
                for observer in plan.observers:
                    observer(self)
            except Exception:  # the answer is made and the session let go: an observer's bug costs it nothing
                log.exception("a turn observer failed on %s", plan.operation_id)

    def leave(self) -> None:
        """Let the session go without an answer to record (the client left, or the answer could not be made)."""
        session = self.session
        session.in_flight -= 1
        if session.store.turn is self:
            session.store.turn = None
