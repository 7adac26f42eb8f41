"""Scheduled transitions and the clock's advance, through HTTP (issue 13, 4)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from mock_server.scenarios.loader import ScenarioLoader
from mock_server.spec.resources import data_path
from tests.default_scenario import PENDING_EVENT
from tests.helpers import assert_error

PENDING_KEY = PENDING_EVENT  # 1500.00 expected, nothing paid
PARTIAL_KEY = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"  # 2000.00 expected, 1000.00 paid
UNKNOWN_KEY = "00000000-0000-4000-8000-000000000000"


def lookup(client, key: str = PENDING_KEY, **kwargs: Any) -> dict[str, Any]:
    response = client.get(f"/event_conciliation/extraordinary_event/{key}", **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def schedule(client, key: str = PENDING_KEY, **body: Any):
    return client.post(f"/__mock/events/{key}/schedule", json=body)


def freeze(client, now: str = "2026-11-21T10:00:00-03:00") -> None:
    assert client.put("/__mock/clock", json={"now": now}).status_code == 200


def schedules(client) -> list[dict[str, Any]]:
    response = client.get("/__mock/schedules")
    assert response.status_code == 200
    return response.json()["schedules"]


def test_lookups_never_change_state_by_themselves(client):
    first = lookup(client)
    for _ in range(5):
        assert lookup(client) == first


def test_the_nth_lookup_answers_with_the_payment_applied(client):
    freeze(client)
    response = schedule(client, action="pay", after_lookups=3)
    assert response.status_code == 201
    assert response.json() == {
        "schedule_id": "schedule-1",
        "key": PENDING_KEY,
        "action": "pay",
        "amount": None,
        "after_lookups": 3,
        "at": None,
        "lookups": 0,
        "state": "pending",
        "outcome": None,
    }
    assert [lookup(client)["status"] for _ in range(4)] == [
        "pending_conciliation",
        "pending_conciliation",
        "paid",
        "paid",
    ]
    paid = lookup(client)
    assert (paid["total_paid_amount"], paid["paid_at"]) == (1500, "2026-11-21")
    assert {i["event_conciliation_status"] for i in paid["event_conciliation_list"]} == {"paid"}
    (made,) = schedules(client)
    assert (made["state"], made["lookups"]) == ("applied", 3)


def test_a_partial_payment_and_a_cancel_on_lookups(client):
    assert schedule(client, PARTIAL_KEY, action="pay", amount=250.5, after_lookups=1).status_code == 201
    assert lookup(client, PARTIAL_KEY)["total_paid_amount"] == 1000.75  # 750.25 before
    assert schedule(client, PARTIAL_KEY, action="cancel", after_lookups=2).status_code == 201
    assert lookup(client, PARTIAL_KEY)["status"] == "pending_conciliation"
    assert lookup(client, PARTIAL_KEY)["status"] == "canceled"


def test_lookups_of_other_events_other_sessions_and_faulted_lookups_do_not_count(client):
    assert schedule(client, action="cancel", after_lookups=2).status_code == 201
    lookup(client, PARTIAL_KEY)
    lookup(client, headers={"X-Mock-Session": "sched-other"})
    fault = {"operation_id": "getExtraordinaryEvent", "status": 503}
    assert client.post("/__mock/faults", json=fault).status_code == 201
    assert client.get(f"/event_conciliation/extraordinary_event/{PENDING_KEY}").status_code == 503
    assert lookup(client)["status"] == "pending_conciliation"  # the first lookup that counts
    assert lookup(client)["status"] == "canceled"
    assert lookup(client, headers={"X-Mock-Session": "sched-other"})["status"] == "pending_conciliation"


def test_the_lookup_key_is_case_insensitive(client):
    assert schedule(client, PENDING_KEY.upper(), action="cancel", after_lookups=1).status_code == 201
    assert lookup(client, PENDING_KEY.upper())["status"] == "canceled"


def test_a_timed_schedule_applies_when_a_frozen_clock_is_advanced_past_it(client):
    freeze(client)
    made = schedule(client, action="pay", at="2026-11-22T09:00:00-03:00")
    assert made.status_code == 201 and made.json()["at"] == "2026-11-22T09:00:00.000-03:00"
    advanced = client.post("/__mock/clock/advance", json={"seconds": 3600})
    assert advanced.json() == {"now": "2026-11-21T11:00:00.000-03:00", "frozen": True}
    assert lookup(client)["status"] == "pending_conciliation"
    assert client.post("/__mock/clock/advance", json={"seconds": 22 * 3600}).status_code == 200
    assert client.get("/__mock/schedules").json()["schedules"][0]["state"] == "applied"
    paid = lookup(client)
    assert (paid["status"], paid["paid_at"]) == ("paid", "2026-11-22")  # the date it was due


def test_a_timed_schedule_applies_when_the_clock_is_set_past_it(client):
    freeze(client)
    assert schedule(client, action="cancel", at="2026-11-21T12:00:00-03:00").status_code == 201
    freeze(client, "2026-11-21T12:00:00-03:00")
    state = client.get("/__mock/state").json()  # any call of the session applies it first
    assert next(e for e in state["events"] if e["extraordinary_event_conciliation_key"] == PENDING_KEY)["status"] == (
        "canceled"
    )


def test_a_timed_schedule_already_reached_applies_at_once(client):
    freeze(client)
    made = schedule(client, action="cancel", at="2026-11-21T09:00:00-03:00")
    assert made.status_code == 201 and made.json()["state"] == "applied"
    assert lookup(client)["status"] == "canceled"


def test_a_timed_schedule_applies_on_real_time(client):
    at = datetime.now(UTC) + timedelta(milliseconds=200)
    assert schedule(client, action="cancel", at=at.isoformat()).status_code == 201
    before = lookup(client)["status"]
    # A loaded machine (CI, xdist) may take longer than the window to get here: only a lookup that had
    # returned before the time came must still see the event pending.
    if datetime.now(UTC) < at:
        assert before == "pending_conciliation"
    time.sleep(max(0.0, (at - datetime.now(UTC)).total_seconds()) + 0.05)
    assert lookup(client)["status"] == "canceled"


def test_a_schedule_the_event_outgrew_fails_and_changes_nothing(client):
    assert schedule(client, action="pay", after_lookups=2).status_code == 201
    assert client.post(f"/__mock/events/{PENDING_KEY}/cancel").status_code == 200
    lookup(client)
    assert lookup(client)["status"] == "canceled"
    (failed,) = schedules(client)
    assert failed["state"] == "failed"
    assert failed["outcome"] == f"Event {PENDING_KEY} is canceled: it cannot be paid."


def test_reset_drops_schedules_and_delete_clears_them(client):
    assert schedule(client, action="cancel", after_lookups=1).status_code == 201
    assert client.post("/__mock/reset").status_code == 200
    assert schedules(client) == []
    assert lookup(client)["status"] == "pending_conciliation"
    assert schedule(client, action="cancel", after_lookups=1).status_code == 201
    assert client.delete("/__mock/schedules").status_code == 204
    assert schedules(client) == []
    assert lookup(client)["status"] == "pending_conciliation"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["action"]),
        ({"action": "refund", "after_lookups": 1}, ["action"]),
        ({"action": "pay"}, ["after_lookups"]),
        ({"action": "pay", "after_lookups": 1, "at": "2026-11-21T10:00:00Z"}, ["at"]),
        ({"action": "pay", "after_lookups": 0}, ["after_lookups"]),
        ({"action": "pay", "after_lookups": 1.5}, ["after_lookups"]),
        ({"action": "pay", "at": "tomorrow"}, ["at"]),
        ({"action": "pay", "at": "0000-12-31T00:00:00Z"}, ["at"]),
        ({"action": "cancel", "amount": 10, "after_lookups": 1}, ["amount"]),
        ({"action": "pay", "amount": 0, "after_lookups": 1}, ["amount"]),
        ({"action": "pay", "amount": 1500.01, "after_lookups": 1}, ["amount"]),  # over the open balance
        ({"action": "pay", "amount": 1.001, "after_lookups": 1}, ["amount"]),
        ({"action": "pay", "after_lookups": 1, "event": PENDING_KEY}, ["event"]),
    ],
)
def test_bad_schedules_are_400_and_change_nothing(client, body, fields):
    assert_error(schedule(client, **body), 400, "invalid_request", fields)
    assert schedules(client) == []


def test_an_unknown_or_terminal_event_cannot_be_scheduled(client):
    assert_error(schedule(client, UNKNOWN_KEY, action="pay", after_lookups=1), 404, "event_not_found")
    assert client.post(f"/__mock/events/{PENDING_KEY}/cancel").status_code == 200
    assert_error(schedule(client, action="pay", after_lookups=1), 409, "invalid_transition")
    assert_error(schedule(client, action="cancel", after_lookups=1), 409, "invalid_transition")
    assert_error(
        schedule(client, "not-a-uuid", action="pay", after_lookups=1),
        400,
        "invalid_request",
        ["extraordinary_event_conciliation_key"],
    )
    assert schedules(client) == []


def test_advance_needs_a_frozen_clock_and_a_sane_amount(client):
    assert_error(client.post("/__mock/clock/advance", json={"seconds": 1}), 409, "clock_not_frozen")
    freeze(client)
    for body, field in [({"seconds": -1}, "seconds"), ({}, "seconds"), ({"seconds": "1"}, "seconds")]:
        assert_error(client.post("/__mock/clock/advance", json=body), 400, "invalid_request", [field])
    freeze(client, "9999-12-30T00:00:00Z")
    assert_error(client.post("/__mock/clock/advance", json={"seconds": 2 * 86400}), 400, "invalid_request", ["seconds"])
    assert client.get("/__mock/clock").json()["now"] == "9999-12-29T21:00:00.000-03:00"  # unchanged


# --- scenario files and the state export ---------------------------------------------------------------


def test_a_scenario_files_schedules_start_with_every_session(make_client, tmp_path: Path):
    default = data_path("fixtures/default.yaml").read_text(encoding="utf-8")
    schedules = f"schedules:\n  - {{key: {PENDING_KEY}, action: pay, after_lookups: 2}}\n"
    (tmp_path / "default.yaml").write_text(default + schedules, encoding="utf-8")
    with make_client(fixtures=tmp_path) as client:
        for session in ("a", "b"):
            headers = {"X-Mock-Session": session}
            assert lookup(client, headers=headers)["status"] == "pending_conciliation"
            assert lookup(client, headers=headers)["status"] == "paid"
        assert client.post("/__mock/reset", headers={"X-Mock-Session": "a"}).status_code == 200
        assert lookup(client, headers={"X-Mock-Session": "a"})["status"] == "pending_conciliation"


def test_the_export_writes_pending_schedules_that_load_back(client, specs):
    assert schedule(client, action="pay", after_lookups=3).status_code == 201
    assert schedule(client, PARTIAL_KEY, action="cancel", at="2030-01-01T00:00:00Z").status_code == 201
    lookup(client)
    exported = client.get("/__mock/state", params={"format": "yaml"}).text
    assert yaml.safe_load(exported)["schedules"] == [
        {"key": PENDING_KEY, "action": "pay", "after_lookups": 2},
        {"key": PARTIAL_KEY, "action": "cancel", "at": "2029-12-31T21:00:00.000-03:00"},
    ]
    scenario = ScenarioLoader.from_specs(specs).load_text("again", exported, "again.yaml")
    assert [s.after_lookups for s in scenario.schedules] == [2, None]


def test_the_export_has_no_schedules_key_without_pending_ones(client):
    assert "schedules" not in client.get("/__mock/state").json()
