"""Admin journal, faults and clock (CONTRACT 4)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.http import fault_replies
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.builders import REGISTER, recipient_path, registration
from tests.default_scenario import CPF_RECIPIENT, FULL_ACCOUNT, PENDING_EVENT, PENDING_EVENT_PATH
from tests.held_pauses import SAFETY, HeldPauses
from tests.helpers import Response, assert_error

WINDOW = [{"start_time": "06:00:00-03:00", "amount": 1000}]
NEW_ACCOUNT = "5555-000001"  # registered by the tests, in no scenario


def journal(client, **kwargs) -> list[dict[str, Any]]:
    response = client.get("/__mock/requests", **kwargs)
    assert response.status_code == 200
    return response.json()["requests"]


def add_fault(client, **body: Any) -> dict[str, Any]:
    response = client.post("/__mock/faults", json=body)
    assert response.status_code == 201, response.text
    return response.json()


# --- journal --------------------------------------------------------------------------------------


def test_journal_starts_empty(client):
    response = client.get("/__mock/requests")
    assert response.status_code == 200
    assert response.json() == {"requests": []}


def test_journal_records_a_public_call_with_every_field(client):
    assert client.put("/__mock/clock", json={"now": "2026-11-21T13:00:00Z"}).status_code == 200
    sent = registration(NEW_ACCOUNT)
    answered = client.post("/limits/account", json=sent)
    assert answered.status_code == 201
    entries = journal(client)
    assert entries[0].pop("request_headers")["content-type"] == "application/json"
    assert entries == [
        {
            "received_at": "2026-11-21T10:00:00.000-03:00",
            "method": "POST",
            "path": "/limits/account",
            "operation_id": "registerAccountLimit",
            "status": 201,
            "request_body": sent,
            "response_body": answered.json(),
            "trace_id": None,  # no traceparent came, and tracing is off (tests/telemetry)
            "span_id": None,
        }
    ]


def test_journal_records_public_calls_only_oldest_first(client):
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert client.get("/__mock/state").status_code == 200  # admin: not journaled
    assert client.post(f"/__mock/events/{PENDING_EVENT}/cancel").status_code == 200  # admin: not journaled
    assert client.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 201
    assert (
        client.delete(
            f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient/5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f"
        ).status_code
        == 204
    )
    assert client.get("/openapi.json").status_code == 200  # the spec: not an API call
    entries = journal(client)
    assert [(e["method"], e["operation_id"], e["status"]) for e in entries] == [
        ("GET", "getExtraordinaryEvent", 200),
        ("POST", "registerAccountLimit", 201),
        ("DELETE", "removeRecipient", 204),
    ]
    assert entries[0]["request_body"] is None
    assert entries[0]["response_body"]["status"] == "pending_conciliation"  # answered before the cancel
    assert entries[2]["response_body"] is None
    assert entries[2]["path"] == recipient_path(FULL_ACCOUNT, CPF_RECIPIENT)
    received = [datetime.fromisoformat(e["received_at"]) for e in entries]
    assert received == sorted(received)
    assert all(e["received_at"].endswith("-03:00") for e in entries)


def test_journal_records_invalid_calls_with_their_4xx(client):
    bad = {"account_id": "", "registration_date": "2026-11-21T09:00:00-03:00", "limit": {"pix": {}}}
    assert client.post("/limits/account", json=bad).status_code == 400
    assert (
        client.post("/limits/account", content=b"{oops", headers={"Content-Type": "application/json"}).status_code
        == 400
    )
    assert client.post("/limits/account", content=b"a=1", headers={"Content-Type": "text/plain"}).status_code == 415
    assert client.get("/event_conciliation/extraordinary_event/not-a-uuid").status_code == 400
    assert client.get("/event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000").status_code == 404
    entries = journal(client)
    assert [(e["status"], e["response_body"]["code"]) for e in entries] == [
        (400, "invalid_request"),
        (400, "malformed_json"),
        (415, "unsupported_media_type"),
        (400, "invalid_request"),
        (404, "EVC100011"),
    ]
    assert entries[0]["request_body"] == bad
    assert entries[1]["request_body"] == "{oops"  # not JSON: kept as text
    assert entries[2]["request_body"] == "a=1"
    assert all(e["operation_id"] for e in entries)


def test_journal_keeps_the_last_1000(client):
    base = "00000000-0000-4000-8000-"
    with client.unwatched():
        for i in range(1005):
            assert client.get(f"/event_conciliation/extraordinary_event/{base}{i:012d}").status_code == 404
    entries = journal(client)
    assert len(entries) == 1000
    assert entries[0]["path"].endswith(f"{base}{5:012d}")
    assert entries[-1]["path"].endswith(f"{base}{1004:012d}")


def test_journal_clear(client):
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    response = client.delete("/__mock/requests")
    assert response.status_code == 204
    assert response.content == b""
    assert journal(client) == []
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert len(journal(client)) == 1


# --- faults ---------------------------------------------------------------------------------------


def test_a_fault_answers_its_status_and_body_once_by_default(client):
    fault = add_fault(client, operation_id="getExtraordinaryEvent", status=503, body={"error": "down"})
    assert fault == {
        "fault_id": fault["fault_id"],
        "operation_id": "getExtraordinaryEvent",
        "kind": "respond",  # the default kind
        "status": 503,
        "body": {"error": "down"},
        "delay_ms": 0,
        "times": 1,
    }
    faulted = client.get(PENDING_EVENT_PATH)
    assert faulted.status_code == 503
    assert faulted.json() == {"error": "down"}
    normal = client.get(PENDING_EVENT_PATH)
    assert normal.status_code == 200
    assert normal.json()["extraordinary_event_conciliation_key"] == PENDING_EVENT
    assert client.get("/__mock/faults").json() == {"faults": []}


def test_a_fault_without_body_answers_the_default_body(client):
    fault = add_fault(client, operation_id="getExtraordinaryEvent", status=500)
    response = client.get(PENDING_EVENT_PATH)
    assert response.status_code == 500
    body = response.json()
    assert body["code"] == "injected_fault"
    assert isinstance(body["message"], str)
    assert body["message"]
    assert set(body) == {"code", "message"}
    assert fault["body"] is None


@pytest.mark.parametrize("body", [[1, 2], "text", 0, False])
def test_a_fault_body_may_be_any_json(client, body):
    add_fault(client, operation_id="getExtraordinaryEvent", status=502, body=body)
    response = client.get(PENDING_EVENT_PATH)
    assert response.status_code == 502
    assert response.json() == body


def test_a_fault_with_a_success_status_answers_without_doing_anything(client):
    add_fault(client, operation_id="registerAccountLimit", status=201, body={"account_id": "fake"})
    response = client.post(REGISTER, json=registration(NEW_ACCOUNT))
    assert response.status_code == 201
    assert response.json() == {"account_id": "fake"}
    assert_error(client.get("/__mock/accounts/5555-000001"), 404, "account_not_found")


def test_a_fault_with_204_answers_no_body(client):
    add_fault(client, operation_id="getExtraordinaryEvent", status=204)
    response = client.get(PENDING_EVENT_PATH)
    assert response.status_code == 204
    assert response.content == b""
    assert journal(client)[-1]["response_body"] is None


def test_a_fault_hits_n_times_then_normal(client):
    fault = add_fault(client, operation_id="getExtraordinaryEvent", status=429, times=3)
    for left in (2, 1, 0):
        assert client.get(PENDING_EVENT_PATH).status_code == 429
        listed = client.get("/__mock/faults").json()["faults"]
        assert [f["times"] for f in listed if f["fault_id"] == fault["fault_id"]] == ([left] if left else [])
    assert client.get(PENDING_EVENT_PATH).status_code == 200


def test_a_fault_with_times_null_lasts_until_cleared(client):
    fault = add_fault(client, operation_id="getExtraordinaryEvent", status=503, times=None)
    assert fault["times"] is None
    for _ in range(5):
        assert client.get(PENDING_EVENT_PATH).status_code == 503
    assert client.get("/__mock/faults").json()["faults"] == [fault]
    response = client.delete("/__mock/faults")
    assert response.status_code == 204
    assert response.content == b""
    assert client.get("/__mock/faults").json() == {"faults": []}
    assert client.get(PENDING_EVENT_PATH).status_code == 200


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldPauses:
    """Every fault pause of a server in this process waits until the test ends it: a delay is shown, not timed."""
    pauses = HeldPauses()
    monkeypatch.setattr(fault_replies, "sleep", pauses.sleep)
    return pauses


@pytest.fixture
def held_client(specs: Specs, held: HeldPauses) -> Iterator[TestClient]:
    """A client on a fresh app in this process, whatever MOCK_SERVER_TEST_URL says (only a server in this process
    can be held in its pause); the app notes each answer in `held.events`."""
    with TestClient(held.watching(create_app(Settings(validate_responses=True), specs))) as client:
        yield client


def sent_past_a_held_pause(held: HeldPauses, send: Callable[[], Response]) -> Response:
    """`send` runs in a thread; the server is held in the pause it takes, checked to have answered nothing yet,
    then let go."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        answer = pool.submit(send)
        try:
            held.wait_for_pause()
            assert "answered" not in held.events[-1], held.events  # the pause came before the call's answer
        finally:
            held.end_pause()  # also on failure, so that the thread ends
        return answer.result(timeout=SAFETY)


def test_a_fault_without_status_only_delays(held_client, held):
    client = held_client
    add_fault(client, operation_id="getExtraordinaryEvent", delay_ms=300)
    response = sent_past_a_held_pause(held, lambda: client.get(PENDING_EVENT_PATH))
    assert held.events == [
        "POST /__mock/faults answered 201",
        "pause of 0.3 s begins",  # the fault's delay_ms, once
        "pause ends",
        f"GET {PENDING_EVENT_PATH} answered 200",  # the real answer, only once the pause is over
    ]
    assert response.json()["extraordinary_event_conciliation_key"] == PENDING_EVENT
    assert client.get("/__mock/faults").json() == {"faults": []}  # spent
    assert journal(client)[-1]["status"] == 200


def test_a_fault_with_status_and_delay(held_client, held):
    client = held_client
    add_fault(client, operation_id="getExtraordinaryEvent", status=504, delay_ms=300)
    response = sent_past_a_held_pause(held, lambda: client.get(PENDING_EVENT_PATH))
    assert held.events == [
        "POST /__mock/faults answered 201",
        "pause of 0.3 s begins",
        "pause ends",
        f"GET {PENDING_EVENT_PATH} answered 504",
    ]
    assert response.json()["code"] == "injected_fault"


def test_a_fault_is_answered_before_validation(client):
    add_fault(client, operation_id="registerAccountLimit", status=503, times=2)
    invalid = client.post("/limits/account", json={"nonsense": True})
    assert invalid.status_code == 503
    assert invalid.json()["code"] == "injected_fault"
    malformed = client.post("/limits/account", content=b"{", headers={"Content-Type": "application/json"})
    assert malformed.status_code == 503
    bad_key = add_fault(client, operation_id="getExtraordinaryEvent", status=503)
    assert bad_key["times"] == 1
    assert client.get("/event_conciliation/extraordinary_event/not-a-uuid").status_code == 503


def test_a_fault_is_answered_before_any_state_change(client):
    add_fault(client, operation_id="registerAccountLimit", status=503)
    assert client.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 503
    assert_error(client.get("/__mock/accounts/5555-000001"), 404, "account_not_found")
    assert client.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 201  # the retry succeeds
    assert client.get("/__mock/accounts/5555-000001").status_code == 200

    add_fault(client, operation_id="addRecipient", status=500)
    assert (
        client.post(
            f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient", json={"document_number": "529.982.247-25"}
        ).status_code
        == 500
    )
    recipients = client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()["recipient_list"]["recipients"]
    assert "529.982.247-25" not in [r["document_number"] for r in recipients]


def test_a_faulted_call_is_journaled_with_the_injected_status(client):
    add_fault(client, operation_id="registerAccountLimit", status=503, body={"retry": True})
    sent = registration(NEW_ACCOUNT)
    assert client.post("/limits/account", json=sent).status_code == 503
    entries = journal(client)
    assert len(entries) == 1
    entry = entries[0]
    assert entry["operation_id"] == "registerAccountLimit"
    assert entry["status"] == 503
    assert entry["response_body"] == {"retry": True}
    assert entry["request_body"] == sent  # what the client sent, though it was never validated


def test_faults_apply_to_their_operation_only(client):
    add_fault(client, operation_id="addRecipient", status=503, times=None)
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert client.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 201


def test_faults_do_not_touch_the_admin_api(client):
    add_fault(client, operation_id="getExtraordinaryEvent", status=503, times=None)
    assert client.get("/__mock/state").status_code == 200
    assert client.post(f"/__mock/events/{PENDING_EVENT}/pay").status_code == 200


def test_faults_of_one_operation_apply_in_the_order_they_were_made(client):
    first = add_fault(client, operation_id="getExtraordinaryEvent", status=503)
    second = add_fault(client, operation_id="getExtraordinaryEvent", status=429, times=2)
    listed = client.get("/__mock/faults")
    assert listed.status_code == 200
    assert listed.json() == {"faults": [first, second]}
    assert first["fault_id"] != second["fault_id"]
    assert [client.get(PENDING_EVENT_PATH).status_code for _ in range(4)] == [503, 429, 429, 200]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"operation_id": "nope", "status": 503}, ["operation_id"]),
        ({"operation_id": "mockReset", "status": 503}, ["operation_id"]),  # admin operations cannot be faulted
        ({"status": 503}, ["operation_id"]),
        ({"operation_id": "getExtraordinaryEvent", "status": 99}, ["status"]),
        ({"operation_id": "getExtraordinaryEvent", "status": 600}, ["status"]),
        ({"operation_id": "getExtraordinaryEvent", "status": "503"}, ["status"]),
        ({"operation_id": "getExtraordinaryEvent", "times": 0}, ["times"]),
        ({"operation_id": "getExtraordinaryEvent", "times": 1.5}, ["times"]),
        ({"operation_id": "getExtraordinaryEvent", "delay_ms": -1}, ["delay_ms"]),
        ({"operation_id": "getExtraordinaryEvent", "delay_ms": 60001}, ["delay_ms"]),
        ({"operation_id": "getExtraordinaryEvent", "sttaus": 503}, ["sttaus"]),
    ],
)
def test_a_bad_fault_is_400(client, body, fields):
    assert_error(client.post("/__mock/faults", json=body), 400, "invalid_request", fields)
    assert client.get("/__mock/faults").json() == {"faults": []}


# --- clock ----------------------------------------------------------------------------------------


def test_the_clock_runs_in_real_time_by_default(client):
    response = client.get("/__mock/clock")
    assert response.status_code == 200
    body = response.json()
    assert body["frozen"] is False
    now = datetime.fromisoformat(body["now"])
    assert body["now"].endswith("-03:00")
    assert abs(now - datetime.now(UTC)) < timedelta(minutes=5)


def test_freeze_the_clock(client):
    response = client.put("/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"})
    assert response.status_code == 200
    assert response.json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
    again = client.get("/__mock/clock")
    assert again.status_code == 200
    assert again.json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}


@pytest.mark.parametrize(
    ("sent", "shown"),
    [
        ("2026-11-21T13:00:00Z", "2026-11-21T10:00:00.000-03:00"),
        ("2026-11-21T13:00:00.123456Z", "2026-11-21T10:00:00.123-03:00"),
        ("2026-11-21T02:30:00+00:00", "2026-11-20T23:30:00.000-03:00"),
        ("2026-11-21T10:00:00.5+05:30", "2026-11-21T01:30:00.500-03:00"),
    ],
)
def test_public_event_dates_follow_the_frozen_clock_at_minus_three(client, sent, shown):
    assert client.put("/__mock/clock", json={"now": sent}).json() == {"now": shown, "frozen": True}
    registered = client.post(REGISTER, json=registration(NEW_ACCOUNT))
    assert registered.status_code == 201
    assert registered.json()["event_date"] == shown
    proposal = client.post(f"/limits/account/{FULL_ACCOUNT}/limit_update_request", json={"pix": {"withdraw": WINDOW}})
    assert proposal.status_code == 201
    assert proposal.json()["event_date"] == shown
    added = client.post(
        f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient", json={"document_number": "529.982.247-25"}
    )
    assert added.status_code == 201
    assert added.json()["event_date"] == shown
    listed = client.post("/limits/account/0002-654321/recipient_list", json={"limit": {"pix": {"transaction": WINDOW}}})
    assert listed.status_code == 201
    assert listed.json() == {"event_date": shown}
    assert {e["received_at"] for e in journal(client)} == {shown}


def test_release_the_clock(client):
    assert client.put("/__mock/clock", json={"now": "2020-01-01T00:00:00Z"}).status_code == 200
    response = client.put("/__mock/clock", json={"now": None})
    assert response.status_code == 200
    body = response.json()
    assert body["frozen"] is False
    assert abs(datetime.fromisoformat(body["now"]) - datetime.now(UTC)) < timedelta(minutes=5)
    registered = client.post(REGISTER, json=registration(NEW_ACCOUNT))
    assert registered.status_code == 201
    assert not registered.json()["event_date"].startswith("2020-")


def test_freeze_the_clock_again_moves_it(client):
    assert client.put("/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"}).status_code == 200
    moved = client.put("/__mock/clock", json={"now": "2026-11-22T10:00:00-03:00"})
    assert moved.status_code == 200
    assert moved.json()["now"] == "2026-11-22T10:00:00.000-03:00"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"now": "2026-11-21T10:00:00"}, ["now"]),  # no offset
        ({"now": "2026-11-21"}, ["now"]),
        ({"now": "yesterday"}, ["now"]),
        ({"now": 1763719200}, ["now"]),
        ({}, ["now"]),
        ({"now": None, "frozen": True}, ["frozen"]),
    ],
)
def test_a_bad_clock_body_is_400(client, body, fields):
    assert_error(client.put("/__mock/clock", json=body), 400, "invalid_request", fields)
    assert client.get("/__mock/clock").json()["frozen"] is False


def test_the_clock_needs_a_body(client):
    assert_error(client.put("/__mock/clock"), 400, "invalid_request", [""])


def test_the_clock_has_no_post(client):
    response = client.post("/__mock/clock", json={"now": None})
    assert_error(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET, PUT"
