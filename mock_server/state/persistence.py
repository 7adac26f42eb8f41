"""The state file (`--state-file`): the whole server's state, every session with its clock, ids, schedules and
snapshots and the records of evicted ones, written so that a restart goes on where the server stopped.

Written whole, atomically: a temporary file beside it, flushed to the disk (fsync), renamed over the old one, the
directory synced; a reader (and a crash at any moment) sees the old file or the new one, never a part. What a
session holds is taken on the event loop in one go (`capture`: cheap copies, as the state export takes them), and
turned into text and written in a worker thread of its own, so the loop goes on serving. A session no request
opened since the last write is not taken again: its text is kept from the last write.

What is kept: each session's scenario (by name: the scenario itself is the fixtures'), a state loaded into it, its
own events and accounts, its clock when frozen, its ids' generator when seeded, its schedules and snapshots; the
registry's order, eviction count and records. What is not: journals, armed faults and coverage (a record of calls,
not state), and the sessions' bytes are kept as counted.

The file is JSON, one session a line; `scenarios/state_file.py` reads and checks it (every problem placed at its
line and column) before `restore` builds anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from mock_server.domain.conversions import (
    account_from_scenario,
    account_to_scenario,
    event_from_scenario,
    event_to_scenario,
)
from mock_server.domain.models import Account, Event, Scenario
from mock_server.state.evictions import Tombstone
from mock_server.state.export import state_document
from mock_server.state.schedules import Schedule, Schedules, plan_from_json, plan_to_json
from mock_server.state.sessions import Session, Sessions
from mock_server.state.snapshots import Snapshot
from mock_server.state.store import Store, StoreCopy

FORMAT = "mock-server-state"
VERSION = 1
DEFAULT_INTERVAL = 5.0  # seconds between writes: what a SIGKILL may lose

log = logging.getLogger("mock_server")


# --- taken on the event loop ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionCapture:
    """One session as it was at one moment, safe to read from another thread while the session goes on."""

    name: str
    scenario: str
    explicit: bool
    acknowledged_write: bool
    created_at: float
    last_used: float
    frozen_at: datetime | None
    ids: dict[str, Any]
    store: StoreCopy
    schedules: tuple[Schedule, ...]
    schedule_count: int
    snapshots: tuple[Snapshot, ...]  # never changed once taken (a restore copies them)


def capture(session: Session) -> SessionCapture:
    schedules = session.schedules
    return SessionCapture(
        name=session.name,
        scenario=session.scenario.name,
        explicit=session.explicit,
        acknowledged_write=session.acknowledged_write,
        created_at=session.created_at,
        last_used=session.last_used,
        frozen_at=session.clock.frozen_at,
        ids=session.ids.saved(),
        store=session.store.view(),
        schedules=tuple(replace(s) for s in schedules.all()),
        schedule_count=schedules.count,
        snapshots=tuple(session.snapshots.all()),
    )


# --- turned into text, off the event loop ---------------------------------------------------------------------


def _instant(at: datetime | None) -> str | None:
    """Every digit of an instant (the API's own layout keeps milliseconds: a clock advanced by 1 us would move)."""
    return at.isoformat() if at is not None else None


def _schedules_json(schedules: Iterable[Schedule], count: int) -> dict[str, Any]:
    items = []
    for schedule in schedules:
        plan = plan_to_json(schedule.plan)
        if schedule.plan.at is not None:
            plan["at"] = _instant(schedule.plan.at)
        items.append(
            {
                "schedule_id": schedule.schedule_id,
                "plan": plan,
                "lookups": schedule.lookups,
                "state": schedule.state,
                "outcome": schedule.outcome,
            }
        )
    return {"count": count, "items": items}


class _States:
    """The states loaded into one session (its live store's and its snapshots' bases), each written once."""

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._index: dict[int, int] = {}
        self.documents: list[dict[str, Any]] = []

    def index(self, base: Scenario, seed: Scenario | None) -> int | None:
        if base is seed:
            return None
        found = self._index.get(id(base))
        if found is None:
            document = state_document(base.description, base.events.values(), list(base.accounts.values()))
            found = self._index[id(base)] = len(self.documents)
            self.documents.append(document)
        return found


def _store_json(store: StoreCopy, states: _States, seed: Scenario | None) -> dict[str, Any]:
    mutable = store.mutable
    return {
        "base": states.index(store.base, seed),
        "events": [event_to_scenario(event) for event in store.events.values()],
        "accounts": [account_to_scenario(account) for account in mutable["_accounts"].values()],
        "added_recipients": mutable["_added_recipients"],
        "proposals": [list(pair) for pair in mutable["_proposals"]],
        "held_bytes": mutable["held_bytes"],
    }


def session_line(session: SessionCapture, seed: Scenario | None) -> bytes:
    """The session as one line of JSON (`seed`: its scenario, whose records are never written)."""
    states = _States(session.scenario)
    store = _store_json(session.store, states, seed)
    snapshots = [
        {
            "name": snapshot.name,
            "taken_at": _instant(snapshot.taken_at),
            "events": snapshot.events,
            "accounts": snapshot.accounts,
            "held_bytes": snapshot.held_bytes,
            "store": _store_json(snapshot.store, states, seed),
            "schedules": _schedules_json(snapshot.schedules.all(), snapshot.schedules.count),
        }
        for snapshot in session.snapshots
    ]
    line = {
        "name": session.name,
        "scenario": session.scenario,
        "explicit": session.explicit,
        "acknowledged_write": session.acknowledged_write,
        "created_at": session.created_at,
        "last_used": session.last_used,
        "clock": _instant(session.frozen_at),
        "ids": session.ids,
        "states": states.documents,
        "store": store,
        "schedules": _schedules_json(session.schedules, session.schedule_count),
        "snapshots": snapshots,
    }
    return orjson.dumps(line)


def file_text(lines: Iterable[bytes], evictions: int, evicted: Iterable[Tombstone]) -> bytes:
    """The whole file: a JSON object whose `sessions` are one a line (a problem is then placed by its line)."""
    head = {
        "format": FORMAT,
        "version": VERSION,
        "written_at": datetime.now(UTC).isoformat(),
        "evictions": evictions,
        "evicted": [
            {"name": record.name, "evicted_at": record.evicted_at, "max_sessions": record.max_sessions}
            for record in evicted
        ],
    }
    opening = orjson.dumps(head)[:-1] + b',\n"sessions": [\n'
    return opening + b",\n".join(lines) + b"\n]}\n"


def write_atomically(path: Path, data: bytes) -> None:
    """`data` as the whole of `path`: written beside it, synced, renamed over it, the directory synced."""
    directory = path.parent
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    directory_handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(directory_handle)
    finally:
        os.close(directory_handle)


# --- the writer ---------------------------------------------------------------------------------------------------


class StateFile:
    """Writes the server's state to `path`: every `interval` seconds when anything moved (`run`, on the event
    loop, each write in a worker thread), and once more when the server stops (`save`, after the last request).
    One write at a time; a write that fails is logged and tried again at the next turn, and never leaves the file
    half-written."""

    def __init__(self, path: Path, sessions: Sessions, interval: float = DEFAULT_INTERVAL) -> None:
        self.path = path
        self.sessions = sessions
        self.interval = interval
        self._written_generation: int | None = None
        # name -> (the session object, its generation, its line) as last written
        self._lines: dict[str, tuple[Session, int, bytes]] = {}
        self._lock = threading.Lock()  # one write at a time: a periodic one and the last one
        self._taken = self._renamed = 0  # the writes taken on the loop, and the latest renamed into place
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="state-file")
        self.writes = 0

    def _take(self) -> Callable[[], bytes] | None:
        """On the event loop: what to write, as work for any thread; None when nothing moved since the last
        write."""
        sessions = self.sessions
        if sessions.generation == self._written_generation:
            return None
        generation = sessions.generation
        self._taken += 1
        turn = self._taken
        kept: list[tuple[Session, int, bytes | SessionCapture]] = []
        for session in sessions.all():
            known = self._lines.get(session.name)
            if known is not None and known[0] is session and known[1] == session.generation:
                kept.append((session, session.generation, known[2]))
            else:
                kept.append((session, session.generation, capture(session)))
        evictions = sessions.evictions
        evicted = sessions.tombstones()
        scenarios = sessions.scenarios

        def work() -> bytes:
            lines: dict[str, tuple[Session, int, bytes]] = {}
            for session, session_generation, taken in kept:
                line = taken if isinstance(taken, bytes) else session_line(taken, scenarios.get(taken.scenario))
                lines[session.name] = (session, session_generation, line)
            text = file_text((line for _, _, line in lines.values()), evictions, evicted)
            # One write at a time, and never an older state over a newer one: a write still going when the server
            # stops (its task was cancelled, its thread cannot be) may come to the lock after the last one.
            with self._lock:
                if turn < self._renamed:
                    return text
                self._renamed = turn
                write_atomically(self.path, text)
                self._lines = lines
                self._written_generation = generation
                self.writes += 1
            return text

        return work

    def save(self) -> None:
        """Write now, on this thread (the server has stopped: nothing else moves)."""
        work = self._take()
        if work is not None:
            work()

    async def run(self) -> None:
        """Every `interval` seconds, write what moved, off the event loop; until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            try:
                work = self._take()
                if work is not None:
                    await loop.run_in_executor(self._worker, work)
            except OSError as exc:
                log.error("the state file %s could not be written (again in %g s): %s", self.path, self.interval, exc)
            except Exception:  # a bug: the writes must go on all the same, and the log says what went wrong
                log.exception("the state file %s could not be written (again in %g s)", self.path, self.interval)


# --- read back at start -------------------------------------------------------------------------------------------


def _store(target: Store, record: dict[str, Any], states: list[Scenario], seed: Scenario) -> None:
    base = seed if record["base"] is None else states[record["base"]]
    events: dict[str, Event] = {}
    for data in record["events"]:
        event = event_from_scenario(data, data["extraordinary_event_conciliation_key"])
        events[event.key] = event
    accounts: dict[str, Account] = {}
    for data in record["accounts"]:
        account = account_from_scenario(data)
        accounts[account.account_id] = account
    proposals = [(account_id, proposal_id) for account_id, proposal_id in record["proposals"]]
    target.adopt(base, events, accounts, record["added_recipients"], proposals, record["held_bytes"])


def _schedules(record: dict[str, Any]) -> Schedules:
    schedules = Schedules()
    for item in record["items"]:
        plan = plan_from_json(item["plan"], item["plan"]["key"])
        schedule = schedules.add(plan)
        schedule.schedule_id = item["schedule_id"]
        schedule.lookups = item["lookups"]
        schedule.state = item["state"]
        schedule.outcome = item["outcome"]
    schedules.restored(record["count"])
    return schedules


def restore(
    sessions: Sessions, document: dict[str, Any], build_state: Callable[[str, dict[str, Any]], Scenario]
) -> None:
    """The registry holds what a state file (checked by scenarios/state_file.py) kept. `build_state(scenario name,
    document)` builds a loaded state, as PUT /__mock/state does."""
    for record in document["sessions"]:
        seed = sessions.scenarios[record["scenario"]]
        session = sessions.unheld(record["name"], seed)
        states = [build_state(seed.name, state) for state in record["states"]]
        _store(session.store, record["store"], states, seed)
        session.schedules = _schedules(record["schedules"])
        for data in record["snapshots"]:
            scratch = Store(seed, session.bounds)
            _store(scratch, data["store"], states, seed)
            session.snapshots.keep(
                Snapshot(
                    data["name"],
                    datetime.fromisoformat(data["taken_at"]),
                    scratch.hand_over(),
                    _schedules(data["schedules"]),
                    data["events"],
                    data["accounts"],
                    data["held_bytes"],
                )
            )
        clock = record["clock"]
        session.clock.freeze(datetime.fromisoformat(clock) if clock is not None else None)
        session.ids.restore(record["ids"])
        session.explicit = record["explicit"]
        session.acknowledged_write = record["acknowledged_write"]
        session.created_at = record["created_at"]
        session.last_used = record["last_used"]
        sessions.adopt(session)
    for data in document["evicted"]:
        sessions.evicted.add(Tombstone(data["name"], data["evicted_at"], data["max_sessions"]))
    sessions.evictions = document["evictions"]
