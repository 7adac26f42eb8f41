"""Verification (POST /__mock/verify) and the journal's filters and headers, through HTTP (issue 13, 1)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.default_scenario import PENDING_EVENT
from tests.helpers import assert_error

ACCOUNT = "0001-123456"
RECIPIENTS = f"/limits/account/{ACCOUNT}/recipient_list/recipient"
CPF = "123.456.789-09"  # already in the default scenario's list: a second add answers 409
NEW_CPF = "529.982.247-25"
PENDING_KEY = PENDING_EVENT
EVENT = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"


def verify(client, **body: Any):
    return client.post("/__mock/verify", json=body)


@pytest.fixture
def two_adds(client):
    """One recipient added (201), one refused (409), one lookup (200)."""
    assert client.post(RECIPIENTS, json={"document_number": NEW_CPF}).status_code == 201
    assert client.post(RECIPIENTS, json={"document_number": CPF}).status_code == 409
    assert client.get(EVENT).status_code == 200
    return client


def test_verify_holds_with_the_count_of_matching_calls(two_adds):
    response = verify(two_adds, operation_id="addRecipient", status=201, times=1)
    assert response.status_code == 200
    assert response.json() == {
        "verified": True,
        "matched": 1,
        "message": "Verification holds: expected addRecipient with status 201, exactly 1 time; "
        "1 matched (2 calls of addRecipient journaled).",
    }


@pytest.mark.parametrize(
    ("body", "matched"),
    [
        ({}, 2),
        ({"times": 2}, 2),
        ({"status": 409}, 1),
        ({"body_contains": {"document_number": NEW_CPF}}, 1),
        ({"body_matches": {"document_number": CPF}, "status": 409, "times": 1}, 1),
        ({"at_least": 2, "at_most": 5}, 2),
        ({"at_most": 2}, 2),
        ({"status": 404, "times": 0}, 0),
        ({"body_contains": {"document_number": "000.000.000-00"}, "at_most": 0}, 0),
    ],
)
def test_verify_rules_that_hold(two_adds, body, matched):
    response = verify(two_adds, operation_id="addRecipient", **body)
    assert response.status_code == 200, response.text
    assert response.json()["matched"] == matched


@pytest.mark.parametrize(
    ("body", "matched"),
    [
        ({"times": 1}, 2),
        ({"status": 201, "times": 2}, 1),
        ({"at_least": 3}, 2),
        ({"at_most": 1}, 2),
        ({"status": 500}, 0),
        ({"body_contains": {"document_number": NEW_CPF}, "status": 409}, 0),
    ],
)
def test_verify_fails_with_409_listing_the_calls_it_saw(two_adds, body, matched):
    response = verify(two_adds, operation_id="addRecipient", **body)
    failure = assert_error(response, 409, "verification_failed")
    assert failure["matched"] == matched
    assert [(c["status"], c["request_body"]) for c in failure["calls"]] == [
        (201, {"document_number": NEW_CPF}),
        (409, {"document_number": CPF}),
    ]
    assert failure["message"].startswith("Verification failed: expected addRecipient")


def test_verify_of_an_operation_never_called_fails_with_no_calls(client):
    response = verify(client, operation_id="removeRecipient")
    failure = assert_error(response, 409, "verification_failed")
    assert failure["calls"] == []
    assert failure["message"] == (
        "Verification failed: expected removeRecipient, at least 1 time; "
        "0 matched (0 calls of removeRecipient journaled)."
    )


def test_verify_reads_the_calling_sessions_journal_only(two_adds):
    other = {"X-Mock-Session": "verify-other"}
    response = two_adds.post("/__mock/verify", json={"operation_id": "addRecipient"}, headers=other)
    assert_error(response, 409, "verification_failed")


def test_verify_after_the_journal_is_cleared_sees_nothing(two_adds):
    assert two_adds.delete("/__mock/requests").status_code == 204
    assert verify(two_adds, operation_id="addRecipient", times=0).status_code == 200


def test_a_faulted_call_counts_with_the_status_it_got(client):
    fault = {"operation_id": "getExtraordinaryEvent", "status": 503}
    assert client.post("/__mock/faults", json=fault).status_code == 201
    assert client.get(EVENT).status_code == 503
    assert verify(client, operation_id="getExtraordinaryEvent", status=503, times=1).status_code == 200


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["operation_id"]),
        ({"operation_id": "mockReset"}, ["operation_id"]),
        ({"operation_id": "addRecipient", "times": -1}, ["times"]),
        ({"operation_id": "addRecipient", "times": "1"}, ["times"]),
        ({"operation_id": "addRecipient", "status": 99}, ["status"]),
        ({"operation_id": "addRecipient", "at_least": 1.5}, ["at_least"]),
        ({"operation_id": "addRecipient", "surprise": 1}, ["surprise"]),
        ({"operation_id": "addRecipient", "times": 1, "at_least": 1}, ["at_least"]),
        ({"operation_id": "addRecipient", "times": 1, "at_most": 1}, ["at_most"]),
        ({"operation_id": "addRecipient", "at_least": 2, "at_most": 1}, ["at_least"]),
        ({"operation_id": "addRecipient", "body_contains": {}, "body_matches": {}}, ["body_matches"]),
    ],
)
def test_bad_verify_requests_are_400_naming_the_field(two_adds, body, fields):
    before = two_adds.get("/__mock/requests").json()
    assert_error(verify(two_adds, **body), 400, "invalid_request", fields)
    assert two_adds.get("/__mock/requests").json() == before  # nothing changed


def test_verify_without_a_body_is_400(client):
    assert_error(client.post("/__mock/verify"), 400, "invalid_request", [""])
    response = client.post("/__mock/verify", content=b"{", headers={"Content-Type": "application/json"})
    assert_error(response, 400, "malformed_json")
    response = client.post("/__mock/verify", content=b"x", headers={"Content-Type": "text/plain"})
    assert_error(response, 415, "unsupported_media_type")


# --- the journal's filters and headers ------------------------------------------------------------


def entries(client, query: str = "") -> list[dict[str, Any]]:
    response = client.get(f"/__mock/requests{query}")
    assert response.status_code == 200, response.text
    return response.json()["requests"]


def test_journal_filters_by_operation_and_status(two_adds):
    assert [e["status"] for e in entries(two_adds, "?operation_id=addRecipient")] == [201, 409]
    assert [e["operation_id"] for e in entries(two_adds, "?status=200")] == ["getExtraordinaryEvent"]
    assert [e["status"] for e in entries(two_adds, "?operation_id=addRecipient&status=409")] == [409]
    assert entries(two_adds, "?operation_id=removeRecipient") == []
    assert len(entries(two_adds)) == 3


def test_journal_filters_by_since_on_the_session_clock(client):
    assert client.put("/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"}).status_code == 200
    assert client.get(EVENT).status_code == 200
    assert client.put("/__mock/clock", json={"now": "2026-11-21T11:00:00-03:00"}).status_code == 200
    assert client.post(RECIPIENTS, json={"document_number": NEW_CPF}).status_code == 201
    later = entries(client, "?since=2026-11-21T13:30:00Z")
    assert [e["operation_id"] for e in later] == ["addRecipient"]
    assert len(entries(client, "?since=2026-11-21T10:00:00-03:00")) == 2  # at or after
    assert entries(client, "?since=2026-11-21T11:00:00.001-03:00") == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?status=20", "status"),
        ("?status=abc", "status"),
        ("?operation_id=nope", "operation_id"),
        ("?since=yesterday", "since"),
        ("?since=0000-01-01T00:00:00Z", "since"),
    ],
)
def test_bad_journal_filters_are_400_naming_the_parameter(client, query, field):
    assert_error(client.get(f"/__mock/requests{query}"), 400, "invalid_request", [field])


def test_journal_records_request_headers_with_credentials_redacted(client):
    headers = {"Authorization": "Bearer s3cret", "Proxy-Authorization": "Basic eA==", "X-Trace": "t-1"}
    assert client.get(EVENT, headers=headers).status_code == 200
    (entry,) = entries(client)
    recorded = entry["request_headers"]
    assert recorded["authorization"] == "[redacted]"
    assert recorded["proxy-authorization"] == "[redacted]"
    assert recorded["x-trace"] == "t-1"
    assert "s3cret" not in str(entry)


def test_verify_failure_lists_redacted_headers_too(client):
    assert client.get(EVENT, headers={"Authorization": "Bearer s3cret"}).status_code == 200
    failure = verify(client, operation_id="getExtraordinaryEvent", times=2).json()
    assert failure["calls"][0]["request_headers"]["authorization"] == "[redacted]"
