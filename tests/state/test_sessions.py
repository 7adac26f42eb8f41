"""The session registry's eviction rules (state/sessions.py), without HTTP."""

from __future__ import annotations

import gc
import sys
import tracemalloc

import pytest

from mock_server.domain.errors import SessionEvicted, TooManySessions
from mock_server.domain.models import Scenario
from mock_server.state.evictions import RECORD_SECONDS, EvictionRecords, Tombstone, record_bytes
from mock_server.state.sessions import Sessions


@pytest.fixture
def make() -> type[Sessions]:
    def build(max_sessions: int) -> Sessions:
        return Sessions({"s": Scenario("s", "")}, "s", max_sessions=max_sessions)

    return build  # type: ignore[return-value]


def open_and_close(sessions: Sessions, name: str, explicit: bool = False) -> None:
    sessions.release(sessions.acquire(name, explicit))


def test_the_least_recently_used_implicit_session_goes_first(make):
    sessions = make(3)
    open_and_close(sessions, "e1", explicit=True)
    open_and_close(sessions, "i1")
    open_and_close(sessions, "i2")
    open_and_close(sessions, "e2", explicit=True)  # e1 is the oldest, but explicit: i1 goes
    assert [s.name for s in sessions.all()] == ["e1", "i2", "e2"]
    open_and_close(sessions, "e3", explicit=True)  # i2 goes before any explicit one
    assert [s.name for s in sessions.all()] == ["e1", "e2", "e3"]
    open_and_close(sessions, "e4", explicit=True)  # only explicit ones left: the oldest goes, remembered
    assert [s.name for s in sessions.all()] == ["e2", "e3", "e4"]
    assert [t.name for t in sessions.tombstones()] == ["e1"]
    assert sessions.evictions == 3
    with pytest.raises(SessionEvicted):
        sessions.acquire("e1")
    with pytest.raises(TooManySessions):
        sessions.acquire("i3")  # an implicit creation may not evict explicit sessions
    assert [s.name for s in sessions.all()] == ["e2", "e3", "e4"]


def test_a_held_session_is_never_evicted_and_the_cap_gives_way_to_an_explicit_creation(make):
    sessions = make(1)
    held = sessions.acquire("a", explicit=True)
    open_and_close(sessions, "b", explicit=True)
    assert [s.name for s in sessions.all()] == ["a", "b"]  # over the cap while a is in flight
    sessions.release(held)
    open_and_close(sessions, "c", explicit=True)
    assert sessions.peek("a") is None and sessions.peek("b") is None


def test_default_is_never_evicted(make):
    sessions = make(1)
    open_and_close(sessions, "default")
    with pytest.raises(TooManySessions):
        sessions.acquire("x")
    assert [s.name for s in sessions.all()] == ["default"]


def test_an_implicit_session_that_acknowledged_a_write_is_remembered_when_evicted(make):
    sessions = make(1)
    sessions.get("wrote").acknowledged_write = True
    open_and_close(sessions, "next")
    assert [t.name for t in sessions.tombstones()] == ["wrote"]
    with pytest.raises(SessionEvicted):
        sessions.acquire("wrote")
    open_and_close(sessions, "wrote", explicit=True)  # made again on purpose: the record goes
    assert sessions.tombstones() == []


def test_records_are_never_flushed_by_a_count_of_later_evictions(make):
    """Issue 24, item 4: 4,096 later evictions used to forget the first record."""
    sessions = make(1)
    open_and_close(sessions, "first", explicit=True)
    for index in range(5000):
        open_and_close(sessions, f"s{index}", explicit=True)
    assert len(sessions.evicted) == 5000  # first and 4,999 others, each still answering 410
    with pytest.raises(SessionEvicted):
        sessions.acquire("first")


def test_records_expire_after_a_day(make):
    sessions = make(1)
    now = [1_000_000.0]
    sessions.evicted = EvictionRecords(clock=lambda: now[0])
    open_and_close(sessions, "a", explicit=True)
    open_and_close(sessions, "b", explicit=True)  # a evicted now
    (record,) = sessions.tombstones()
    now[0] = record.evicted_at + RECORD_SECONDS - 1
    with pytest.raises(SessionEvicted):
        sessions.acquire("a")
    now[0] = record.evicted_at + RECORD_SECONDS + 1
    assert sessions.tombstone("a") is None  # forgotten after a day
    assert sessions.tombstones() == []
    assert sessions.evicted.bytes == 0


def test_when_the_records_are_full_no_session_that_needs_one_is_evicted(make):
    sessions = make(2)
    sessions.evicted = EvictionRecords(max_bytes=2 * record_bytes("a"))
    for name in ("a", "b", "c", "d"):  # a and b evicted, their records fill the bytes
        open_and_close(sessions, name, explicit=True)
    assert [t.name for t in sessions.tombstones()] == ["a", "b"]
    with pytest.raises(TooManySessions) as refused:
        sessions.acquire("e", explicit=True)  # evicting c would need a record: refused, nothing forgotten
    assert "records of evicted sessions" in refused.value.message
    assert [s.name for s in sessions.all()] == ["c", "d"]
    assert [t.name for t in sessions.tombstones()] == ["a", "b"]
    sessions.delete("a")  # forgetting one on purpose makes room
    open_and_close(sessions, "e", explicit=True)
    assert [t.name for t in sessions.tombstones()] == ["b", "c"]


def test_a_batch_refused_for_room_takes_back_what_it_deleted_and_made(make):
    sessions = make(2)
    sessions.evicted = EvictionRecords(max_bytes=2 * record_bytes("a"))
    for name in ("a", "b", "c", "d"):  # a and b evicted, their records fill the bytes
        open_and_close(sessions, name, explicit=True)
    # d deleted, e made in its place; f would evict c, which needs a record: refused, and e and d taken back
    with pytest.raises(TooManySessions):
        sessions.change([("e", None, None), ("f", None, None)], ["d"])
    assert sorted(s.name for s in sessions.all()) == ["c", "d"]
    assert [t.name for t in sessions.tombstones()] == ["a", "b"]
    made, deleted = sessions.change([("e", None, 5)], ["d", "a", "nobody"])
    assert [s.name for s in made] == ["e"] and deleted == ["d", "a"]
    assert [s.name for s in sessions.all()] == ["c", "e"] and [t.name for t in sessions.tombstones()] == ["b"]


def test_a_batch_refused_for_records_brings_back_the_sessions_it_evicted(make):
    """Issue 43 M3: a refused batch does nothing, evictions included."""
    sessions = make(3)
    sessions.evicted = EvictionRecords(max_bytes=record_bytes("a"))
    for name in ("a", "b", "c"):
        open_and_close(sessions, name, explicit=True)
    # x evicts a (its record fills the bytes), y would evict b, which needs a record too: refused, a comes back
    with pytest.raises(TooManySessions):
        sessions.change([("x", None, None), ("y", None, None)], [])
    assert [s.name for s in sessions.all()] == ["a", "b", "c"]
    assert sessions.tombstones() == [] and sessions.evictions == 0


def test_a_batch_never_evicts_a_session_it_made(make):
    sessions = make(3)
    open_and_close(sessions, "default")
    with pytest.raises(TooManySessions):  # default may not go: 3 more do not fit
        sessions.change([(f"n{i}", None, None) for i in range(3)], [])
    assert [s.name for s in sessions.all()] == ["default"]
    held = sessions.acquire("busy")  # in flight: may not go either
    with pytest.raises(TooManySessions):
        sessions.change([(f"n{i}", None, None) for i in range(2)], [])
    sessions.release(held)
    made, _ = sessions.change([(f"n{i}", None, None) for i in range(2)], [])  # busy goes, both made kept
    assert [s.name for s in made] == ["n0", "n1"] == [s.name for s in sessions.all()][1:]
    assert all(s.in_flight == 0 for s in sessions.all())


def test_a_session_that_wrote_nothing_is_evicted_even_when_the_records_are_full(make):
    sessions = make(2)
    sessions.evicted = EvictionRecords(max_bytes=0)
    open_and_close(sessions, "kept", explicit=True)
    open_and_close(sessions, "idle")
    open_and_close(sessions, "new")  # idle wrote nothing: it goes, no record needed
    assert [s.name for s in sessions.all()] == ["kept", "new"]


def test_the_records_bytes_match_what_they_hold() -> None:
    records = EvictionRecords()
    names = [f"session-{index:06d}" for index in range(5000)]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for name in names:
        records.add(Tombstone(name, 1.0 + len(records), 256))
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    counted = records.bytes - sum(sys.getsizeof(name) for name in names)  # the names exist anyway here
    assert held <= counted <= 2 * held, (held, counted)


def test_peek_and_health_reads_make_nothing(make):
    sessions = make(2)
    assert sessions.peek("x") is None
    assert sessions.scenario_of("x").name == "s"
    sessions.now_in("x")
    assert len(sessions) == 0
