"""Faults that hit only the calls matching a predicate (issue 13, item 5): `match.path` (path parameters) and
`match.body_contains` (a JSON subset of the body), through HTTP. A call that does not match goes on as usual and
spends nothing of the fault."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.state.faults import MAX_FAULT_BODY_BYTES
from tests.builders import REGISTER, recipient_path, registration
from tests.default_scenario import (
    CNPJ_RECIPIENT,
    CPF_NOT_IN_LIST,
    CPF_RECIPIENT,
    FULL_ACCOUNT,
    PAID_EVENT,
    PENDING_EVENT,
    PENDING_EVENT_PATH,
    SMALL_ACCOUNT,
    event_path,
)
from tests.helpers import Client, add_fault, assert_error, faults

OTHER_CPF = "111.444.777-35"  # a valid CPF in no list
HIT = {"code": "hit"}


def add_recipient(client: Client, account_id: str, document_number: str) -> Any:
    return client.post(recipient_path(account_id), json={"document_number": document_number})


# --- path parameters ---------------------------------------------------------------------------------


def test_a_path_match_hits_that_account_only_and_other_calls_spend_nothing(client):
    fault = add_fault(
        client, operation_id="addRecipient", status=503, body=HIT, match={"path": {"account_id": FULL_ACCOUNT}}
    )
    assert fault["match"] == {"path": {"account_id": FULL_ACCOUNT}}
    assert faults(client) == [fault]
    assert_error(add_recipient(client, SMALL_ACCOUNT, OTHER_CPF), 404, "recipient_list_not_found")  # not hit
    assert faults(client) == [fault]  # still one call left
    hit = add_recipient(client, FULL_ACCOUNT, OTHER_CPF)
    assert (hit.status_code, hit.json()) == (503, HIT)
    assert faults(client) == []
    assert add_recipient(client, FULL_ACCOUNT, OTHER_CPF).status_code == 201  # spent: the call goes through


def test_a_path_match_on_the_event_key(client):
    add_fault(
        client,
        operation_id="getExtraordinaryEvent",
        status=500,
        match={"path": {"extraordinary_event_conciliation_key": PAID_EVENT}},
        times=None,
    )
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert client.get(event_path(PAID_EVENT)).status_code == 500
    assert client.get(event_path(PAID_EVENT)).status_code == 500
    assert client.get(PENDING_EVENT_PATH).status_code == 200


def test_every_path_parameter_named_must_equal(client):
    add_fault(
        client,
        operation_id="removeRecipient",
        kind="reset",
        match={"path": {"account_id": FULL_ACCOUNT, "recipient_id": CNPJ_RECIPIENT}},
    )
    assert client.delete(recipient_path(FULL_ACCOUNT, CPF_RECIPIENT)).status_code == 204  # the other recipient
    assert len(faults(client)) == 1
    with pytest.raises(Exception, match="reset fault"):  # ConnectionDropped in process
        client.delete(recipient_path(FULL_ACCOUNT, CNPJ_RECIPIENT))
    assert faults(client) == []


def test_a_path_value_is_compared_as_sent_so_an_invalid_path_can_be_hit(client):
    # Faults answer before validation: a match can name a value the spec would refuse.
    add_fault(
        client,
        operation_id="getExtraordinaryEvent",
        status=502,
        match={"path": {"extraordinary_event_conciliation_key": "not-a-uuid"}},
    )
    assert client.get(event_path("not-a-uuid")).status_code == 502
    assert_error(client.get(event_path("not-a-uuid")), 400, "invalid_request", ["extraordinary_event_conciliation_key"])


# --- the body ----------------------------------------------------------------------------------------


def test_a_body_match_hits_the_calls_whose_body_contains_it(client):
    fault = add_fault(
        client, operation_id="addRecipient", status=503, match={"body_contains": {"document_number": OTHER_CPF}}
    )
    assert fault["match"] == {"body_contains": {"document_number": OTHER_CPF}}
    assert add_recipient(client, FULL_ACCOUNT, CPF_NOT_IN_LIST).status_code == 201  # another document
    assert faults(client) == [fault]
    assert add_recipient(client, FULL_ACCOUNT, OTHER_CPF).status_code == 503
    entries = client.get("/__mock/requests").json()["requests"]
    assert [(e["status"], e["request_body"]) for e in entries] == [
        (201, {"document_number": CPF_NOT_IN_LIST}),
        (503, {"document_number": OTHER_CPF}),  # the body read for the match is the one journaled
    ]
    recipients = client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()["recipient_list"]["recipients"]
    assert OTHER_CPF not in [r["document_number"] for r in recipients]  # the faulted call did nothing


def test_a_body_match_is_a_json_subset(client):
    windows = [{"start_time": "06:00:00-03:00", "amount": 1000}]
    add_fault(
        client,
        operation_id="registerAccountLimit",
        status=503,
        match={"body_contains": {"limit": {"pix": {"withdraw": windows}}}},
    )
    other = registration("5555-000010", withdraw=[{"start_time": "06:00:00-03:00", "amount": 2000}])
    assert client.post(REGISTER, json=other).status_code == 201
    assert client.post(REGISTER, json=registration("5555-000011", withdraw=windows)).status_code == 503


def test_a_body_that_is_not_json_never_matches_and_gets_its_own_answer(client):
    fault = add_fault(client, operation_id="addRecipient", status=503, match={"body_contains": {}})
    not_json = client.post(recipient_path(FULL_ACCOUNT), content=b"{", headers={"Content-Type": "application/json"})
    assert_error(not_json, 400, "malformed_json")
    wrong_type = client.post(recipient_path(FULL_ACCOUNT), content=b"{}", headers={"Content-Type": "text/plain"})
    assert_error(wrong_type, 415, "unsupported_media_type")
    assert_error(client.post(recipient_path(FULL_ACCOUNT)), 400, "invalid_request")  # no body at all
    assert faults(client) == [fault]
    assert client.post(recipient_path(FULL_ACCOUNT), json={"anything": 1}).status_code == 503  # {} holds in any object


def test_a_body_over_the_limit_is_refused_as_usual_and_spends_nothing(client):
    fault = add_fault(client, operation_id="addRecipient", status=503, match={"body_contains": {}})
    big = b'{"document_number": "' + b"1" * (1024 * 1024) + b'"}'
    assert_error(
        client.post(recipient_path(FULL_ACCOUNT), content=big, headers={"Content-Type": "application/json"}),
        413,
        "payload_too_large",
    )
    assert faults(client) == [fault]


def test_path_and_body_must_both_hold(client):
    add_fault(
        client,
        operation_id="addRecipient",
        status=503,
        match={"path": {"account_id": FULL_ACCOUNT}, "body_contains": {"document_number": OTHER_CPF}},
    )
    assert_error(add_recipient(client, SMALL_ACCOUNT, OTHER_CPF), 404, "recipient_list_not_found")
    assert add_recipient(client, FULL_ACCOUNT, CPF_NOT_IN_LIST).status_code == 201
    assert add_recipient(client, FULL_ACCOUNT, OTHER_CPF).status_code == 503


def test_the_first_fault_that_matches_answers(client):
    add_fault(
        client,
        operation_id="getExtraordinaryEvent",
        status=500,
        match={"path": {"extraordinary_event_conciliation_key": PAID_EVENT}},
    )
    add_fault(client, operation_id="getExtraordinaryEvent", status=503)
    assert client.get(PENDING_EVENT_PATH).status_code == 503  # the first does not match: the second answers
    assert [f["status"] for f in faults(client)] == [500]
    assert client.get(event_path(PAID_EVENT)).status_code == 500
    assert client.get(event_path(PENDING_EVENT)).status_code == 200


def test_body_patterns_count_against_the_sessions_fault_bytes(client):
    pattern = {"document_number": "x" * (MAX_FAULT_BODY_BYTES // 2)}
    add_fault(client, operation_id="addRecipient", status=503, match={"body_contains": pattern})
    listed = faults(client)
    assert_error(
        client.post("/__mock/faults", json={"operation_id": "addRecipient", "match": {"body_contains": pattern}}),
        409,
        "capacity_exceeded",
    )
    assert faults(client) == listed


# --- bad predicates: 400 naming the field, nothing armed -----------------------------------------------

LOOKUP, REGISTER_OP, ADD, REMOVE = "getExtraordinaryEvent", "registerAccountLimit", "addRecipient", "removeRecipient"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"operation_id": LOOKUP, "match": {"path": {"account_id": FULL_ACCOUNT}}}, ["match.path.account_id"]),
        ({"operation_id": REGISTER_OP, "match": {"path": {"account_id": FULL_ACCOUNT}}}, ["match.path"]),
        ({"operation_id": ADD, "match": {"path": {"recipient_id": CPF_RECIPIENT}}}, ["match.path.recipient_id"]),
        ({"operation_id": ADD, "match": {"path": {"acount_id": FULL_ACCOUNT}}}, ["match.path.acount_id"]),
        ({"operation_id": REMOVE, "match": {"path": {"key": "x"}}}, ["match.path.key"]),
        ({"operation_id": LOOKUP, "match": {"body_contains": {"a": 1}}}, ["match.body_contains"]),
        ({"operation_id": REMOVE, "match": {"body_contains": None}}, ["match.body_contains"]),
        ({"operation_id": ADD, "match": {"path": {"account_id": 1}}}, ["match.path.account_id"]),
        ({"operation_id": ADD, "match": {"path": {"account_id": "x" * 1025}}}, ["match.path.account_id"]),
        ({"operation_id": ADD, "match": {"path": ["account_id"]}}, ["match.path"]),
        ({"operation_id": ADD, "match": {"body": {"a": 1}}}, ["match.body"]),
        ({"operation_id": ADD, "match": "account_id"}, ["match"]),
        ({"operation_id": ADD, "match": None}, ["match"]),
    ],
)
def test_a_bad_match_is_400_and_arms_nothing(client, body, fields):
    error = assert_error(client.post("/__mock/faults", json=body), 400, "invalid_request", fields)
    assert all(d["message"] for d in error["details"])
    assert faults(client) == []


def test_a_path_parameter_the_operation_has_not_is_named_with_those_it_has(client):
    error = assert_error(
        client.post("/__mock/faults", json={"operation_id": REMOVE, "match": {"path": {"key": "x"}}}),
        400,
        "invalid_request",
        ["match.path.key"],
    )
    assert "account_id and recipient_id" in error["details"][0]["message"]
