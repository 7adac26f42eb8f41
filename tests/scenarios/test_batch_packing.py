"""mock_server.scenarios.batch_packing: batches of a big scenario packed by worker processes give exactly the
scenario the full path gives, in the file's order; what a worker cannot hand back joinable is packed again
here; a problem in any batch gets the full path's verdict."""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from mock_server.scenarios import batch_packing
from mock_server.scenarios import stream as scenario_stream
from mock_server.scenarios.batch_packing import workers_for
from mock_server.state.seed_storage import SeedBuilder
from tests.scenarios.generated import generated as generated_scenario
from tests.scenarios.test_stream import LOADER, exact, full_path
from tests.scenarios.test_yaml_blocks import lean, outcome
from tests.state.test_seed_storage import an_event
from tests.state.test_seed_storage import exact as exact_event

pools: list[int] = []


class CountedPool(ProcessPoolExecutor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pools.append(args[0] if args else kwargs["max_workers"])
        super().__init__(*args, **kwargs)


@pytest.fixture
def two_workers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every file packed by two forked workers, about 50 events a batch."""
    pools.clear()
    monkeypatch.setattr(scenario_stream, "workers_for", lambda size: 2)
    monkeypatch.setattr(scenario_stream, "BATCH_CHARS", 50 * 580)
    monkeypatch.setattr(batch_packing, "ProcessPoolExecutor", CountedPool)
    return pools


def generated(tmp_path: Path, syntax: str, events: int = 600) -> Path:
    return generated_scenario(tmp_path, events, syntax)


@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_a_file_packed_by_workers_loads_exactly_and_in_order(
    tmp_path: Path, two_workers: list[int], syntax: str
) -> None:
    path = generated(tmp_path, syntax)
    found = lean(path)
    assert found is not None
    assert two_workers == [2]
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


def test_pretty_printed_json_is_cut_between_events_too(tmp_path: Path, two_workers: list[int]) -> None:
    path = generated(tmp_path, "json")
    path.write_text(json.dumps(json.loads(path.read_text()), indent=2))
    assert lean(path) is not None
    assert two_workers == [2]
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


def test_events_whose_key_is_not_first_are_read_one_by_one(tmp_path: Path, two_workers: list[int]) -> None:
    path = generated(tmp_path, "json")
    document = json.loads(path.read_text())
    document["events"] = [dict(reversed(list(e.items()))) for e in document["events"]]
    path.write_text(json.dumps(document))
    assert lean(path) is not None
    assert two_workers == []  # no cut found: nothing for a worker
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


def _with_event_changes(path: Path, changes: dict[int, dict[str, Any]]) -> None:
    document = json.loads(path.read_text())
    for index, change in changes.items():
        document["events"][index].update(change)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "changes",
    [
        {120: {"amortization_type": "a word no other batch knows"}},
        {120: {"amortization_type": "one word"}, 480: {"amortization_type": "another word"}},  # both at index 6
        {120: {"amortization_type": "one word"}, 480: {"amortization_type": "one word"}},
    ],
)
def test_a_batch_whose_words_the_seed_numbers_otherwise_is_packed_again_here(
    tmp_path: Path, two_workers: list[int], changes: dict[int, dict[str, Any]]
) -> None:
    path = generated(tmp_path, "json")
    _with_event_changes(path, changes)
    found = lean(path)
    assert found is not None
    assert two_workers == [2]
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


def test_a_batch_holding_an_event_kept_as_an_object_is_not_joined() -> None:
    """Its record holds an index into the other builder's objects (no valid scenario event needs one: the
    schema's UUIDs and amounts always fit the layout; a batch of them would be packed again here)."""
    odd = an_event(security_key="not a uuid")
    other = SeedBuilder(indexed=False)
    other.add(odd)
    seed = SeedBuilder()
    assert not seed.join(other.batch())
    usual = SeedBuilder(indexed=False)
    usual.add(an_event())
    assert seed.join(usual.batch())
    assert exact_event(seed.build()[an_event().key]) == exact_event(an_event())


# A batch in the middle in the default tier; the first and the last too in the exhaustive tier (~0.5 s each).
@pytest.mark.parametrize(
    "index", [pytest.param(0, marks=pytest.mark.exhaustive), 130, pytest.param(599, marks=pytest.mark.exhaustive)]
)
def test_a_problem_in_any_batch_gets_the_full_paths_verdict(tmp_path: Path, two_workers: list[int], index: int) -> None:
    path = generated(tmp_path, "json")
    _with_event_changes(path, {index: {"status": "payed"}})
    assert lean(path) is None
    got = outcome(LOADER.load_file, path)
    assert got == outcome(full_path, path)
    assert isinstance(got, list) and any("status" in problem for problem in got)


def test_workers_only_for_a_big_file_in_a_process_with_one_thread_and_several_cores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = batch_packing.PARALLEL_FROM_BYTES
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # the suite's own threads aside
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5})
    assert workers_for(big) == batch_packing.MAX_WORKERS
    assert workers_for(big - 1) == 0
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert workers_for(big) == 0
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert workers_for(big) == 2
    monkeypatch.setattr(threading, "active_count", lambda: 2)  # a thread beside: a forked child could deadlock
    assert workers_for(big) == 0


def _die(syntax: str, text: str) -> None:
    os._exit(9)  # as a worker killed by the kernel would


def test_a_worker_that_dies_leaves_the_file_to_be_read_without_workers(
    tmp_path: Path, two_workers: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = generated(tmp_path, "yaml")
    monkeypatch.setattr(batch_packing, "_pack", _die)
    assert lean(path) is not None
    assert two_workers == [2]
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


class NoSemaphores(ProcessPoolExecutor):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise OSError(38, "Function not implemented")  # sem_open without a writable /dev/shm


class ForkRefused(CountedPool):
    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError(12, "Cannot allocate memory")


@pytest.mark.parametrize("pool", [NoSemaphores, ForkRefused])
def test_workers_that_cannot_start_leave_the_file_to_be_read_alone(
    tmp_path: Path, two_workers: list[int], monkeypatch: pytest.MonkeyPatch, pool: type[ProcessPoolExecutor]
) -> None:
    path = generated(tmp_path, "json")
    monkeypatch.setattr(batch_packing, "ProcessPoolExecutor", pool)
    assert lean(path) is not None
    assert exact(LOADER.load_file(path)) == exact(full_path(path))
