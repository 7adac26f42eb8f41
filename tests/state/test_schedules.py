"""mock_server.state.schedules: when a scheduled transition is due; Clock.advance; scenario files' schedules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from mock_server.domain.clock import Clock
from mock_server.domain.models import ScheduledTransition
from mock_server.scenarios.loader import ScenarioError, ScenarioLoader
from mock_server.spec.openapi import Specs
from mock_server.state.schedules import APPLIED, FAILED, PENDING, Schedules, plan_from_json, plan_problems, plan_to_json
from tests.default_scenario import PENDING_EVENT

KEY = PENDING_EVENT
OTHER = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"
T0 = datetime(2026, 11, 21, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("data", "fields"),
    [
        ({"action": "pay", "after_lookups": 3}, []),
        ({"action": "cancel", "at": "2026-11-21T10:00:00-03:00"}, []),
        ({"action": "pay", "amount": 10, "after_lookups": 1}, []),
        ({"action": "pay"}, ["after_lookups"]),
        ({"action": "pay", "after_lookups": None, "at": None}, ["after_lookups"]),
        ({"action": "pay", "after_lookups": 1, "at": "2026-11-21T10:00:00Z"}, ["at"]),
        ({"action": "cancel", "amount": 1, "after_lookups": 1}, ["amount"]),
        ({"action": "cancel", "at": "0000-01-01T00:00:00Z"}, ["at"]),
    ],
)
def test_plan_problems(data: dict[str, Any], fields: list[str]) -> None:
    assert [d.field for d in plan_problems(data)] == fields


def test_plans_read_and_write_as_a_scenario_file_does() -> None:
    plan = plan_from_json({"action": "pay", "amount": 10.5, "at": "2026-11-21T13:00:00Z"}, KEY.upper())
    assert plan == ScheduledTransition(KEY, "pay", Decimal("10.5"), None, T0)
    assert plan_to_json(plan) == {"key": KEY, "action": "pay", "amount": 10.5, "at": "2026-11-21T10:00:00.000-03:00"}
    assert plan_to_json(ScheduledTransition(KEY, "cancel", after_lookups=2)) == {
        "key": KEY,
        "action": "cancel",
        "after_lookups": 2,
    }


def test_a_lookup_schedule_is_due_on_the_lookup_that_reaches_its_count() -> None:
    schedules = Schedules()
    schedule = schedules.add(ScheduledTransition(KEY, "pay", after_lookups=3))
    assert schedules.looked_up(KEY) == []
    assert schedules.looked_up(OTHER) == []  # another event's lookups do not count
    assert schedules.looked_up(KEY) == []
    assert schedules.looked_up(KEY) == [schedule]
    assert schedule.lookups == 3
    assert schedule.remaining().after_lookups == 0
    schedules.settle(schedule, None)
    assert schedule.state == APPLIED
    assert schedules.looked_up(KEY) == []  # applied: counted no more
    assert schedule.lookups == 3


def test_remaining_lookups_are_what_an_export_writes() -> None:
    schedules = Schedules()
    schedule = schedules.add(ScheduledTransition(KEY, "pay", after_lookups=3))
    schedules.looked_up(KEY)
    assert schedule.remaining() == ScheduledTransition(KEY, "pay", None, 2, None)


def test_a_timed_schedule_is_due_once_the_clock_reaches_it() -> None:
    schedules = Schedules()
    later = schedules.add(ScheduledTransition(KEY, "pay", at=T0 + timedelta(hours=1)))
    sooner = schedules.add(ScheduledTransition(OTHER, "cancel", at=T0))
    assert schedules.due_by(T0 - timedelta(microseconds=1)) == []
    assert schedules.due_by(T0) == [sooner]
    assert schedules.due_by(T0 + timedelta(hours=2)) == [sooner, later]  # earliest first
    schedules.settle(sooner, "Event is canceled")
    assert (sooner.state, sooner.outcome) == (FAILED, "Event is canceled")
    assert schedules.due_by(T0 + timedelta(hours=2)) == [later]
    schedules.settle(later, None)
    assert schedules.due_by(T0 + timedelta(days=9)) == []
    assert [s.state for s in schedules.pending()] == []


def test_load_and_clear_start_over() -> None:
    schedules = Schedules()
    schedules.add(ScheduledTransition(KEY, "pay", after_lookups=1))
    schedules.load((ScheduledTransition(OTHER, "cancel", at=T0),))
    assert [(s.schedule_id, s.plan.key, s.state) for s in schedules.all()] == [("schedule-1", OTHER, PENDING)]
    schedules.clear()
    assert schedules.all() == [] and schedules.due_by(T0) == []


def test_clock_advance_moves_a_frozen_clock_only_and_within_the_span() -> None:
    clock = Clock()
    with pytest.raises(ValueError, match="not frozen"):
        clock.advance(1)
    clock.freeze(T0)
    assert clock.advance(90.5) == T0 + timedelta(seconds=90.5)
    assert clock.now() == T0 + timedelta(seconds=90.5)
    with pytest.raises(ValueError, match="past the instants"):
        clock.advance(1e15)
    with pytest.raises(ValueError, match="past the instants"):
        clock.advance(1e30)  # beyond timedelta itself
    assert clock.now() == T0 + timedelta(seconds=90.5)  # unchanged by a refusal
    clock.reset()
    assert not clock.frozen


# --- scenario files ---------------------------------------------------------------------------------

EVENTS = f"""\
events:
  - extraordinary_event_conciliation_key: {KEY}
    security_key: 3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90
    investment_key: 6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83
    amortization_type: early_amortization
    total_expected_amount: 1500.00
    reference_date: 2026-11-01
    due_date: 2026-11-30
    event_conciliation_list:
      - event_conciliation_key: 0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40
        installment_key: 4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11
  - extraordinary_event_conciliation_key: {OTHER}
    security_key: 3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90
    investment_key: 6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83
    amortization_type: early_amortization
    total_expected_amount: 10.00
    total_paid_amount: 10.00
    status: paid
    paid_at: 2026-11-02
    reference_date: 2026-11-01
    due_date: 2026-11-30
    event_conciliation_list:
      - event_conciliation_key: 1c8f5e3b-0d2a-4b4c-9f6e-7a3b2d0c8e51
        installment_key: 5d9b3f7a-2c4e-4a6b-8d8f-1e3c5a7b9d22
"""


@pytest.fixture(scope="module")
def loader(specs: Specs) -> ScenarioLoader:
    return ScenarioLoader.from_specs(specs)


def test_a_scenario_declares_schedules(loader: ScenarioLoader) -> None:
    text = (
        EVENTS
        + f"""\
schedules:
  - {{key: {KEY.upper()}, action: pay, amount: 100.25, after_lookups: 3}}
  - {{key: {KEY}, action: cancel, at: "2026-11-21T13:00:00Z"}}
"""
    )
    scenario = loader.load_text("s", text, "s.yaml")
    assert scenario.schedules == (
        ScheduledTransition(KEY, "pay", Decimal("100.25"), 3, None),
        ScheduledTransition(KEY, "cancel", None, None, T0),
    )


def test_every_schedule_problem_is_located(loader: ScenarioLoader) -> None:
    text = (
        EVENTS
        + f"""\
schedules:
  - {{key: 00000000-0000-4000-8000-000000000000, action: pay, after_lookups: 1}}
  - {{key: {OTHER}, action: cancel, after_lookups: 1}}
  - {{key: {KEY}, action: cancel, amount: 1, after_lookups: 1, at: "2026-11-21T13:00:00Z"}}
  - {{key: {KEY}, action: pay}}
  - {{key: {KEY}, action: refund, after_lookups: 0, colour: red}}
"""
    )
    with pytest.raises(ScenarioError) as raised:
        loader.load_text("s", text, "s.yaml")
    found = {(p.line, p.path) for p in raised.value.problems}
    assert found == {
        (26, "schedules[0].key"),
        (27, "schedules[1].key"),
        (28, "schedules[2].at"),
        (28, "schedules[2].amount"),
        (29, "schedules[3].after_lookups"),
        (30, "schedules[4].action"),
        (30, "schedules[4].after_lookups"),
        (30, "schedules[4].colour"),
    }
    messages = {p.path: p.message for p in raised.value.problems}
    assert messages["schedules[0].key"] == "no event 00000000-0000-4000-8000-000000000000 in this scenario"
    assert messages["schedules[1].key"] == f"event {OTHER} is paid: it cannot change"
