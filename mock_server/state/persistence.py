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

One server at a time: `mock-server` holds an exclusive lock (`flock`) on `FILE.lock` beside the file while it runs
(`StateFileLock`), and a second server on the same file stops at start naming the holder written in it; two servers
renaming their states over each other lost acknowledged writes. A symlink is written through: the file it points
to is replaced, the link stays. A write that fails is kept as the writer's `problem`, shown by `/__mock/health`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import re
import socket
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
from mock_server.state.bounds import Bounds
from mock_server.state.evictions import RECORD_BYTES, Tombstone
from mock_server.state.export import state_document
from mock_server.state.schedules import Schedule, Schedules, plan_from_json, plan_to_json
from mock_server.state.sessions import Session, Sessions
from mock_server.state.snapshots import Snapshot
from mock_server.state.store import Store, StoreCopy

FORMAT = "mock-server-state"
VERSION = 1
DEFAULT_INTERVAL = 5.0  # seconds between writes: what a SIGKILL may lose
LOCK_SUFFIX = ".lock"
# A session's line beyond the bytes its bound counts (its name, clock, ids, the JSON around them), counted high. The
# bytes counted are an estimate of memory: a session filled to its bound wrote a line a quarter of them.
SESSION_LINE_EXTRA = 64 * 1024
# What mkstemp names a write's temporary file (prefix, 8 of its letters, suffix): see write_atomically.
_TEMPORARY = r"\.{name}\.[a-z0-9_]{{8}}\.tmp"

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


def real_path(path: Path) -> Path:
    """The file `path` names, through every symlink (the file need not exist yet): what is written and locked."""
    return Path(os.path.realpath(path))


def max_file_bytes(bounds: Bounds, max_sessions: int) -> int:
    """The largest state file a server held to these bounds writes: every session full, every eviction record
    kept. A larger file was not written by such a server, and is refused before it is read (its reading would hold
    many times its size in memory)."""
    return max_sessions * (bounds.max_session_bytes + SESSION_LINE_EXTRA) + RECORD_BYTES + SESSION_LINE_EXTRA


def write_atomically(path: Path, data: bytes) -> None:
    """`data` as the whole of `path` (through a symlink: the link stays, the file it names is replaced): written
    beside it, synced, renamed over it, the directory synced."""
    path = real_path(path)
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


def stale_temporaries(path: Path) -> list[Path]:
    """The temporary files a write of `path` left beside it (a writer killed between mkstemp and the rename)."""
    path = real_path(path)
    pattern = re.compile(_TEMPORARY.format(name=re.escape(path.name)))
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return [path.parent / name for name in sorted(names) if pattern.fullmatch(name)]


# --- one server a file --------------------------------------------------------------------------------------------


class StateFileInUse(Exception):
    """Another process holds the state file's lock."""


class StateFileLock:
    """An exclusive `flock` on `FILE.lock`, beside the file the state file names (through symlinks), for as long as
    the server runs. The lock is the kernel's: it goes with the process, however it ends, and a lock file a dead
    server left is no obstacle. The holder writes who it is into the file, for the one it stops."""

    def __init__(self, path: Path, handle: int) -> None:
        self.path = path
        self._handle: int | None = handle

    @classmethod
    def take(cls, state_file: Path) -> StateFileLock:
        """The lock of `state_file`, or StateFileInUse naming its holder; OSError when the lock file cannot be
        opened (a missing or read-only directory: the state file's own check says so)."""
        lock = real_path(state_file).with_name(real_path(state_file).name + LOCK_SUFFIX)
        handle = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 512, 0).decode("utf-8", "replace").strip()
            os.close(handle)
            raise StateFileInUse(
                f"{state_file}: another server uses this state file ({holder or 'a process that is just starting'}; "
                f"its lock is {lock}): two servers on one file lose each other's writes. Stop it, or give this one "
                "a --state-file of its own"
            ) from None
        except BaseException:
            os.close(handle)
            raise
        since = datetime.now(UTC).isoformat(timespec="seconds")
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"pid {os.getpid()} on host {socket.gethostname()}, since {since}\n".encode(), 0)
        return cls(lock, handle)

    def lost(self) -> str | None:
        """Why the lock no longer keeps other servers off the state file, or None while it does. `flock` holds the
        file's inode, not its name: once `FILE.lock` is removed or replaced, a second server takes a lock of its own
        on the new file and starts on the same state file (issue 43 M5: then whichever stops last overwrites what
        the other acknowledged). Asked before every write and by health: a lost lock stops the writes."""
        if self._handle is None:
            return f"the lock {self.path} was released"
        try:
            named = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            named = None
        except OSError as error:
            return f"the lock {self.path} cannot be checked ({error})"
        held = os.fstat(self._handle)
        if named is not None and (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
            return None
        what = "was removed" if named is None else "was replaced by another file"
        return (
            f"the lock {self.path} {what} while this server held it: another server may be writing this state file, "
            "so this one stopped writing it (what it acknowledges from now on is not saved). Stop every server on "
            "this file, then start one"
        )

    def release(self) -> None:
        """Let the next server take it (the file stays: removing it would race with one opening it)."""
        if self._handle is not None:
            os.close(self._handle)
            self._handle = None


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove what `stale_temporaries` finds; only the holder of the lock may (another server's write would be
    cut off). Returns what was removed."""
    removed = []
    for temporary in stale_temporaries(path):
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
            removed.append(temporary)
    return removed


# --- the writer ---------------------------------------------------------------------------------------------------


class StateFileLockLost(OSError):
    """The state file's lock no longer holds (StateFileLock.lost): the write is refused. An OSError, so that it takes
    the road of any write that fails (kept as the writer's problem, shown by health, logged, tried again)."""


@dataclass(frozen=True, slots=True)
class WriteProblem:
    """The last write failed: why, and since when writes have been failing (UTC)."""

    error: str
    since: datetime


class StateFile:
    """Writes the server's state to `path`: every `interval` seconds when anything moved (`run`, on the event
    loop, each write in a worker thread), and once more when the server stops (`save`, after the last request).
    One write at a time; a write that fails is logged, kept as `problem` (health shows it) and tried again at the
    next turn, and never leaves the file half-written."""

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
        self.written_at: datetime | None = None  # the last write renamed into place
        self.problem: WriteProblem | None = None  # the last write failed (a full disk): what health reports
        self.lock: StateFileLock | None = None  # the CLI's lock on the file: checked before each write and by health
        # Sessions never written: an MCP session's own (mcp/streamable.py), which ends with a connection no
        # restart brings back.
        self.unsaved: set[str] = set()

    def _failed(self, error: BaseException) -> None:
        since = self.problem.since if self.problem is not None else datetime.now(UTC)
        self.problem = WriteProblem(f"{type(error).__name__}: {error}", since)

    def health(self) -> dict[str, Any]:
        """The admin spec's HealthStateFile: where, when last written, what failed since."""
        why = self.lock.lost() if self.lock is not None else None
        if why is not None and (self.problem is None or self.problem.error != _lost_error(why)):
            self._failed(StateFileLockLost(why))  # seen before any write is due: nothing may have moved yet
        problem = self.problem
        return {
            "path": str(self.path),
            "written_at": _instant(self.written_at),
            "error": None if problem is None else problem.error,
            "failing_since": None if problem is None else _instant(problem.since),
        }

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
            if session.name in self.unsaved:
                continue
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
                why = self.lock.lost() if self.lock is not None else None
                if why is not None:
                    raise StateFileLockLost(why)
                write_atomically(self.path, text)
                self._lines = lines
                self._written_generation = generation
                self.writes += 1
                self.written_at = datetime.now(UTC)
                self.problem = None
            return text

        return work

    def save(self) -> None:
        """Write now, on this thread (the server has stopped: nothing else moves); OSError when it fails."""
        work = self._take()
        if work is not None:
            try:
                work()
            except OSError as exc:
                self._failed(exc)
                raise

    async def turn(self) -> None:
        """Write what moved, off the event loop; a failure is logged and kept as `problem`, never raised."""
        try:
            work = self._take()
            if work is not None:
                await asyncio.get_running_loop().run_in_executor(self._worker, work)
        except OSError as exc:
            self._failed(exc)
            log.error("the state file %s could not be written (again in %g s): %s", self.path, self.interval, exc)
        except Exception as exc:  # a bug: the writes must go on all the same, and the log says what went wrong
            self._failed(exc)
            log.exception("the state file %s could not be written (again in %g s)", self.path, self.interval)

    async def run(self) -> None:
        """Every `interval` seconds, write what moved, off the event loop; until cancelled."""
        while True:
            await asyncio.sleep(self.interval)
            await self.turn()


def _lost_error(why: str) -> str:
    """The problem a lost lock is kept as (WriteProblem.error of a StateFileLockLost)."""
    return f"{StateFileLockLost.__name__}: {why}"


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
