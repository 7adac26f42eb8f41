"""Admin lifecycle (CONTRACT 4): health, reset (also to another scenario) and the scenario listing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.builders import event_creation, recipient_path
from tests.default_scenario import CPF_RECIPIENT, FULL_ACCOUNT, PENDING_EVENT, PENDING_EVENT_PATH

SHIPPED = {"default", "payments", "recipients", "empty"}


def _register(client, account_id: str = "9999-000001", **kwargs):
    body = {
        "account_id": account_id,
        "registration_date": "2026-11-21T10:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1000}]}},
    }
    return client.post("/limits/account", json=body, **kwargs)


def _change_everything(client) -> None:
    """A change of each kind the session keeps: events, accounts, recipients, proposals."""
    assert client.post(f"/__mock/events/{PENDING_EVENT}/pay").status_code == 200
    assert _register(client).status_code == 201
    pix = {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}
    assert client.post(f"/limits/account/{FULL_ACCOUNT}/limit_update_request", json={"pix": pix}).status_code == 201
    added = client.post(
        f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient", json={"document_number": "529.982.247-25"}
    )
    assert added.status_code == 201
    removed = client.delete(recipient_path(FULL_ACCOUNT, CPF_RECIPIENT))
    assert removed.status_code == 204


# --- health ---------------------------------------------------------------------------------------


def test_health_answers_ok_and_the_scenario(client):
    response = client.get("/__mock/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}


def test_health_names_the_scenario_the_server_started_with(make_client):
    client = make_client(scenario="payments")
    response = client.get("/__mock/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "payments"}


def test_health_stays_on_under_no_admin(make_client):
    client = make_client(admin=False)
    response = client.get("/__mock/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}


def test_health_needs_no_token_when_one_is_set(make_client):
    client = make_client(admin_token="T")
    response = client.get("/__mock/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}
    # ... and a wrong token does not make it fail either
    response = client.get("/__mock/health", headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 200


# --- reset ----------------------------------------------------------------------------------------


def test_reset_brings_the_state_back_to_the_seed(client):
    seed = client.get("/__mock/state").json()
    _change_everything(client)
    changed = client.get("/__mock/state").json()
    assert changed != seed

    response = client.post("/__mock/reset")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}
    assert client.get("/__mock/state").json() == seed
    event = client.get(PENDING_EVENT_PATH)
    assert event.status_code == 200
    assert event.json()["status"] == "pending_conciliation"
    assert _register(client).status_code == 201  # the account registered before the reset is gone


def test_reset_accepts_an_empty_object(client):
    assert _register(client).status_code == 201
    response = client.post("/__mock/reset", json={})
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}
    assert client.get("/__mock/accounts/9999-000001").status_code == 404


def test_reset_empties_the_journal(client):
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert len(client.get("/__mock/requests").json()["requests"]) == 1
    assert client.post("/__mock/reset").status_code == 200
    response = client.get("/__mock/requests")
    assert response.status_code == 200
    assert response.json() == {"requests": []}


def test_reset_clears_the_faults(client):
    fault = {"operation_id": "getExtraordinaryEvent", "status": 503, "times": None}
    assert client.post("/__mock/faults", json=fault).status_code == 201
    assert client.get(PENDING_EVENT_PATH).status_code == 503
    assert client.post("/__mock/reset").status_code == 200
    assert client.get("/__mock/faults").json() == {"faults": []}
    response = client.get(PENDING_EVENT_PATH)
    assert response.status_code == 200
    assert response.json()["extraordinary_event_conciliation_key"] == PENDING_EVENT


def test_reset_returns_the_clock_to_real_time(client):
    frozen = client.put("/__mock/clock", json={"now": "2020-01-01T00:00:00Z"})
    assert frozen.status_code == 200
    assert frozen.json()["frozen"] is True
    assert client.post("/__mock/reset").status_code == 200
    clock = client.get("/__mock/clock")
    assert clock.status_code == 200
    assert clock.json()["frozen"] is False
    assert datetime.fromisoformat(clock.json()["now"]).year >= 2025


def test_reset_returns_the_clock_to_the_start_up_clock(make_client):
    client = make_client(clock=datetime(2026, 11, 21, 13, 0, tzinfo=UTC))
    start = client.get("/__mock/clock")
    assert start.status_code == 200
    assert start.json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
    assert client.put("/__mock/clock", json={"now": None}).json()["frozen"] is False
    assert client.post("/__mock/reset").status_code == 200
    clock = client.get("/__mock/clock")
    assert clock.status_code == 200
    assert clock.json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
    registered = _register(client)
    assert registered.status_code == 201
    assert registered.json()["event_date"] == "2026-11-21T10:00:00.000-03:00"


def _ids(client) -> list[str]:
    """Ids generated by a fixed series of calls: a proposal, two recipients and an event."""
    pix = {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}
    proposal = client.post(f"/limits/account/{FULL_ACCOUNT}/limit_update_request", json={"pix": pix})
    assert proposal.status_code == 201
    ids = [proposal.json()["limit_update_request_id"]]
    for document in ("529.982.247-25", "111.444.777-35"):
        added = client.post(recipient_path(FULL_ACCOUNT), json={"document_number": document})
        assert added.status_code == 201
        ids.append(added.json()["recipient_id"])
    event = event_creation(total_expected_amount=10)
    created = client.post("/__mock/events", json=event)
    assert created.status_code == 201
    ids.append(created.json()["extraordinary_event_conciliation_key"])
    return ids


def test_reset_restarts_the_id_sequence_with_a_seed(make_client):
    client = make_client(seed=7)
    first = _ids(client)
    assert len(set(first)) == len(first)
    assert client.post("/__mock/reset").status_code == 200
    assert _ids(client) == first


def test_without_a_seed_ids_differ_after_a_reset(client):
    first = _ids(client)
    assert client.post("/__mock/reset").status_code == 200
    again = _ids(client)
    assert set(first).isdisjoint(again)


def test_reset_to_another_scenario_switches_the_session(client):
    response = client.post("/__mock/reset", json={"scenario": "empty"})
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "empty"}

    state = client.get("/__mock/state")
    assert state.status_code == 200
    assert state.json()["events"] == []
    assert state.json()["accounts"] == []
    missing = client.get(PENDING_EVENT_PATH)
    assert missing.status_code == 404
    assert missing.json()["code"] == "EVC100011"
    assert client.get("/__mock/health").json() == {"status": "ok", "scenario": "empty"}
    assert client.get("/__mock/scenarios").json()["active"] == "empty"


def test_reset_without_body_keeps_the_session_on_its_scenario(client):
    assert client.post("/__mock/reset", json={"scenario": "payments"}).status_code == 200
    assert _register(client).status_code == 201
    response = client.post("/__mock/reset")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "payments"}
    assert client.get("/__mock/accounts/9999-000001").status_code == 404
    assert client.get("/__mock/scenarios").json()["active"] == "payments"


def test_reset_to_another_scenario_leaves_other_sessions_alone(client):
    other = {"X-Mock-Session": "other"}
    assert client.post("/__mock/reset", json={"scenario": "empty"}, headers=other).status_code == 200
    assert client.get(PENDING_EVENT_PATH, headers=other).status_code == 404
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert client.get("/__mock/scenarios").json()["active"] == "default"
    assert client.get("/__mock/scenarios", headers=other).json()["active"] == "empty"


def test_reset_back_to_default(client):
    assert client.post("/__mock/reset", json={"scenario": "empty"}).status_code == 200
    response = client.post("/__mock/reset", json={"scenario": "default"})
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "scenario": "default"}
    assert client.get(PENDING_EVENT_PATH).status_code == 200


def test_reset_to_an_unknown_scenario_is_404_and_changes_nothing(client):
    assert _register(client).status_code == 201
    response = client.post("/__mock/reset", json={"scenario": "nope"})
    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "scenario_not_found"
    # the scenarios there are, so the next try can be right
    assert body["message"] == "No scenario named 'nope'; the scenarios are default, empty, payments, recipients."
    # the session was not reset: still on its scenario, with its changes and its journal
    assert client.get("/__mock/scenarios").json()["active"] == "default"
    assert client.get("/__mock/accounts/9999-000001").status_code == 200
    assert len(client.get("/__mock/requests").json()["requests"]) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scenarioo": "default"}, "scenarioo"),
        ({"scenario": 5}, "scenario"),
        ({"scenario": None}, "scenario"),
        ({"scenario": ["default"]}, "scenario"),
        ({"scenario": ""}, "scenario"),
        ([], ""),
        ("default", ""),
    ],
)
def test_reset_rejects_a_bad_body(client, body, field):
    assert _register(client).status_code == 201
    response = client.post("/__mock/reset", json=body)
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid_request"
    assert field in [d["field"] for d in error["details"]]
    assert client.get("/__mock/accounts/9999-000001").status_code == 200  # nothing was reset


def test_reset_rejects_malformed_json(client):
    response = client.post("/__mock/reset", content=b"{", headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["code"] == "malformed_json"


def test_reset_rejects_a_body_that_is_not_json(client):
    response = client.post("/__mock/reset", content=b"scenario=empty", headers={"Content-Type": "text/plain"})
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


# --- scenarios ------------------------------------------------------------------------------------


def test_scenarios_lists_the_shipped_scenarios_with_one_line_descriptions(client):
    response = client.get("/__mock/scenarios")
    assert response.status_code == 200
    body = response.json()
    assert body["active"] == "default"
    names = [s["name"] for s in body["scenarios"]]
    assert set(names) >= SHIPPED
    assert len(names) == len(set(names))
    for scenario in body["scenarios"]:
        assert set(scenario) == {"name", "description"}
        assert scenario["description"].strip(), scenario["name"]
        assert "\n" not in scenario["description"], scenario["name"]


def test_scenarios_active_is_per_session(client):
    assert (
        client.post("/__mock/reset", json={"scenario": "recipients"}, headers={"X-Mock-Session": "a"}).status_code
        == 200
    )
    assert (
        client.post("/__mock/reset", json={"scenario": "payments"}, headers={"X-Mock-Session": "b"}).status_code == 200
    )
    assert client.get("/__mock/scenarios", headers={"X-Mock-Session": "a"}).json()["active"] == "recipients"
    assert client.get("/__mock/scenarios", headers={"X-Mock-Session": "b"}).json()["active"] == "payments"
    assert client.get("/__mock/scenarios", headers={"X-Mock-Session": "c"}).json()["active"] == "default"
    assert client.get("/__mock/scenarios").json()["active"] == "default"


def test_a_new_session_starts_from_the_server_scenario(make_client):
    client = make_client(scenario="empty")
    response = client.get("/__mock/scenarios", headers={"X-Mock-Session": "fresh"})
    assert response.status_code == 200
    assert response.json()["active"] == "empty"
    assert client.get(PENDING_EVENT_PATH, headers={"X-Mock-Session": "fresh"}).status_code == 404
