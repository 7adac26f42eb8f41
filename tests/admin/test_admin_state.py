"""GET /__mock/state (CONTRACT 4): the session's state as a scenario file, in JSON or in YAML that loads back."""

from __future__ import annotations

import yaml

from mock_server.scenarios.loader import ScenarioLoader
from tests.builders import event_creation
from tests.default_scenario import FULL_ACCOUNT, PARTIALLY_PAID_EVENT, PENDING_EVENT

NEW_ACCOUNT = "7777-000001"


def _series_of_public_calls(client) -> None:
    """Every kind of change the state export must carry."""
    registered = client.post(
        "/limits/account",
        json={
            "account_id": NEW_ACCOUNT,
            "registration_date": "2026-11-20T08:15:00-03:00",
            "limit": {
                "pix": {
                    "withdraw": [{"start_time": "06:00:00-03:00", "amount": 100000}],
                    "transaction": [
                        {"start_time": "06:00:00-03:00", "amount": 200000},
                        {"start_time": "22:00:00Z", "amount": 30000},
                    ],
                }
            },
        },
    )
    assert registered.status_code == 201
    change = {
        "pix": {
            "withdraw": [{"start_time": "07:00:00-03:00", "amount": 150000}],
            "change": [{"start_time": "06:00:00-03:00", "amount": 10}],
        }
    }
    assert client.post(f"/limits/account/{NEW_ACCOUNT}/limit_update_request", json=change).status_code == 201
    listed = client.post(
        f"/limits/account/{NEW_ACCOUNT}/recipient_list",
        json={"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 500000}]}}},
    )
    assert listed.status_code == 201
    ids = []
    for document in ("529.982.247-25", "11222333000181", "12.ABC.345/01DE-35"):
        added = client.post(
            f"/limits/account/{NEW_ACCOUNT}/recipient_list/recipient", json={"document_number": document}
        )
        assert added.status_code == 201
        ids.append(added.json()["recipient_id"])
    assert client.delete(f"/limits/account/{NEW_ACCOUNT}/recipient_list/recipient/{ids[1]}").status_code == 204
    list_change = {
        "pix": {
            "transaction": [
                {"start_time": "06:00:00-03:00", "amount": 400000},
                {"start_time": "20:00:00-03:00", "amount": 1},
            ]
        }
    }
    assert (
        client.post(f"/limits/account/{NEW_ACCOUNT}/recipient_list/limit_update_request", json=list_change).status_code
        == 201
    )
    # the seeded account changes too
    assert (
        client.delete(
            f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient/5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f"
        ).status_code
        == 204
    )
    # events: a partial payment with cents, a cancellation
    assert client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay", json={"amount": 0.1}).status_code == 200
    assert client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay", json={"amount": 0.2}).status_code == 200
    assert client.post(f"/__mock/events/{PENDING_EVENT}/cancel").status_code == 200


def test_state_has_the_top_level_keys_of_a_scenario_file(client):
    response = client.get("/__mock/state")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    state = response.json()
    assert set(state) == {"description", "events", "accounts"}
    assert state["description"].startswith("A bit of everything")
    assert len(state["events"]) == 4
    assert [a["account_id"] for a in state["accounts"]] == ["0001-123456", "0002-654321"]


def test_state_events_are_in_the_public_shape(client):
    state = client.get("/__mock/state").json()
    event = next(e for e in state["events"] if e["extraordinary_event_conciliation_key"] == PENDING_EVENT)
    public = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
    assert public.status_code == 200
    assert event == public.json()


def test_state_accounts_carry_limits_recipient_list_and_recipients(client):
    state = client.get("/__mock/state").json()
    account = state["accounts"][0]
    assert account["account_id"] == FULL_ACCOUNT
    assert account["registration_date"].startswith("2026-01-10T09:00:00")
    assert account["limit"]["pix"]["withdraw"] == [
        {"start_time": "06:00:00-03:00", "amount": 500000},
        {"start_time": "20:00:00-03:00", "amount": 300000},
    ]
    recipient_list = account["recipient_list"]
    assert recipient_list["limit"] == {
        "pix": {
            "transaction": [
                {"start_time": "06:00:00-03:00", "amount": 2000000},
                {"start_time": "20:00:00-03:00", "amount": 500000},
            ]
        }
    }
    assert [(r["recipient_id"], r["document_number"]) for r in recipient_list["recipients"]] == [
        ("5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f", "123.456.789-09"),
        ("6c1e8f5b-2a3c-4d4e-8f9a-8b7c6d5e4f30", "12.ABC.345/01DE-35"),
    ]
    assert "recipient_list" not in state["accounts"][1]
    assert "limit_update_requests" not in account  # no proposal made yet


def test_state_reflects_public_calls_and_the_proposals_made(client):
    client.put("/__mock/clock", json={"now": "2026-11-21T13:00:00Z"})
    _series_of_public_calls(client)
    state = client.get("/__mock/state").json()

    account = next(a for a in state["accounts"] if a["account_id"] == NEW_ACCOUNT)
    assert account["event_date"] == "2026-11-21T10:00:00.000-03:00"
    assert account["limit"]["pix"] == {
        "withdraw": [{"start_time": "07:00:00-03:00", "amount": 150000}],
        "transaction": [
            {"start_time": "06:00:00-03:00", "amount": 200000},
            {"start_time": "22:00:00Z", "amount": 30000},
        ],
        "change": [{"start_time": "06:00:00-03:00", "amount": 10}],
    }
    assert account["recipient_list"]["limit"]["pix"]["transaction"][1] == {"start_time": "20:00:00-03:00", "amount": 1}
    assert [r["document_number"] for r in account["recipient_list"]["recipients"]] == [
        "529.982.247-25",
        "12.ABC.345/01DE-35",
    ]
    proposals = account["limit_update_requests"]
    assert [p["target"] for p in proposals] == ["account", "recipient_list"]
    assert proposals[0]["pix"]["withdraw"] == [{"start_time": "07:00:00-03:00", "amount": 150000}]
    assert proposals[0]["limit_update_request_status"] == "applied"
    assert proposals[0]["client_notification_status"] == "awaiting_notification_period"
    assert proposals[1]["recipient_status"] == "created"
    assert all(p["event_date"] == "2026-11-21T10:00:00.000-03:00" for p in proposals)

    seeded = next(a for a in state["accounts"] if a["account_id"] == FULL_ACCOUNT)
    assert [r["recipient_id"] for r in seeded["recipient_list"]["recipients"]] == [
        "6c1e8f5b-2a3c-4d4e-8f9a-8b7c6d5e4f30"
    ]
    events = {e["extraordinary_event_conciliation_key"]: e for e in state["events"]}
    assert events[PARTIALLY_PAID_EVENT]["total_paid_amount"] == 750.55
    assert events[PENDING_EVENT]["status"] == "canceled"


def test_state_yaml_is_a_scenario_file(client, specs):
    _series_of_public_calls(client)
    response = client.get("/__mock/state", params={"format": "yaml"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/yaml")
    data = yaml.safe_load(response.text)
    assert set(data) == {"description", "events", "accounts"}
    # the shipped loader accepts it as is
    scenario = ScenarioLoader.from_specs(specs).load_text("x", response.text, "x.yaml")
    assert len(scenario.events) == 4
    assert set(scenario.accounts) == {"0001-123456", "0002-654321", NEW_ACCOUNT}


def test_state_json_explicitly(client):
    response = client.get("/__mock/state", params={"format": "json"})
    assert response.status_code == 200
    assert response.json() == client.get("/__mock/state").json()


def test_state_yaml_loads_back_to_the_same_state(client, make_client, tmp_path):
    """The round trip: export after a series of calls, start a server on the export, compare."""
    _series_of_public_calls(client)
    created = client.post(
        "/__mock/events",
        json=event_creation(
            instalments=2, amortization_type="present_amount", total_expected_amount=1000.1, total_discount_amount=0.3
        ),
    )
    assert created.status_code == 201
    assert (
        client.post(
            f"/__mock/events/{created.json()['extraordinary_event_conciliation_key']}/pay",
            json={"paid_at": "2026-11-02"},
        ).status_code
        == 200
    )
    original = client.get("/__mock/state")
    assert original.status_code == 200

    exported = client.get("/__mock/state", params={"format": "yaml"})
    assert exported.status_code == 200
    (tmp_path / "x.yaml").write_text(exported.text, encoding="utf-8")
    reloaded = make_client(fixtures=tmp_path, scenario="x")
    again = reloaded.get("/__mock/state")
    assert again.status_code == 200
    assert again.json() == original.json()
    # and the reloaded server behaves on it: the removed recipient is gone, the new account is there
    account = reloaded.get(f"/__mock/accounts/{NEW_ACCOUNT}")
    assert account.status_code == 200
    assert account.json() == next(a for a in original.json()["accounts"] if a["account_id"] == NEW_ACCOUNT)


def test_state_yaml_round_trip_keeps_outcomes(client, make_client, tmp_path):
    assert client.post("/__mock/reset", json={"scenario": "recipients"}).status_code == 200
    added = client.post(
        "/limits/account/0100-000003/recipient_list/recipient", json={"document_number": "111.444.777-35"}
    )
    assert added.status_code == 201
    assert added.json()["recipient_status"] == "pending_analysis"
    original = client.get("/__mock/state").json()
    assert original["accounts"][2]["outcomes"]["recipient"] == {
        "analysis_status": "manual_analysis",
        "recipient_status": "pending_analysis",
    }

    (tmp_path / "x.yaml").write_text(client.get("/__mock/state", params={"format": "yaml"}).text, encoding="utf-8")
    reloaded = make_client(fixtures=tmp_path, scenario="x")
    assert reloaded.get("/__mock/state").json() == original
    again = reloaded.post(
        "/limits/account/0100-000003/recipient_list/recipient", json={"document_number": "529.982.247-25"}
    )
    assert again.status_code == 201
    assert again.json()["recipient_status"] == "pending_analysis"


def test_state_of_an_empty_scenario(client):
    assert client.post("/__mock/reset", json={"scenario": "empty"}).status_code == 200
    response = client.get("/__mock/state")
    assert response.status_code == 200
    assert response.json()["events"] == []
    assert response.json()["accounts"] == []


def test_state_is_per_session(client):
    _series_of_public_calls(client)
    other = client.get("/__mock/state", headers={"X-Mock-Session": "other"})
    assert other.status_code == 200
    assert NEW_ACCOUNT not in [a["account_id"] for a in other.json()["accounts"]]


def test_state_rejects_an_unknown_format(client):
    response = client.get("/__mock/state", params={"format": "xml"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_request"
    assert [d["field"] for d in body["details"]] == ["format"]
