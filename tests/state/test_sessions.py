"""The session registry's eviction rules (state/sessions.py), without HTTP."""

from __future__ import annotations

import pytest

from mock_server.domain.errors import SessionEvicted, TooManySessions
from mock_server.domain.models import Scenario
from mock_server.state import sessions as registry
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


def test_tombstones_are_bounded(make, monkeypatch):
    monkeypatch.setattr(registry, "MAX_TOMBSTONES", 2)
    sessions = make(1)
    for name in ("a", "b", "c", "d"):
        open_and_close(sessions, name, explicit=True)
    assert [t.name for t in sessions.tombstones()] == ["b", "c"]
    sessions.delete("d")
    open_and_close(sessions, "a")  # forgotten: an implicit session again, no 410


def test_peek_and_health_reads_make_nothing(make):
    sessions = make(2)
    assert sessions.peek("x") is None
    assert sessions.scenario_of("x").name == "s"
    sessions.now_in("x")
    assert len(sessions) == 0
