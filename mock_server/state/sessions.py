"""Sessions: isolated stores, journals, faults and clocks on one server, the one place that owns state."""

from __future__ import annotations

import enum
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from mock_server.domain.clock import Clock, local_date
from mock_server.domain.conversions import uuid_text
from mock_server.domain.errors import (
    ApiError,
    CapacityExceeded,
    ScenarioNotFound,
    SessionAlreadyExists,
    SessionEvicted,
    TooManySessions,
)
from mock_server.domain.models import Scenario, ScheduledTransition
from mock_server.domain.words import counted
from mock_server.state.bounds import Bounds, ByteMeter, check_room
from mock_server.state.divergences import Divergences
from mock_server.state.encoded import EncodedEvents
from mock_server.state.evictions import EvictionRecords, Tombstone
from mock_server.state.faults import Faults
from mock_server.state.footprint import scenario_footprint
from mock_server.state.ids import IdSource
from mock_server.state.journal import Journal, JournalBudget
from mock_server.state.schedules import Schedule, Schedules
from mock_server.state.snapshots import Snapshot, Snapshots
from mock_server.state.store import Store
from mock_server.state.turn import Turn, TurnPlan
from mock_server.wire.headers import RawHeaders

DEFAULT_SESSION = "default"
MAX_SESSIONS = 256
# Bound once, for `begin`: `datetime.now` made a bound method at every request (about 500 instructions, callgrind).
_now = datetime.now
_time = time.time

log = logging.getLogger("mock_server")


class Session:
    """Everything one test run sees: its store over a scenario, its journal, faults, clock and ids."""

    def __init__(
        self,
        name: str,
        scenario: Scenario,
        seed: int | None,
        clock_start: datetime | None,
        bounds: Bounds | None = None,
        journal_budget: JournalBudget | None = None,
        encoded_events: EncodedEvents | None = None,
    ) -> None:
        bounds = bounds or Bounds()
        self.name = name
        self.bounds = bounds
        # Every byte the session holds beyond its seed, against --max-session-bytes: its store's own records,
        # its schedules, its snapshots (the journal and the faults have bounds of their own).
        self.meter = ByteMeter(bounds.max_session_bytes)
        # Read through whatever store, schedules and snapshots the session holds then, in one call: the meter reads
        # it at every write (a limit change among them), where three getters cost a tenth of the change's accounting.
        self.meter.count(self._held_bytes)
        self.store = Store(scenario, bounds, self.meter)
        # The events' answers, encoded once per version: shared by every session, as the seed is.
        self.encoded_events = encoded_events if encoded_events is not None else EncodedEvents()
        self.journal = Journal(bounds.journal_bytes, journal_budget)
        self.faults = Faults(bounds.max_faults)
        self.clock = Clock(clock_start)
        self.ids = IdSource(seed, name)
        self.schedules = Schedules()
        self.schedules.load(scenario.schedules)
        self.snapshots = Snapshots()  # kept across a reset: copies the test made on purpose
        self.divergences = Divergences()  # shadow mode: where the mock and the backend answered differently
        # Public calls answered since the session was made, never reset: the provider-state handler tells the
        # interactions of a Pact verification apart by it (admin/provider_states.py).
        self.calls_answered = 0
        self.calls_at_last_state = -1  # calls_answered when a provider state was last set up; -1: never
        # Lifecycle, kept by the registry: how it was made, whether it acknowledged a write (then an eviction
        # leaves a record, and later calls answer 410), when it was last used, requests being answered in it.
        self.explicit = False
        self.acknowledged_write = False
        self.created_at = self.last_used = time.time()
        self.in_flight = 0
        # Requests that opened it: what the state file wrote of it is current while this has not moved.
        self.generation = 0

    @property
    def scenario(self) -> Scenario:
        return self.store.seed

    def reset(self, scenario: Scenario | None = None) -> None:
        """Back to how a new session starts (on `scenario` when given)."""
        self.store.reset(scenario)
        self.journal.clear()
        self.faults.clear()
        self.clock.reset()
        self.ids.reset()
        self.schedules.load(self.scenario.schedules)
        self.divergences.reset()

    def _held_bytes(self) -> int:
        """What the session's bound counts: its store's own records, its schedules and its snapshots."""
        return self.store.held_bytes + self.schedules.held_bytes + self.snapshots.held_bytes

    # --- state: loaded, snapshotted, restored ------------------------------------------------------

    def load_state(self, state: Scenario, state_bytes: int) -> None:
        """The session's state becomes `state`, its schedules those of `state`. `state_bytes`: what `state`
        holds beyond the seed's own records (state/footprint.py), counted against the session's bound."""
        plans = state.schedules
        if len(plans) > self.bounds.max_schedules:
            raise CapacityExceeded(
                f"The state holds {len(plans)} schedules; a session may hold {self.bounds.max_schedules} "
                "(mock-server --max-schedules)."
            )
        schedule_bytes = sum(Schedules.cost(plan) for plan in plans)
        live = self.store.held_bytes + self.schedules.held_bytes
        self.meter.check(state_bytes + schedule_bytes - live, "The state")
        self.store.load(state, state_bytes)
        self.schedules.load(plans)

    def add_schedule(self, plan: ScheduledTransition) -> Schedule:
        """A new schedule: 409 beyond --max-schedules (held, applied and failed ones too) or the byte bound."""
        check_room(len(self.schedules), self.bounds.max_schedules, "schedules", "--max-schedules")
        self.meter.check(Schedules.cost(plan), "The schedule")
        return self.schedules.add(plan)

    def take_snapshot(self, name: str, now: datetime) -> Snapshot:
        """A copy of the store and schedules, which holds as many bytes as they do (409 past the session's bound)."""
        self.snapshots.check_room(name)
        held = self.store.held_bytes + self.schedules.held_bytes
        self.meter.check(held - self.snapshots.held_by(name), "The snapshot")
        events, accounts = self.store.counts()
        snapshot = Snapshot(name, now, self.store.capture(), self.schedules.copy(), events, accounts, held)
        self.snapshots.keep(snapshot)
        return snapshot

    def restore_snapshot(self, name: str) -> Snapshot:
        """The store and schedules become the snapshot's copies (409 when they hold more than the bound leaves)."""
        snapshot = self.snapshots.get(name)
        live = self.store.held_bytes + self.schedules.held_bytes
        self.meter.check(snapshot.held_bytes - live, "Restoring the snapshot")
        self.store.restore(snapshot.store)
        self.schedules = snapshot.schedules.copy()
        return snapshot

    # --- scheduled transitions: the only way a lookup, or time passing, changes state --------------

    def apply_due(self, now: datetime) -> None:
        """Apply the schedules whose instant `now` has reached, each on the date it was due."""
        if not self.schedules.timed_pending:  # what every call finds in nearly every session
            return
        for schedule in self.schedules.due_by(now):
            assert schedule.plan.at is not None
            self._apply(schedule, schedule.plan.at)

    def count_lookup(self, key: str, now: datetime) -> None:
        """A lookup of the event `key` is being answered: apply the schedules it completes, before it answers."""
        if not self.schedules.lookups_pending:  # an attribute, not len(): no call for nearly every lookup
            return
        for schedule in self.schedules.looked_up(uuid_text(key)):
            self._apply(schedule, now)

    def _apply(self, schedule: Schedule, when: datetime) -> None:
        plan = schedule.plan
        try:
            event = self.store.event(plan.key)
            if plan.action == "pay":
                self.store.pay_event(event, plan.amount, local_date(when))
            else:
                self.store.cancel_event(event)
        except ApiError as error:  # the event moved on since (paid, canceled, a smaller balance)
            self.schedules.settle(schedule, error.message)
        else:
            self.schedules.settle(schedule, None)


def wall_time(at: float) -> str:
    """A registry time (time.time()) as RFC 3339 UTC with milliseconds: the wall clock, not a session clock."""
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Sessions:
    """The registry, the one owner of every session's state.

    A session is made on first use ("implicitly"), or "explicitly" by `POST /__mock/sessions` or a reset. Beyond
    `max_sessions`, the least recently used session with no request in flight is evicted: first an implicit one
    that never acknowledged a write, then one that did, then an explicit one; `default` never is. Evictions are
    logged and counted. A call for an evicted session that was explicit or acknowledged a write answers 410
    `session_evicted` until the session is reset, created again or deleted (state/evictions.py keeps the records,
    bounded by time and bytes); any other starts afresh. An implicit creation (which may come from an
    unauthenticated call) never evicts an explicit session: when only explicit ones could go, it is refused (429
    `too_many_sessions`), as is any creation that would evict a session needing a record when the records are
    full."""

    def __init__(
        self,
        scenarios: dict[str, Scenario],
        default_scenario: str,
        seed: int | None = None,
        clock_start: datetime | None = None,
        max_sessions: int = MAX_SESSIONS,
        bounds: Bounds | None = None,
    ) -> None:
        if default_scenario not in scenarios:
            raise ScenarioNotFound(default_scenario, scenarios)
        self.scenarios = scenarios
        self.default_scenario = default_scenario
        self.max_sessions = max_sessions
        self._seed = seed
        self._clock_start = clock_start
        self.bounds = bounds or Bounds()
        # Every session's journal shares one overall byte bound (an evicted session's bytes come back).
        self.journal_budget = JournalBudget(self.bounds.journal_total_bytes)
        self.encoded_events = EncodedEvents()
        self._sessions: OrderedDict[str, Session] = OrderedDict()  # least recently used first
        self.evicted = EvictionRecords()
        self.evictions = 0
        # Names of the sessions evicted since the last request's turn began, while tracing keeps events (a list;
        # None: off): `begin` notes them on the turn that made room, as pix_mock.session.evicted.
        self.noted_evictions: list[str] | None = None
        # Moves on every request that opens a session and every change of the registry: the state file is
        # written again only when it moved.
        self.generation = 0
        self._seed_bytes: dict[str, tuple[Scenario, int]] = {}

    def seed_bytes(self, scenario: Scenario) -> int:
        """The footprint of a scenario's own records (state/footprint.py), measured once per scenario: what a
        state loaded over it may hold before it counts against a session's bound."""
        found = self._seed_bytes.get(scenario.name)
        if found is None or found[0] is not scenario:
            found = self._seed_bytes[scenario.name] = (scenario, scenario_footprint(scenario))
        return found[1]

    # --- opening and closing a session for one request ----------------------------------------------

    def acquire(self, name: str, explicit: bool = False) -> Session:
        """The session `name` for one request, made when missing; `release` it when the request is answered.
        While held it is never evicted. `explicit`: the call creates it on purpose (a reset): an evicted one
        comes back, and it is kept like one made by POST /__mock/sessions. (`begin` repeats the steps for a
        session found, inline: keep both alike.)"""
        session = self._sessions.get(name)
        if session is None:
            tombstone = self.evicted.get(name)
            if tombstone is not None and not explicit:
                raise SessionEvicted(evicted_message(tombstone))
            session = self._create(name, explicit)
        else:
            self._sessions.move_to_end(name)
            if explicit:
                session.explicit = True
        session.last_used = time.time()
        session.in_flight += 1
        session.generation += 1
        self.generation += 1
        return session

    @staticmethod
    def release(session: Session) -> None:
        session.in_flight -= 1

    def begin(
        self,
        plan: TurnPlan,
        name: str,
        method: str,
        path: str,
        headers: RawHeaders,
        path_params: Mapping[str, str] | None,
    ) -> Turn:
        """One request's door into the session `name` (state/turn.py): held (`acquire`), its clock read once, the
        schedules due by then applied, the injected fault decided (public operations, when any is armed); the
        turn's `finish` or `leave` lets it go."""
        session = self._sessions.get(name)
        if session is None:
            session = self.acquire(name, plan.explicit)  # made, or refused (an evicted session's 410)
        else:  # acquire's own steps for a session found, inline (a frame less at every request): keep both alike
            self._sessions.move_to_end(name)
            if plan.explicit:
                session.explicit = True
            session.last_used = _time()
            session.in_flight += 1
            session.generation += 1
            self.generation += 1
        # Clock.now's rule read in place (a frame of domain/clock.py at every request): frozen, or real time.
        frozen_at = session.clock.frozen_at
        now = frozen_at if frozen_at is not None else _now(UTC)
        # The turn made here, every slot set (state/turn.Turn): a frame less at every request than a function's,
        # and Turn() rather than object.__new__(Turn) (its wrapper's checks cost a turn about 300 instructions).
        turn = Turn()
        turn.plan = plan
        turn.session = session
        turn.now = now
        turn.method = method
        turn.path = path
        turn.headers = headers
        turn.fault = None
        turn.decision = None
        turn.fault_waits_for_body = False
        turn.events = [] if plan.noting else None
        turn.status = None
        turn.trace = None
        session.store.turn = turn  # before the schedules: a transition they apply is noted on this turn
        evicted = self.noted_evictions
        if evicted:  # tracing on, and this request's session took the place of others
            for victim in evicted:
                turn.note("pix_mock.session.evicted", {"pix_mock.session": victim})
            evicted.clear()
        try:
            if session.schedules.timed_pending:  # apply_due's own test, without its call: nearly every call
                session.apply_due(now)
            if plan.public and session.faults.armed:  # faults are looked for only when some are armed
                if session.faults.needs_body(plan.operation_id):
                    turn.fault_waits_for_body = True  # decided once the body is read (http/fault_replies.py)
                else:
                    turn.decide_fault(path_params or {})
        except BaseException:
            turn.leave()  # no turn to finish reaches the caller: the session is let go here
            raise
        return turn

    def get(self, name: str = DEFAULT_SESSION) -> Session:
        """The session `name`, made (implicitly) when missing: for tests and tools, outside any request."""
        session = self.acquire(name)
        self.release(session)
        return session

    def peek(self, name: str) -> Session | None:
        """The session `name` if it exists; never makes one (health)."""
        return self._sessions.get(name)

    def now_in(self, name: str) -> datetime:
        """The clock reading of the session `name`, or of a new one: without making it."""
        session = self._sessions.get(name)
        return session.clock.now() if session is not None else Clock(self._clock_start).now()

    def scenario_of(self, name: str) -> Scenario:
        """The scenario `name` runs on, or would start from."""
        session = self._sessions.get(name)
        return session.scenario if session is not None else self.scenarios[self.default_scenario]

    # --- the lifecycle routes -------------------------------------------------------------------------

    def create(self, name: str, scenario: Scenario | None = None) -> Session | None:
        """A new explicit session (None when one of that name exists)."""
        if name in self._sessions:
            return None
        session = self._create(name, explicit=True)
        if scenario is not None:
            session.reset(scenario)
        return session

    def make(
        self, name: str, scenario: str | None = None, seed: int | None = None, replacing: str | None = None
    ) -> Session | None:
        """What `POST /__mock/sessions` does: the explicit session `name` on the scenario of that name (a missing
        one raises before anything is made), its ids seeded with `seed`; None when one of that name exists (and
        is not the one replaced). `replacing`: the session of that name (or the record of its eviction) is
        deleted first, in the same step: a test runner's teardown and its next test's setup in one call."""
        found = self.scenario(scenario) if scenario is not None else None
        if replacing is not None:
            if name != replacing and name in self._sessions:
                return None  # refused whole: the session replaced is kept
            self.delete(replacing)
        session = self.create(name, found)
        if session is not None and seed is not None:
            session.ids.reseed(seed)
        return session

    def change(
        self, create: Sequence[tuple[str, str | None, int | None]], delete: Sequence[str]
    ) -> tuple[list[Session], list[str]]:
        """What `PATCH /__mock/sessions` does: the sessions `delete` names deleted (with the records of their
        evictions; a name there is none of: nothing to do), then each of `create` (name, scenario, seed) made as
        `make` makes one, in one step: a test runner ends a batch of tests' sessions and makes the next batch's in
        one call. Refused whole, before anything changes, for a scenario not found or a name taken (by a session
        not deleted here, or twice in `create`), or for room (429 `too_many_sessions`) when --max-sessions cannot
        hold the batch beside the sessions that may not go (`default`, those in flight). A session made earlier in
        the call is never evicted to make room for a later one: before, 20 creations under --max-sessions 8 were
        answered 200 and 12 of them 410 at once. A creation refused for room past that check (the records of
        evictions full) takes back everything the call did, evictions included. The sessions made, and the names
        deleted."""
        scenarios = [self.scenario(scenario) if scenario is not None else None for _, scenario, _ in create]
        deleting = dict.fromkeys(delete)
        names: set[str] = set()
        for name, _, _ in create:
            if name in names or (name in self._sessions and name not in deleting):
                raise SessionAlreadyExists(f"Session {name!r} exists already.")
            names.add(name)
        staying = [s for s in self._sessions.values() if s.name not in deleting]
        pinned = sum(1 for s in staying if s.in_flight or s.name == DEFAULT_SESSION)
        if create and len(create) + pinned > self.max_sessions:
            raise TooManySessions(
                f"The batch makes {counted(len(create), 'session')}: --max-sessions {self.max_sessions} cannot hold "
                f"them beside the {counted(pinned, 'session')} that may not be evicted (default, in flight), and a "
                "batch never evicts a session it made. Nothing was done: make fewer at once, delete sessions in "
                'the same call ("delete") or raise --max-sessions.'
            )
        before = self._sessions.copy()
        evictions_before = self.evictions
        removed = {name: self._sessions.pop(name) for name in deleting if name in self._sessions}
        # Records of evictions this call forgets: those it deletes, and those of names it makes again.
        records = {name: found for name in [*deleting, *names] if (found := self.evicted.pop(name)) is not None}
        made: list[Session] = []
        try:
            for (name, _, seed), scenario in zip(create, scenarios, strict=True):
                session = self._create(name, explicit=True)
                session.in_flight += 1  # held until the call ends: no later creation of the batch evicts it
                made.append(session)
                if scenario is not None:
                    session.reset(scenario)
                if seed is not None:
                    session.ids.reseed(seed)
        except TooManySessions:
            # Nothing done: the sessions evicted for this batch come back, their records go.
            for name in before.keys() - self._sessions.keys() - removed.keys():
                self.evicted.pop(name)
            self._sessions.clear()
            self._sessions.update(before)
            self.evictions = evictions_before
            for record in records.values():
                self.evicted.add(record)
            raise
        finally:
            for session in made:
                session.in_flight -= 1
        self.generation += 1
        return made, [name for name in deleting if name in removed or name in records]

    def delete(self, name: str) -> bool:
        """Forget the session (or the record of its eviction); False when there is neither."""
        self.generation += 1
        found = self._sessions.pop(name, None) is not None
        return self.evicted.pop(name) is not None or found

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    def tombstones(self) -> list[Tombstone]:
        return self.evicted.all()

    def tombstone(self, name: str) -> Tombstone | None:
        return self.evicted.get(name)

    def scenario(self, name: str) -> Scenario:
        try:
            return self.scenarios[name]
        except KeyError:
            raise ScenarioNotFound(name, self.scenarios) from None

    def clear(self) -> None:
        """Forget every session and eviction: the next call of each starts from its seed again."""
        self._sessions.clear()
        self.evicted.clear()
        self.evictions = 0
        self.generation += 1

    def __len__(self) -> int:
        return len(self._sessions)

    # --- eviction -----------------------------------------------------------------------------------

    def _create(self, name: str, explicit: bool) -> Session:
        while len(self._sessions) >= self.max_sessions:
            refusal = self._evict_one(explicit)
            if refusal is None:
                continue
            if refusal is _Refusal.BUSY and explicit:
                break  # every session it may evict is in flight: exceed the cap for now rather than lose one
            held = f"the server holds {counted(len(self._sessions), 'session')} (--max-sessions {self.max_sessions})"
            if refusal is _Refusal.RECORDS_FULL:
                raise TooManySessions(
                    f"Session {name!r} cannot be made: {held}, and making room would evict one that acknowledged "
                    f"writes while the server already keeps {len(self.evicted)} records of evicted sessions "
                    f"({self.evicted.bytes:,} bytes, the most it keeps) to answer 410 for them. Delete sessions "
                    "(DELETE /__mock/sessions/NAME) or raise --max-sessions; records expire a day after their "
                    "eviction."
                )
            raise TooManySessions(
                f"Session {name!r} cannot be made: {held} and none it may evict for a call that does not create "
                "one explicitly. Delete sessions (DELETE /__mock/sessions/NAME) or raise --max-sessions."
            )
        session = Session(
            name,
            self.scenarios[self.default_scenario],
            self._seed,
            self._clock_start,
            self.bounds,
            self.journal_budget,
            self.encoded_events,
        )
        session.explicit = explicit
        self._sessions[name] = session
        self.evicted.pop(name)
        self.generation += 1
        return session

    def adopt(self, session: Session) -> None:
        """Hold `session` as the most recently used (a state file's, read at start: never evicts)."""
        self._sessions[session.name] = session
        self.evicted.pop(session.name)
        self.generation += 1

    def unheld(self, name: str, scenario: Scenario) -> Session:
        """A session as the registry makes them, on `scenario`, not yet held (see adopt)."""
        return Session(name, scenario, self._seed, self._clock_start, self.bounds, self.journal_budget)

    def _evict_one(self, explicit_caller: bool) -> _Refusal | None:
        """Evict the least recently used idle session: one that never acknowledged a write first, then an implicit
        one that did, then (for an explicit caller) an explicit one; never `default`. The last two leave a record
        (410 later): when the records are full, none is evicted. None when one was evicted, else why not."""
        unwritten = written = explicit = None
        for candidate in self._sessions.values():  # least recently used first
            if candidate.in_flight or candidate.name == DEFAULT_SESSION:
                continue
            if candidate.explicit:
                explicit = explicit or candidate
            elif candidate.acknowledged_write:
                written = written or candidate
            else:
                unwritten = candidate
                break
        victim = unwritten or written or (explicit if explicit_caller else None)
        if victim is None:
            return _Refusal.BUSY if explicit is None or explicit_caller else _Refusal.EXPLICIT_ONLY
        remembered = victim is not unwritten
        if remembered and not self.evicted.has_room_for(victim.name):
            return _Refusal.RECORDS_FULL
        del self._sessions[victim.name]
        self.evictions += 1
        if self.noted_evictions is not None:
            self.noted_evictions.append(victim.name)
        if remembered:
            self.evicted.add(Tombstone(victim.name, time.time(), self.max_sessions))
        log.warning(
            "session %r evicted (%s, least recently used of %d; %d journal entries dropped; %d evictions so far)",
            victim.name,
            "explicit: later calls answer 410"
            if victim.explicit
            else "it acknowledged writes: later calls answer 410"
            if remembered
            else "implicit, nothing written: a later call starts afresh",
            self.max_sessions,
            len(victim.journal),
            self.evictions,
        )
        return None


class _Refusal(enum.Enum):
    """Why no session was evicted."""

    BUSY = "every session that may go has a request in flight"
    EXPLICIT_ONLY = "only explicit sessions could go, and the caller does not create one explicitly"
    RECORDS_FULL = "the one to go needs a record of its eviction, and the records are full"


def evicted_message(tombstone: Tombstone) -> str:
    return (
        f"Session {tombstone.name!r} was evicted at {wall_time(tombstone.evicted_at)}: the least recently used "
        f"beyond --max-sessions {tombstone.max_sessions}. Its state is gone; reset it (POST /__mock/reset), create "
        "it again (POST /__mock/sessions) or delete it (DELETE /__mock/sessions/NAME) to go on."
    )
