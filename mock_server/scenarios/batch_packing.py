"""Events of a big scenario file checked and packed a batch at a time: here, or by worker processes.

A batch is the text of a run of whole events, cut out of the file by its reader (scenarios/stream.py): a JSON
array's items, or a YAML block sequence's (scenarios/yaml_blocks.py). Each is decoded in one call, and each event of it
checked (the `ScenarioEvent` schema, the event's cross-checks) and packed into the seed (state/seed_storage.py).

Checking and packing are most of a big load's time and every batch is independent of the others, so on a
machine with more than one core (the cores this process may run on), a file of PARALLEL_FROM_BYTES or more
has its batches packed by forked worker processes while the reader cuts the next ones; the packed records
come back in order and are joined to the seed as they are. A batch a worker cannot hand back joinable (a word
the other batches do not know, an event kept as an object) is packed again here. Fork, not spawn: a worker
needs the compiled schema and nothing else, and forking is the only way to hand it over without compiling it
again; it is only done while this process has one thread, before the server starts.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from array import array
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from mock_server.domain.events import cross_check_event
from mock_server.scenarios.text import read_fast_yaml
from mock_server.spec.openapi import SchemaCheck
from mock_server.state.seed_storage import PackedBatch, SeedBuilder, SeedEvents
from mock_server.wire.decoding import SCENARIO_JSON, DuplicateKey

PARALLEL_FROM_BYTES = 8 << 20  # a file this big is packed by workers (about 14k events: 0.2 s alone)
MAX_WORKERS = 4
_INSTALMENTS = "event_conciliation_list"


# event check -> the check of a list of events, compiled once (a load makes a Sink per worker batch); the event
# check is kept with it, so that its id is never another's
_LIST_CHECKS: dict[int, tuple[SchemaCheck, SchemaCheck]] = {}


def _list_check(event_check: SchemaCheck) -> SchemaCheck:
    found = _LIST_CHECKS.get(id(event_check))
    if found is None or found[0] is not event_check:
        found = _LIST_CHECKS[id(event_check)] = (event_check, event_check.of_lists())
    return found[1]


class GiveUp(Exception):
    """Not a plainly valid scenario: the full path reads it."""


class Sink:
    """Where the events go: each checked and packed; anything short of plainly valid gives up.

    `expected`: about how many events will come. `joinable`: a worker's, whose records and instalment hashes are
    handed to another Sink (`packed`, `join`) that checks the keys of them all."""

    def __init__(self, event_check: SchemaCheck, expected: int = 0, joinable: bool = False) -> None:
        self._valid = event_check.compiled().is_valid
        self._all_valid = _list_check(event_check).compiled().is_valid
        self._builder = SeedBuilder(expected, indexed=not joinable)
        self._joinable = joinable
        self._conciliation_hashes = array("q")  # joinable: handed over
        # else checked as they come, not in a pass of their own after the last batch (0.75 s for 1M events)
        self._conciliation_seen: set[int] = set()

    def _note(self, hashes: Sequence[int]) -> None:
        if self._joinable:
            self._conciliation_hashes.extend(hashes)
            return
        seen = self._conciliation_seen
        before = len(seen)
        seen.update(hashes)
        if len(seen) != before + len(hashes):
            raise GiveUp  # maybe an event_conciliation_key twice (or two keys of one hash): the full path tells

    def add(self, data: Any) -> None:
        if type(data) is not dict or not self._valid(data):
            raise GiveUp
        self._checked_in(data)

    def add_all(self, events: list[Any]) -> None:
        """A batch's events, the schema judging them in one call."""
        if not self._all_valid(events):
            raise GiveUp
        for data in events:
            self._checked_in(data)

    def _checked_in(self, data: dict[str, Any]) -> None:
        if cross_check_event(data):
            raise GiveUp
        self._note([hash(i["event_conciliation_key"].lower()) for i in data[_INSTALMENTS]])
        self._builder.add_scenario_event(data)  # ValueError: an event key twice

    def packed(self) -> tuple[PackedBatch, array[int]]:
        return self._builder.batch(), self._conciliation_hashes

    def join(self, batch: PackedBatch, conciliation_hashes: array[int]) -> bool:
        if not self._builder.join(batch):
            return False
        self._note(conciliation_hashes)
        return True

    def seed(self) -> SeedEvents:
        return self._builder.build()


def decode(syntax: str, text: str) -> list[Any]:
    """The events of a batch's text: `json`, a JSON array's items, written without their brackets; `yaml`, a
    block sequence, read as a whole file would be, with the same refusals."""
    if syntax == "json":
        events = SCENARIO_JSON.decode(f"[{text}]")
    else:
        document = read_fast_yaml(text)
        events = None if document is None else document.data
    if type(events) is not list:
        raise GiveUp
    return events


_WORKER_CHECK: SchemaCheck | None = None  # set before the workers are forked: they inherit it


def _pack(syntax: str, text: str) -> tuple[PackedBatch, array[int]] | None:
    """In a worker: the batch packed by a builder of its own, or None when it is not plainly valid."""
    assert _WORKER_CHECK is not None
    sink = Sink(_WORKER_CHECK, joinable=True)
    try:
        sink.add_all(decode(syntax, text))
    except (GiveUp, DuplicateKey, ValueError, RecursionError):
        return None
    return sink.packed()


def workers_for(size: int) -> int:
    """How many worker processes pack a file of `size` bytes: 0 (here) unless it is big, this process may run
    on more than one core, and it has one thread (forking a process with threads can deadlock the child)."""
    if size < PARALLEL_FROM_BYTES or threading.active_count() > 1:
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cores, MAX_WORKERS) if cores > 1 else 0


class Batches:
    """Batches handed over in order by a reader, packed into `sink` in that order: here, or by `workers`."""

    def __init__(self, sink: Sink, event_check: SchemaCheck, workers: int = 0) -> None:
        self._sink = sink
        self._event_check = event_check
        self._workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._pending: deque[tuple[str, str, Future[tuple[PackedBatch, array[int]] | None]]] = deque()
        self.submitted = 0  # batches handed over

    def add(self, data: Any) -> None:
        """One event decoded already (the reader's last ones), after every batch handed over before it."""
        while self._pending:
            self._join_oldest()
        self._sink.add(data)

    def submit(self, syntax: str, text: str) -> None:
        self.submitted += 1
        if not self._workers:
            self._here(syntax, text)
            return
        if self._pool is None:
            global _WORKER_CHECK
            _WORKER_CHECK = self._event_check
            try:
                self._pool = ProcessPoolExecutor(self._workers, mp_context=multiprocessing.get_context("fork"))
            except (OSError, ImportError):  # no semaphores (a container without a writable /dev/shm): alone
                self._workers = 0
                self._here(syntax, text)
                return
        try:
            future = self._pool.submit(_pack, syntax, text)
        except OSError as exc:  # fork refused (out of memory, a process limit): the reader starts again alone
            raise BrokenProcessPool(str(exc)) from exc
        self._pending.append((syntax, text, future))
        if len(self._pending) > 2 * self._workers:  # bounded: the reader may not run far ahead
            self._join_oldest()

    def _here(self, syntax: str, text: str) -> None:
        self._sink.add_all(decode(syntax, text))

    def _join_oldest(self) -> None:
        syntax, text, future = self._pending.popleft()
        result = future.result()
        if result is None:
            raise GiveUp
        if not self._sink.join(*result):
            self._here(syntax, text)  # a word the seed's table has elsewhere, or an event kept as an object

    def finish(self) -> None:
        """Every batch joined, in order, and the workers gone."""
        try:
            while self._pending:
                self._join_oldest()
        finally:
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            for _, _, future in self._pending:
                future.cancel()
            self._pending.clear()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
