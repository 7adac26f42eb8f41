"""PUT /__mock/state and named snapshots, through HTTP (issue 13, 3)."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.state.snapshots import MAX_SNAPSHOTS
from tests.default_scenario import PENDING_EVENT
from tests.helpers import assert_error

PENDING_KEY = PENDING_EVENT
UNKNOWN_KEY = "00000000-0000-4000-8000-000000000000"
EVENT = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"


def state(client) -> dict[str, Any]:
    response = client.get("/__mock/state")
    assert response.status_code == 200
    return response.json()


def status_of(client) -> str:
    return client.get(EVENT).json()["status"]


def test_a_snapshot_restores_events_accounts_and_schedules(client):
    before = state(client)
    taken = client.post("/__mock/snapshots/clean")
    assert taken.status_code == 201
    assert taken.json()["name"] == "clean" and taken.json()["events"] == 4 and taken.json()["accounts"] == 2
    assert client.post(f"/__mock/events/{PENDING_KEY}/cancel").status_code == 200
    body = {"document_number": "529.982.247-25"}
    assert client.post("/limits/account/0001-123456/recipient_list/recipient", json=body).status_code == 201
    assert client.post(f"/__mock/events/{PENDING_KEY}/schedule", json={"action": "cancel", "after_lookups": 1})
    assert state(client) != before
    restored = client.post("/__mock/snapshots/clean/restore")
    assert restored.status_code == 200
    assert state(client) == before
    assert status_of(client) == "pending_conciliation"
    # Restoring twice gives the same state: the snapshot is not consumed or changed by what follows.
    assert client.post(f"/__mock/events/{PENDING_KEY}/cancel").status_code == 200
    assert client.post("/__mock/snapshots/clean/restore").status_code == 200
    assert state(client) == before


def test_a_snapshot_keeps_pending_schedules(client):
    assert client.post(f"/__mock/events/{PENDING_KEY}/schedule", json={"action": "cancel", "after_lookups": 2})
    assert client.post("/__mock/snapshots/armed").json()["schedules"] == 1
    assert status_of(client) == "pending_conciliation"
    assert status_of(client) == "canceled"
    assert client.post("/__mock/snapshots/armed/restore").status_code == 200
    assert status_of(client) == "pending_conciliation"
    assert status_of(client) == "canceled"


def test_list_get_and_delete(client):
    assert client.post("/__mock/snapshots/a").status_code == 201
    assert client.post("/__mock/snapshots/b").status_code == 201
    assert [s["name"] for s in client.get("/__mock/snapshots").json()["snapshots"]] == ["a", "b"]
    assert client.get("/__mock/snapshots/a").json() == state(client)
    assert client.delete("/__mock/snapshots/a").status_code == 204
    assert_error(client.get("/__mock/snapshots/a"), 404, "snapshot_not_found")
    assert_error(client.post("/__mock/snapshots/a/restore"), 404, "snapshot_not_found")
    assert_error(client.delete("/__mock/snapshots/a"), 404, "snapshot_not_found")
    assert_error(client.post("/__mock/snapshots/never-taken/restore"), 404, "snapshot_not_found")


def test_snapshots_are_per_session_bounded_and_survive_a_reset(client):
    assert client.post("/__mock/snapshots/mine").status_code == 201
    other = {"X-Mock-Session": "snap-other"}
    assert_error(client.post("/__mock/snapshots/mine/restore", headers=other), 404, "snapshot_not_found")
    assert client.post("/__mock/reset").status_code == 200
    assert client.post("/__mock/snapshots/mine/restore").status_code == 200
    for i in range(MAX_SNAPSHOTS - 1):
        assert client.post(f"/__mock/snapshots/s{i}").status_code == 201
    assert_error(client.post("/__mock/snapshots/one-too-many"), 409, "snapshot_limit_reached")
    assert client.post("/__mock/snapshots/mine").status_code == 201  # replacing one is fine


def test_put_state_loads_an_export(client):
    exported = state(client)
    exported["events"] = [e for e in exported["events"] if e["extraordinary_event_conciliation_key"] == PENDING_KEY]
    exported["accounts"] = []
    loaded = client.put("/__mock/state", json=exported)
    assert loaded.status_code == 200
    assert loaded.json() == {"events": 1, "accounts": 0, "schedules": 0}
    assert state(client) == exported
    assert client.get("/event_conciliation/extraordinary_event/2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44").status_code == 404
    assert client.post("/__mock/reset").status_code == 200  # back to the session's scenario
    assert len(state(client)["events"]) == 4


def test_put_state_loads_schedules(client):
    exported = state(client)
    exported["schedules"] = [{"key": PENDING_KEY, "action": "cancel", "after_lookups": 1}]
    assert client.put("/__mock/state", json=exported).json()["schedules"] == 1
    assert status_of(client) == "canceled"


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        (lambda s: s["events"][0].update(status="paid"), None),
        (lambda s: s["events"].append(dict(s["events"][0])), ["events[4].extraordinary_event_conciliation_key"]),
        (lambda s: s.update(schedules=[{"key": UNKNOWN_KEY, "action": "pay", "after_lookups": 1}]),
         ["schedules[0].key"]),
        (lambda s: s.update(colour="red"), ["colour"]),
        (lambda s: s["events"][0].pop("due_date"), ["events[0].due_date"]),
    ],
)  # fmt: skip
def test_a_bad_document_is_400_with_every_problem_and_changes_nothing(client, change, fields):
    before = state(client)
    document = state(client)
    change(document)
    body = assert_error(client.put("/__mock/state", json=document), 400, "invalid_request")
    if fields is not None:
        assert sorted({d["field"] for d in body["details"]} & set(fields)) == sorted(fields)
    assert state(client) == before


def test_put_state_needs_a_json_object(client):
    assert_error(client.put("/__mock/state"), 400, "invalid_request")
    assert_error(
        client.put("/__mock/state", content=b"[]", headers={"Content-Type": "application/json"}), 400, "invalid_request"
    )
    assert_error(  # YAML is taken (tests/admin/test_state_restore.py); other media types are not
        client.put("/__mock/state", content=b"a: 1", headers={"Content-Type": "text/plain"}),
        415,
        "unsupported_media_type",
    )


def test_a_snapshot_copies_the_sessions_state_not_the_request_taking_it(client):
    """A snapshot is taken inside a turn, which the store points to while it runs: copying that turn copied the whole
    session graph behind it (every snapshot larger than the last, a test of 16 snapshots ran for minutes)."""
    assert client.post("/__mock/snapshots/first").status_code == 201
    assert client.post("/__mock/snapshots/second").status_code == 201
    snapshots = client.app.state.sessions.get("default").snapshots
    for name in ("first", "second"):
        saved = snapshots.get(name).store
        assert "turn" not in saved.mutable, name
