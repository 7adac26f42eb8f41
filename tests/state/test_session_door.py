"""The session registry's one door (state/session_door.py): every refusal one error type, `ApiError`, with the
status and code the admin API answers (tests/admin/test_session_lifecycle.py checks them over HTTP)."""

from __future__ import annotations

import pytest

from mock_server.domain.errors import (
    ApiError,
    ScenarioNotFound,
    SessionAlreadyExists,
    SessionEvicted,
    SessionNotFound,
)
from mock_server.domain.models import Scenario
from mock_server.state.session_door import SessionDoor
from mock_server.state.sessions import Sessions


def door(max_sessions: int = 8) -> SessionDoor:
    scenarios = {"s": Scenario("s", ""), "t": Scenario("t", "")}
    return SessionDoor(Sessions(scenarios, "s", max_sessions=max_sessions))


def test_create_makes_an_explicit_session_on_the_scenario_with_its_seed():
    sessions = door()
    made = sessions.create("a", "t", 7)
    assert (made.name, made.scenario.name, made.explicit) == ("a", "t", True)
    assert sessions.names() == ["a"]
    assert sessions.find("a") is made


@pytest.mark.parametrize(
    ("refused", "kind", "status"),
    [
        (lambda d: d.create("a"), SessionAlreadyExists, 409),
        (lambda d: d.create("b", "nope"), ScenarioNotFound, 404),
        (lambda d: d.delete("nobody"), SessionNotFound, 404),
        (lambda d: d.find("nobody"), SessionNotFound, 404),
        (lambda d: d.swap(None, "a"), SessionAlreadyExists, 409),
        (lambda d: d.change([("a", None, None)], []), SessionAlreadyExists, 409),
    ],
)
def test_every_refusal_is_one_error_type_with_the_admin_apis_status(refused, kind, status):
    sessions = door()
    sessions.create("a")
    with pytest.raises(ApiError) as error:
        refused(sessions)
    assert type(error.value) is kind
    assert error.value.status == status
    assert sessions.names() == ["a"]  # a refusal changes nothing


def test_delete_forgets_the_session_and_a_second_delete_is_refused():
    sessions = door()
    sessions.create("a")
    sessions.delete("a")
    assert sessions.names() == []
    with pytest.raises(SessionNotFound):
        sessions.delete("a")


def test_swap_deletes_the_old_session_and_makes_the_new_one_in_one_step():
    sessions = door()
    sessions.create("old")
    made = sessions.swap("old", "new", "t", 3)
    assert sessions.names() == ["new"]
    assert made.scenario.name == "t"


def test_swap_deletes_the_old_session_even_when_the_new_one_is_refused():
    """Unlike create(replacing=...), which keeps the replaced one: the runner is done with the old one either way."""
    sessions = door()
    sessions.create("old")
    with pytest.raises(ScenarioNotFound):
        sessions.swap("old", "new", "nope")
    assert sessions.names() == []
    sessions.create("kept")
    with pytest.raises(ScenarioNotFound):
        sessions.create("new", "nope", replacing="kept")
    assert sessions.names() == ["kept"]


def test_swap_of_an_old_session_already_gone_just_makes_the_new_one():
    sessions = door()
    sessions.swap("gone", "new")
    assert sessions.names() == ["new"]


def test_find_tells_an_evicted_session_from_one_that_never_was():
    sessions = door(max_sessions=1)
    sessions.create("first")
    sessions.create("second")  # evicts the explicit "first": remembered
    with pytest.raises(SessionEvicted):
        sessions.find("first")
    sessions.delete("first")  # the record of its eviction, forgotten
    with pytest.raises(SessionNotFound):
        sessions.find("first")
