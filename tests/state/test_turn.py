"""A request's one door into its session (state/turn.py): begin and finish, through HTTP as an integrator calls, and
the turn's own rules alone."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.domain.models import Scenario
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.coverage import Coverage, OperationDoc
from mock_server.state.faults import NO_BODY, FaultMatch
from mock_server.state.sessions import Sessions
from mock_server.state.turn import Turn, TurnPlan
from tests.default_scenario import PENDING_EVENT
from tests.helpers import ADMIN_HEADERS

PENDING_KEY = PENDING_EVENT  # 1500.00 expected, nothing paid (the default scenario)
LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"


@pytest.fixture
def watched(specs: Specs) -> tuple[TestClient, list[Turn]]:
    """A client on an app whose one turn observer keeps every finished turn."""
    finished: list[Turn] = []
    app = create_app(Settings(), specs, turn_observers=(finished.append,))
    return TestClient(app, headers=ADMIN_HEADERS), finished


def named(events: Any) -> list[tuple[str, Any]]:
    """Noted events without their instants."""
    return [(name, attributes) for name, attributes, _ in events]


def test_every_public_call_in_a_session_is_one_finished_turn(watched) -> None:
    client, finished = watched
    client.get(LOOKUP, headers={"X-Mock-Session": "watched"})
    turn = finished[-1]
    assert (turn.session.name, turn.operation_id, turn.method, turn.path, turn.status) == (
        "watched",
        "getExtraordinaryEvent",
        "GET",
        LOOKUP,
        200,
    )
    assert turn.session.in_flight == 0  # let go before the observers are told
    assert turn.store.turn is None  # and no longer the store's current turn
    assert turn.events == []  # a lookup changes nothing: nothing noted (a list: observers keep the turn's events)
    assert turn.fault is None
    assert turn.session.journal.entries()[-1]["status"] == 200


def test_an_admin_call_on_a_session_takes_the_same_door(watched) -> None:
    client, finished = watched
    assert client.post("/__mock/reset", headers={"X-Mock-Session": "admin-door"}).status_code in (200, 204)
    turn = finished[-1]
    assert (turn.session.name, turn.operation_id) == ("admin-door", "mockReset")
    assert len(turn.session.journal) == 0  # admin calls are not journaled


def test_a_transition_a_lookup_completes_is_noted_on_its_turn(watched) -> None:
    client, finished = watched
    answer = client.post(f"/__mock/events/{PENDING_KEY}/schedule", json={"action": "pay", "after_lookups": 2})
    assert answer.status_code == 201, answer.text
    client.get(LOOKUP)
    assert finished[-1].events == []
    client.get(LOOKUP)
    assert named(finished[-1].events) == [("pix_mock.event.paid", {"pix_mock.event.key": PENDING_KEY})]


def test_a_timed_transition_is_noted_on_the_turn_that_applied_it(watched) -> None:
    client, finished = watched
    assert client.put("/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"}).status_code == 200
    at = "2026-11-21T11:00:00-03:00"
    answer = client.post(f"/__mock/events/{PENDING_KEY}/schedule", json={"action": "cancel", "at": at})
    assert answer.status_code == 201, answer.text
    assert client.post("/__mock/clock/advance", json={"seconds": 7200}).status_code == 200  # an admin turn
    noted = [(turn.operation_id, [name for name, _, _ in turn.events]) for turn in finished if turn.events]
    assert noted[-1] == ("mockAdvanceClock", ["pix_mock.clock.advanced", "pix_mock.event.canceled"])
    assert named(finished[-1].events)[-1] == ("pix_mock.event.canceled", {"pix_mock.event.key": PENDING_KEY})


def test_an_injected_fault_is_the_turns_decision(watched) -> None:
    client, finished = watched
    armed = client.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503, "times": 1})
    assert armed.status_code == 201, armed.text
    assert client.get(LOOKUP).status_code == 503
    assert (finished[-1].status, finished[-1].fault.fault_id) == (503, armed.json()["fault_id"])
    assert client.get(LOOKUP).status_code == 200
    assert finished[-1].fault is None


def test_a_fault_matching_on_the_body_is_decided_once_the_body_is_read(watched) -> None:
    client, finished = watched
    armed = client.post(
        "/__mock/faults",
        json={
            "operation_id": "registerAccountLimit",
            "status": 422,
            "match": {"body_contains": {"account_id": "12345-6"}},
        },
    )
    assert armed.status_code == 201, armed.text
    body = {"account_id": "12345-6", "registration_date": "2026-11-21", "limit": {"pix": {}}}
    assert client.post("/limits/account", json=body).status_code == 422
    assert finished[-1].fault is not None and not finished[-1].fault_waits_for_body


def test_an_observer_that_fails_costs_the_call_nothing(specs: Specs, caplog: pytest.LogCaptureFixture) -> None:
    def broken(turn: Turn) -> None:
        raise RuntimeError("observer bug")

    app = create_app(Settings(), specs, turn_observers=(broken,))
    client = TestClient(app, headers=ADMIN_HEADERS)
    assert client.get(LOOKUP).status_code == 200
    assert "a turn observer failed on getExtraordinaryEvent" in caplog.text
    assert app.state.sessions.peek("default").in_flight == 0


# --- the turn's rules alone ---------------------------------------------------------------------------------------


@pytest.fixture
def registry() -> Sessions:
    return Sessions({"s": Scenario("s", "")}, "s")


def plan(public: bool = True, writes: bool = False, observers: tuple[Callable[[Turn], None], ...] = ()) -> TurnPlan:
    coverage = Coverage([OperationDoc("op", "POST", "/op", ("201", "400"))])
    return TurnPlan("op", public, False, writes, coverage, observers)


def begin(sessions: Sessions, turn_plan: TurnPlan, path: dict[str, str] | None = None) -> Turn:
    return sessions.begin(turn_plan, "s", "POST", "/op", [(b"traceparent", b"00-abc-def-01")], path)


def finish(turn: Turn, status: int | None, **given: Any) -> None:
    args: dict[str, Any] = {
        "request_body": b"{}",
        "request_is_json": True,
        "response_body": b"{}",
        "injected": False,
        "certificate": None,
        "off_spec": False,
        "refused_fields": None,
    }
    args.update(given)
    turn.finish(status, *args.values())


def test_begin_holds_the_session_and_reads_its_clock_once(registry: Sessions) -> None:
    turn = begin(registry, plan())
    session = registry.peek("s")
    assert session is not None and session.in_flight == 1 and session.store.turn is turn
    assert turn.now.tzinfo is not None and turn.now <= datetime.now(UTC)
    assert turn.headers == [(b"traceparent", b"00-abc-def-01")]  # by reference, for what reads a header later
    assert turn.scenario is session.scenario
    finish(turn, 201)
    assert session.in_flight == 0 and session.store.turn is None


def test_finish_journals_and_counts_a_public_call(registry: Sessions) -> None:
    turn_plan = plan()
    finish(begin(registry, turn_plan), 201)
    finish(begin(registry, turn_plan), 400, refused_fields=["limit"])
    finish(begin(registry, turn_plan), None, injected=True, off_spec=True)  # dropped: journaled, never counted
    session = registry.get("s")
    assert [entry["status"] for entry in session.journal.entries()] == [201, 400, None]
    assert session.calls_answered == 3
    report = turn_plan.coverage.report()["operations"][0]
    assert (report["answered"], report["injected"], report["invalid_fields"]) == (
        {"201": 1, "400": 1},
        {},
        {"limit": 1},
    )


def test_an_admin_turn_is_neither_journaled_nor_counted(registry: Sessions) -> None:
    turn_plan = plan(public=False)
    finish(begin(registry, turn_plan), 201)
    assert len(registry.get("s").journal) == 0
    assert turn_plan.coverage.report()["operations"][0]["calls"] == 0


@pytest.mark.parametrize(
    ("status", "off_spec", "acknowledged"), [(201, False, True), (400, False, False), (201, True, False)]
)
def test_only_a_writing_operations_own_2xx_acknowledges_a_write(
    registry: Sessions, status: int, off_spec: bool, acknowledged: bool
) -> None:
    finish(begin(registry, plan(writes=True)), status, off_spec=off_spec)
    assert registry.get("s").acknowledged_write is acknowledged


def test_notes_are_kept_in_order_and_observers_see_the_finished_turn(registry: Sessions) -> None:
    seen: list[tuple[int | None, Any, int]] = []
    turn = begin(registry, plan(observers=(lambda t: seen.append((t.status, t.events, t.session.in_flight)),)))
    assert turn.events == []  # observers: the turn keeps its events
    turn.note("pix_mock.account.registered", {"account_id": "1"})
    turn.note("pix_mock.limit.requested", {"account_id": "1"})
    finish(turn, 201)
    assert [(status, named(events), in_flight) for status, events, in_flight in seen] == [
        (
            201,
            [("pix_mock.account.registered", {"account_id": "1"}), ("pix_mock.limit.requested", {"account_id": "1"})],
            0,
        )
    ]
    assert all(at > 0 for _, _, at in seen[0][1])  # each noted with its instant (time.time_ns())


def test_a_turn_without_observers_or_a_tracer_keeps_no_events(registry: Sessions) -> None:
    turn = begin(registry, plan())
    turn.note("pix_mock.account.registered", {"account_id": "1"})  # state code would not even call it
    assert turn.events is None


def test_the_fault_decision_is_made_at_begin_unless_it_needs_the_body(registry: Sessions) -> None:
    faults = registry.get("s").faults
    by_path = faults.add("op", 503, None, 0, 1, match=FaultMatch({"id": "7"}))
    by_body = faults.add("op", 500, None, 0, 1, match=FaultMatch(body={"a": 1}))
    waiting = begin(registry, plan(), {"id": "7"})
    assert waiting.fault is None and waiting.fault_waits_for_body  # an armed fault reads the body: not yet decided
    assert waiting.decide_fault({"id": "7"}, NO_BODY) is by_path and not waiting.fault_waits_for_body
    waiting.leave()
    still = begin(registry, plan(), {"id": "8"})
    assert still.decide_fault({"id": "8"}, {"a": 1, "b": 2}) is by_body
    still.leave()
    decided = begin(registry, plan(), {"id": "7"})  # no fault left matching on the body: decided at begin
    assert decided.fault is None and not decided.fault_waits_for_body
    assert registry.get("s").in_flight == 0 or decided.leave() is None


def test_an_admin_turn_never_takes_a_fault(registry: Sessions) -> None:
    registry.get("s").faults.add("op", 503, None, 0, None)
    turn = begin(registry, plan(public=False))
    assert turn.fault is None and not turn.fault_waits_for_body
    turn.leave()


def test_a_turn_that_cannot_begin_lets_its_session_go(registry: Sessions, monkeypatch: pytest.MonkeyPatch) -> None:
    session = registry.get("s")

    def failing(*_: Any) -> None:
        raise RuntimeError("a schedule's bug")

    monkeypatch.setattr(session, "apply_due", failing)
    monkeypatch.setattr(session.schedules, "timed_pending", 1)
    with pytest.raises(RuntimeError):
        begin(registry, plan())
    assert session.in_flight == 0 and session.store.turn is None


def test_claim_store_makes_the_turn_current_again(registry: Sessions) -> None:
    first, second = begin(registry, plan()), begin(registry, plan())
    assert first.store.turn is second  # the last begun
    assert first.claim_store() is first.store and first.store.turn is first
    second.leave()
    assert first.store.turn is first  # only a turn's own leave clears it
    first.leave()
    assert first.store.turn is None
