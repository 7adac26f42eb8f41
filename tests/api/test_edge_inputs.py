"""Inputs at the edges of what the spec's formats allow: each answers a clear 4xx (or is taken exactly), never a
500, and leaves the session as it was. Found by probing the server against CONTRACT.md row by row."""

from __future__ import annotations

import json

import pytest

from mock_server.wire.decoding import MAX_DEPTH
from tests.builders import event_creation
from tests.default_scenario import FULL_ACCOUNT, PENDING_EVENT, PENDING_EVENT_PATH
from tests.helpers import assert_error

WINDOW = {"start_time": "06:00:00-03:00", "amount": 500000}


def register(client, account_id, registration_date="2026-11-21T09:00:00-03:00", windows=None, raw=None):
    body = {
        "account_id": account_id,
        "registration_date": registration_date,
        "limit": {"pix": {"withdraw": windows or [WINDOW]}},
    }
    content = raw if raw is not None else json.dumps(body)
    return client.post("/limits/account", content=content, headers={"Content-Type": "application/json"})


# --- ECMA-262 `$`: a final newline does not match (Python's re.search would let it through) ---------------


def test_a_start_time_with_a_final_newline_is_rejected_and_nothing_is_registered(client):
    response = register(client, "NL-1", windows=[{"start_time": "06:00:00Z\n", "amount": 1}])
    assert_error(response, 400, "invalid_request", ["limit.pix.withdraw[0].start_time"])
    assert_error(client.get("/__mock/accounts/NL-1"), 404, "account_not_found")


def test_a_registration_date_with_a_final_newline_is_rejected(client):
    assert_error(register(client, "NL-2", "2026-11-21T09:00:00Z\n"), 400, "invalid_request", ["registration_date"])


def test_an_instant_with_a_final_newline_is_rejected_by_the_admin_api(client):
    evaluate = {"mode": "withdraw", "amount": 1, "at": "2026-11-21T12:00:00-03:00\n"}
    assert_error(
        client.post(f"/__mock/accounts/{FULL_ACCOUNT}/limits/evaluate", json=evaluate), 400, "invalid_request", ["at"]
    )
    assert_error(
        client.put("/__mock/clock", json={"now": "2026-11-21T12:00:00-03:00\n"}), 400, "invalid_request", ["now"]
    )


# --- instants and dates the spec's formats admit but Python's calendar cannot hold ----------------------


@pytest.mark.parametrize("now", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+01:00", "0000-01-01T00:00:00Z"])
def test_freezing_the_clock_outside_the_supported_span_is_a_400_and_leaves_the_clock_running(client, now):
    body = assert_error(client.put("/__mock/clock", json={"now": now}), 400, "invalid_request", ["now"])
    assert "0001-01-02T00:00:00Z to 9999-12-30T23:59:59Z" in body["details"][0]["message"]
    clock = client.get("/__mock/clock")
    assert clock.status_code == 200
    assert clock.json()["frozen"] is False
    assert register(client, "after-clock").status_code == 201


def test_the_clock_can_be_frozen_at_the_ends_of_the_span_and_the_api_still_works(client):
    for now, event_date in (
        ("9999-12-30T23:59:59Z", "9999-12-30T20:59:59.000-03:00"),
        ("0001-01-02T00:00:00Z", "0001-01-01T21:00:00.000-03:00"),
    ):
        assert client.put("/__mock/clock", json={"now": now}).status_code == 200
        account_id = f"edge-{now[:4]}"
        registered = register(client, account_id)
        assert registered.status_code == 201
        assert registered.json()["event_date"] == event_date
        evaluated = client.post(
            f"/__mock/accounts/{account_id}/limits/evaluate", json={"mode": "withdraw", "amount": 1}
        )
        assert evaluated.status_code == 200
        assert client.get("/__mock/requests").status_code == 200


@pytest.mark.parametrize("at", ["0001-01-01T01:00:00+05:00", "9999-12-31T23:00:00-05:00", "0000-01-01T00:00:00Z"])
def test_evaluating_at_an_instant_outside_the_span_is_a_400(client, at):
    evaluate = {"mode": "withdraw", "amount": 1, "at": at}
    assert_error(
        client.post(f"/__mock/accounts/{FULL_ACCOUNT}/limits/evaluate", json=evaluate), 400, "invalid_request", ["at"]
    )


def test_paying_with_a_year_0000_paid_at_is_a_400_and_the_event_stays_pending(client):
    before = client.get(PENDING_EVENT_PATH).json()
    paid = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"paid_at": "0000-01-01"})
    assert_error(paid, 400, "invalid_request", ["paid_at"])
    assert client.get(PENDING_EVENT_PATH).json() == before


@pytest.mark.parametrize("field", ["reference_date", "due_date"])
def test_creating_an_event_dated_year_0000_is_a_400(client, field):
    event = event_creation(total_expected_amount=500)
    event[field] = "0000-01-01"
    events_before = client.get("/__mock/state").json()["events"]
    assert_error(client.post("/__mock/events", json=event), 400, "invalid_request", [field])
    assert client.get("/__mock/state").json()["events"] == events_before


# --- nesting ---------------------------------------------------------------------------------------------


def _fault_with_nested_body(depth: int, leaf: str = "1") -> str:
    return (
        '{"operation_id": "getExtraordinaryEvent", "status": 503, "times": null, "body": '
        + "[" * depth
        + leaf
        + "]" * depth
        + "}"
    )


@pytest.mark.parametrize("leaf", ["1", '"\\ud83d\\ude00"'])
def test_a_fault_body_nested_as_deep_as_a_body_may_is_stored_listed_and_answered(client, leaf):
    # the fault's object is one level, its body the other MAX_DEPTH - 1
    created = client.post(
        "/__mock/faults",
        content=_fault_with_nested_body(MAX_DEPTH - 1, leaf),
        headers={"Content-Type": "application/json"},
    )
    assert created.status_code == 201
    assert client.get("/__mock/faults").status_code == 200
    faulted = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
    assert faulted.status_code == 503
    assert client.get("/__mock/requests").status_code == 200


@pytest.mark.parametrize("depth", [MAX_DEPTH, 600, 5000])
def test_a_fault_body_nested_deeper_than_a_body_may_is_malformed_json(client, depth):
    response = client.post(
        "/__mock/faults", content=_fault_with_nested_body(depth), headers={"Content-Type": "application/json"}
    )
    assert_error(response, 400, "malformed_json")
    assert client.get("/__mock/faults").json() == {"faults": []}


# --- one detail per field -----------------------------------------------------------------------------


def test_a_document_number_that_is_not_a_string_gets_one_detail_about_its_type(client):
    client.post(f"/limits/account/{FULL_ACCOUNT}/recipient_list", json={"limit": {"pix": {"transaction": [WINDOW]}}})
    response = client.post(f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient", json={"document_number": 123})
    body = assert_error(response, 400, "invalid_request", ["document_number"])
    assert body["details"][0]["message"] == "must be a string (got 123)"


def test_several_problems_of_one_field_are_one_detail(client):
    response = register(client, "two-problems", windows=[{"start_time": "06:00:00Z", "amount": -1.5}])
    body = assert_error(response, 400, "invalid_request", ["limit.pix.withdraw[0].amount"])
    message = body["details"][0]["message"]
    assert message == "must be an integer (got -1.5); must be at least 0 (got -1.5)"


# --- integral numbers written with a fraction are taken exactly -----------------------------------------


@pytest.mark.parametrize(
    "written, taken", [("12345678901234567.0", 12345678901234567), ("9223372036854775807.0", 9223372036854775807)]
)
def test_an_integral_amount_beyond_2_to_the_53_keeps_every_digit(client, written, taken):
    raw = (
        '{"account_id": "exact", "registration_date": "2026-11-21T09:00:00-03:00", '
        '"limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": ' + written + "}]}}}"
    )
    assert register(client, "exact", raw=raw).status_code == 201
    assert client.get("/__mock/accounts/exact").json()["limit"]["pix"]["withdraw"][0]["amount"] == taken


def test_an_amount_one_past_the_maximum_written_with_a_fraction_is_rejected(client):
    raw = (
        '{"account_id": "over", "registration_date": "2026-11-21T09:00:00-03:00", '
        '"limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 9223372036854775808.0}]}}}'
    )
    assert_error(register(client, "over", raw=raw), 400, "invalid_request", ["limit.pix.withdraw[0].amount"])


# --- the YAML export escapes what YAML reads as a line break ---------------------------------------------


@pytest.mark.parametrize("account_id", ["\u0085c", "a\u2028b", "ação"])
def test_the_yaml_export_loads_back_text_yaml_would_read_as_a_line_break(client, make_client, tmp_path, account_id):
    assert register(client, account_id).status_code == 201
    exported = client.get("/__mock/state", params={"format": "yaml"})
    assert exported.status_code == 200
    (tmp_path / "x.yaml").write_text(exported.text, encoding="utf-8")
    again = make_client(fixtures=tmp_path, scenario="x").get("/__mock/state")
    assert again.json() == client.get("/__mock/state").json()
