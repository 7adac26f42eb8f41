"""GET /__mock/pact: the session's calls as a Pact V4 document, through HTTP as an integrator asks for it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mock_server.admin.pact_matching import DATE_REGEX, DATE_TIME_REGEX, UUID_REGEX
from mock_server.state.bounds import Bounds
from tests.builders import day_night, limit_update_path, registration
from tests.default_scenario import FULL_ACCOUNT, PAID_EVENT, PARTIALLY_PAID_EVENT, PENDING_EVENT, PENDING_EVENT_BODY
from tests.helpers import add_fault, assert_error
from tests.pact_flow import (
    ACCOUNT,
    CONSUMER,
    DOCUMENT,
    DOCUMENT_BARE,
    EVENT_PATH,
    PROVIDER,
    flow_descriptions,
    in_flow_order,
    pact_recipient_id,
    pact_schema,
    run_flow,
)

PACT = f"/__mock/pact?consumer={CONSUMER}&provider={PROVIDER}"


def export(client: Any, **headers: str) -> dict[str, Any]:
    response = client.get(PACT, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    document: dict[str, Any] = response.json()
    return document


def export_sorted(interactions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(interactions, key=lambda i: i["description"])


def rule(regex: str) -> dict[str, Any]:
    return {"combine": "AND", "matchers": [{"match": "regex", "regex": regex}]}


def by_type(**extra: Any) -> dict[str, Any]:
    return {"combine": "AND", "matchers": [{"match": "type", **extra}]}


NUMBER = {"combine": "AND", "matchers": [{"match": "number"}]}
INTEGER = {"combine": "AND", "matchers": [{"match": "integer"}]}


@pytest.fixture
def flow(client) -> tuple[dict[str, Any], str]:
    answered = run_flow(client)
    document = export(client)
    recipient_id = pact_recipient_id(document)
    assert recipient_id != answered  # a stable id of its own, the same in every run of the flow
    return {**document, "interactions": in_flow_order(document)}, recipient_id


def test_a_flow_through_the_seven_operations_is_a_pact_v4_of_thirteen_interactions_in_order(flow) -> None:
    document, recipient_id = flow
    assert document["consumer"] == {"name": CONSUMER}
    assert document["provider"] == {"name": PROVIDER}
    assert document["metadata"]["pactSpecification"] == {"version": "4.0"}
    assert document["metadata"]["mockServer"] == {"calls": 13, "leftOut": []}
    interactions = document["interactions"]  # in the flow's order (the fixture's)
    assert [i["description"] for i in export_sorted(interactions)] == sorted(flow_descriptions(recipient_id))
    assert {i["type"] for i in interactions} == {"Synchronous/HTTP"}
    assert len({i["key"] for i in interactions}) == 13
    assert [(i["request"]["method"], i["response"]["status"]) for i in interactions] == [
        ("GET", 200),
        ("GET", 200),
        ("GET", 404),
        ("POST", 201),
        ("POST", 409),
        ("POST", 201),
        ("POST", 201),
        ("POST", 409),
        ("POST", 201),
        ("POST", 409),
        ("DELETE", 204),
        ("DELETE", 404),
        ("POST", 201),
    ]
    operations = {i["request"]["path"].split("/")[-1] for i in interactions[3:]}
    assert operations >= {"account", "limit_update_request", "recipient_list", "recipient", recipient_id}


def test_the_document_validates_against_the_pact_v4_schema(flow) -> None:
    document, _ = flow
    jsonschema.Draft7Validator.check_schema(pact_schema())
    jsonschema.validate(document, pact_schema())


def test_the_schema_subset_takes_what_pact_python_writes_itself(tmp_path: Path) -> None:
    """The subset is no stricter than Pact's own writer: a pact written by pact-python 4.2 validates too."""
    pact_module = pytest.importorskip("pact")
    pact = pact_module.Pact("writer", "reader").with_specification("V4")
    match = pact_module.match
    (
        pact.upon_receiving("a registration")
        .given("account 1 is not registered", {"account_id": "1"})
        .with_request("POST", "/limits/account")
        .with_body({"amount": match.int(5), "id": match.uuid()}, content_type="application/json")
        .will_respond_with(201)
        .with_body({"event_date": match.datetime("2026-11-21T10:00:00+00:00")}, content_type="application/json")
    )
    pact.write_file(tmp_path)
    import json

    written = json.loads((tmp_path / "writer-reader.json").read_text())
    jsonschema.validate(written, pact_schema())
    broken = {**written, "metadata": {"pactSpecification": {"version": "3.0.0"}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, pact_schema())


def test_an_event_lookup_names_the_event_as_answered_and_matches_what_the_provider_makes_up(flow) -> None:
    document, _ = flow
    pending = document["interactions"][0]
    assert pending["providerStates"] == [
        {
            "name": f"event {PENDING_EVENT} is pending conciliation",
            "params": {"key": PENDING_EVENT, **PENDING_EVENT_BODY},
        }
    ]
    assert pending["request"] == {"method": "GET", "path": EVENT_PATH + PENDING_EVENT}
    response = pending["response"]
    assert response["body"] == {"content": PENDING_EVENT_BODY, "contentType": "application/json", "encoded": False}
    assert response["headers"] == {"Content-Type": ["application/json"]}
    assert response["matchingRules"]["header"] == {"Content-Type": rule("^application/json(;.*)?$")}
    body = response["matchingRules"]["body"]
    # The key the client sent is echoed: literal. The other UUIDs, the dates and the amounts are the provider's.
    assert "$.extraordinary_event_conciliation_key" not in body
    assert body["$.security_key"] == body["$.investment_key"] == rule(UUID_REGEX)
    assert body["$.event_conciliation_list[1].installment_key"] == rule(UUID_REGEX)
    assert body["$.reference_date"] == body["$.due_date"] == rule(DATE_REGEX)
    assert body["$.total_expected_amount"] == body["$.total_paid_amount"] == NUMBER
    # Status words, enumerations and a null stay literal: a client branches on them.
    for literal in (
        "$.status",
        "$.paid_at",
        "$.amortization_type",
        "$.event_conciliation_list[0].event_conciliation_status",
    ):
        assert literal not in body


def test_the_evc100011_lookup_needs_the_event_absent_and_keeps_its_code_literal(flow) -> None:
    document, _ = flow
    missing = document["interactions"][2]
    key = "00000000-0000-4000-8000-000000000000"
    assert missing["providerStates"] == [{"name": f"event {key} does not exist", "params": {"key": key}}]
    assert missing["response"]["body"]["content"]["code"] == "EVC100011"
    assert missing["response"]["matchingRules"]["body"] == {"$.message": by_type()}


def test_account_states_carry_the_facts_as_they_stood_before_each_call(flow) -> None:
    document, _ = flow
    registered = {
        "account_id": ACCOUNT,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": day_night(500000, 300000)}},
    }
    first, conflict, raise_ = document["interactions"][3:6]
    assert first["providerStates"] == [
        {"name": f"account {ACCOUNT} is not registered", "params": {"account_id": ACCOUNT}}
    ]
    assert conflict["providerStates"] == [{"name": f"account {ACCOUNT} is registered", "params": registered}]
    assert conflict["response"]["body"]["content"]["code"] == "account_already_registered"
    # The limit change raises the day window: what the provider needs to answer awaiting_notification_period.
    assert raise_["providerStates"] == [{"name": f"account {ACCOUNT} is registered", "params": registered}]
    assert raise_["response"]["body"]["content"]["client_notification_status"] == "awaiting_notification_period"
    # Later calls see the limits the change left.
    last = document["interactions"][-1]
    assert last["providerStates"][0]["params"]["limit"] == {"pix": {"withdraw": day_night(600000, 300000)}}
    assert last["providerStates"][1] == {
        "name": f"account {ACCOUNT} has a recipient list",
        "params": {"account_id": ACCOUNT, "limit": {"pix": {"transaction": day_night(100000, 50000)}}},
    }


def test_recipient_states_name_the_document_and_the_id(flow) -> None:
    document, recipient_id = flow
    added, again, removed, gone = document["interactions"][8:12]
    assert added["providerStates"][2] == {
        "name": f"document {DOCUMENT} is not in the recipient list of account {ACCOUNT}",
        "params": {"account_id": ACCOUNT, "document_number": DOCUMENT},
    }
    # Named by the document as sent (bare); the params hold the recipient as it is held (punctuated).
    assert again["providerStates"][2] == {
        "name": f"document {DOCUMENT_BARE} is in the recipient list of account {ACCOUNT}",
        "params": {"account_id": ACCOUNT, "recipient_id": recipient_id, "document_number": DOCUMENT},
    }
    assert removed["providerStates"][2] == {
        "name": f"recipient {recipient_id} is in the recipient list of account {ACCOUNT}",
        "params": {"account_id": ACCOUNT, "recipient_id": recipient_id, "document_number": DOCUMENT},
    }
    assert gone["providerStates"][2] == {
        "name": f"recipient {recipient_id} is not in the recipient list of account {ACCOUNT}",
        "params": {"account_id": ACCOUNT, "recipient_id": recipient_id},
    }
    assert "body" not in removed["response"] and "body" not in removed["request"]


def test_what_the_provider_assigns_is_matched_by_type_or_format_and_echoes_stay_literal(flow) -> None:
    document, _ = flow
    registered = document["interactions"][3]["response"]["matchingRules"]["body"]
    assert registered == {"$.event_date": rule(DATE_TIME_REGEX)}  # account_id echoes the request: literal
    added = document["interactions"][8]["response"]["matchingRules"]["body"]
    assert added == {"$.recipient_id": by_type(), "$.event_date": rule(DATE_TIME_REGEX)}
    proposal = document["interactions"][5]["response"]["matchingRules"]["body"]
    assert proposal == {"$.limit_update_request_id": by_type(), "$.event_date": rule(DATE_TIME_REGEX)}


def test_request_bodies_carry_rules_from_the_request_schema(flow, specs) -> None:
    document, _ = flow
    document_pattern = specs.public.document["components"]["schemas"]["DocumentNumber"]["pattern"]
    start_time_pattern = specs.public.document["components"]["schemas"]["StartTime"]["pattern"]
    added = document["interactions"][8]["request"]
    assert added["headers"] == {"Content-Type": ["application/json"]}
    assert added["body"]["content"] == {"document_number": DOCUMENT}
    assert added["matchingRules"]["body"] == {"$.document_number": rule(document_pattern)}
    registration_rules = document["interactions"][3]["request"]["matchingRules"]["body"]
    assert registration_rules["$.registration_date"] == rule(DATE_TIME_REGEX)
    assert registration_rules["$.limit.pix.withdraw[1].amount"] == INTEGER
    assert registration_rules["$.limit.pix.withdraw[0].start_time"] == rule(start_time_pattern)


def test_every_regex_matches_the_value_it_was_drawn_from(flow) -> None:
    """A rule the recorded value itself fails would fail every provider."""
    document, _ = flow
    for interaction in document["interactions"]:
        for part in ("request", "response"):
            message = interaction[part]
            content = message.get("body", {}).get("content")
            for path, found in message.get("matchingRules", {}).get("body", {}).items():
                value = _at(content, path)
                for matcher in found["matchers"]:
                    if matcher["match"] == "regex":
                        assert re.search(matcher["regex"], value), (interaction["description"], path, value)


def _at(value: Any, path: str) -> Any:
    for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", path):
        value = value[key] if key else value[int(index)]
    return value


def test_calls_of_one_kind_are_one_interaction_the_least_kept(client) -> None:
    """Same operation, status, request shape and states (values aside): one interaction, the one whose request
    sorts first (whatever order the calls came in)."""
    for key in (PENDING_EVENT, PARTIALLY_PAID_EVENT):  # two pending events: one kind
        assert client.get(EVENT_PATH + key).status_code == 200
    assert client.get(EVENT_PATH + PAID_EVENT).status_code == 200  # a paid one relies on another state
    for account_id in ("0009-000001", "0009-000002"):
        assert client.post("/limits/account", json=registration(account_id)).status_code == 201
    two_modes = registration("0009-000003", change=day_night(1, 2))
    assert client.post("/limits/account", json=two_modes).status_code == 201  # same shape: `withdraw` -> `change`
    three_windows = registration("0009-000004", withdraw=day_night(1, 2))
    assert client.post("/limits/account", json=three_windows).status_code == 201  # another shape: two windows
    descriptions = [i["description"] for i in export(client)["interactions"]]
    assert descriptions == sorted(
        [
            f"a lookup of event {min(PENDING_EVENT, PARTIALLY_PAID_EVENT)} (pending_conciliation), answered 200",
            f"a lookup of event {PAID_EVENT} (paid), answered 200",
            "a registration of account 0009-000001, answered 201",
            "a registration of account 0009-000003, answered 201",
            "a registration of account 0009-000004, answered 201",
        ]
    )


def test_one_description_twice_is_told_apart(client) -> None:
    assert client.post("/limits/account", json=registration("0009-000001")).status_code == 201
    assert client.post("/limits/account", json=registration("0009-000001", flag=[])).status_code == 400
    other = registration("0009-000001", withdraw=day_night(1, 2))
    assert client.post(limit_update_path("0009-000001"), json={"pix": other["limit"]["pix"]}).status_code == 201
    lowered = {"pix": {"withdraw": day_night(0, 0), "change": day_night(0, 0)}}
    assert client.post(limit_update_path("0009-000001"), json=lowered).status_code == 201
    descriptions = [i["description"] for i in export(client)["interactions"]]
    assert descriptions == [
        "a limit change for account 0009-000001, answered 201",
        "a limit change for account 0009-000001, answered 201 (2)",
        "a registration of account 0009-000001, answered 201",
        "a registration of account 0009-000001, answered 400 invalid_request",
    ]


def test_a_refused_call_relies_on_no_state_and_its_details_are_the_providers_wording(client) -> None:
    bad = registration(ACCOUNT, withdraw=[{"start_time": "06:00", "amount": -1}])
    assert client.post("/limits/account", json=bad).status_code == 400
    (refused,) = export(client)["interactions"]
    assert "providerStates" not in refused
    assert refused["response"]["body"]["content"]["code"] == "invalid_request"
    assert refused["response"]["matchingRules"]["body"] == {"$.message": by_type(), "$.details": by_type(min=0)}


def test_the_scenarios_records_are_states_too(client) -> None:
    """An account of the scenario is named with its seed's facts: a provider can be set up from them alone."""
    raised = {"pix": {"withdraw": day_night(900000, 900000)}}
    assert client.post(limit_update_path(FULL_ACCOUNT), json=raised).status_code == 201
    (change,) = export(client)["interactions"]
    account = client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()
    (state,) = change["providerStates"]
    assert state["name"] == f"account {FULL_ACCOUNT} is registered"
    assert state["params"]["registration_date"] == account["registration_date"]
    assert state["params"]["limit"]["pix"]["withdraw"] == day_night(500000, 300000)  # before the change


def test_calls_answered_by_injected_faults_and_the_servers_bounds_are_left_out_and_listed(client) -> None:
    add_fault(client, operation_id="getExtraordinaryEvent", status=503)
    assert client.get(EVENT_PATH + PENDING_EVENT).status_code == 503
    add_fault(client, operation_id="getExtraordinaryEvent", status=404, body={"code": "EVC100011", "message": "x"})
    assert client.get(EVENT_PATH + PENDING_EVENT).status_code == 404
    sent = client.post("/limits/account", content=b"{}", headers={"Content-Type": "text/plain"})
    assert sent.status_code == 415
    assert client.head(EVENT_PATH + PENDING_EVENT).status_code == 200
    assert client.get(EVENT_PATH + PENDING_EVENT).status_code == 200
    journal = client.get("/__mock/requests").json()["requests"]
    assert [e.get("injected", False) for e in journal] == [True, True, False, False, False]
    document = export(client)
    assert [i["description"] for i in document["interactions"]] == [
        f"a lookup of event {PENDING_EVENT} (pending_conciliation), answered 200"
    ]
    path = EVENT_PATH + PENDING_EVENT
    assert document["metadata"]["mockServer"] == {
        "calls": 5,
        "leftOut": [  # sorted, so a pact is the same whatever order its calls came in
            {"method": "GET", "path": path, "status": 404, "reason": "an injected fault answered"},
            {"method": "GET", "path": path, "status": 503, "reason": "an injected fault answered"},
            {"method": "HEAD", "path": path, "status": 200, "reason": "HEAD (the GET is the contract)"},
            {
                "method": "POST",
                "path": "/limits/account",
                "status": 415,
                "reason": "a refusal of the server's bounds or of the transport",
            },
        ],
    }


def test_each_session_exports_its_own_calls_named_by_header_or_url(client) -> None:
    assert client.get(EVENT_PATH + PENDING_EVENT, headers={"X-Mock-Session": "one"}).status_code == 200
    assert client.get(f"/__session/two{EVENT_PATH}{PAID_EVENT}").status_code == 200
    one = export(client, **{"X-Mock-Session": "one"})
    two = client.get(f"/__session/two{PACT}").json()
    assert [i["request"]["path"] for i in one["interactions"]] == [EVENT_PATH + PENDING_EVENT]
    assert [i["request"]["path"] for i in two["interactions"]] == [EVENT_PATH + PAID_EVENT]
    assert export(client)["interactions"] == []  # the default session made no call


def test_the_export_changes_nothing(client) -> None:
    run_flow(client)
    state = client.get("/__mock/state").json()
    journal = client.get("/__mock/requests").json()
    assert export(client) == export(client)
    assert client.get("/__mock/state").json() == state
    assert client.get("/__mock/requests").json() == journal


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("", ["consumer", "provider"]),
        (f"?consumer={CONSUMER}", ["provider"]),
        ("?consumer=&provider=p", ["consumer"]),
    ],
)
def test_the_names_are_required(client, query, fields) -> None:
    assert_error(client.get(f"/__mock/pact{query}"), 400, "invalid_request", fields)


def test_without_a_journal_there_is_no_pact(make_client) -> None:
    with make_client(bounds=Bounds(journal_bytes=0)) as http:
        assert http.get(EVENT_PATH + PENDING_EVENT).status_code == 200
        assert_error(http.get(PACT), 409, "journal_off")


def test_the_admin_token_guards_the_export(make_client) -> None:
    with make_client(admin_token="s3cret") as http:
        assert_error(http.get(PACT), 401, "unauthorized")
        assert http.get(PACT, headers={"Authorization": "Bearer s3cret"}).status_code == 200
