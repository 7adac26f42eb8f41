"""POST /__mock/pact/states: the provider-state handler a Pact verifier calls, through HTTP as the verifier sends
it (`{"state", "params", "action"}`), each state checked by what the public API then answers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from mock_server.admin.provider_states import STATES, kind_of
from tests.builders import day_night, limit_update_path, recipient_list_path, registration
from tests.default_scenario import (
    CANCELED_EVENT,
    FULL_ACCOUNT,
    PENDING_EVENT,
    PENDING_EVENT_BODY,
    UNKNOWN_EVENT,
)
from tests.helpers import assert_error
from tests.pact_flow import ACCOUNT, CONSUMER, DOCUMENT, DOCUMENT_BARE, EVENT_PATH, PROVIDER, run_flow

STATES_URL = "/__mock/pact/states"
RECIPIENT_ID = "rcp-0001"


# Not `setup`: pytest before 8.1 calls a module-level function of that name before the module's tests (xunit style),
# and `make lowest-check` runs this module at the `pytest` extra's floor.
def change_state(
    client: Any, state: str, params: dict[str, Any] | None = None, action: str = "setup"
) -> dict[str, Any]:
    body: dict[str, Any] = {"state": state, "action": action}
    if params is not None:
        body["params"] = params
    response = client.post(STATES_URL, json=body)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert answer["state"] == state and answer["action"] == action
    return answer


def registered(account_id: str = ACCOUNT, **pix: Any) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": pix or {"withdraw": day_night(500000, 300000)}},
    }


def test_a_new_account_is_registered_with_the_facts_given(client) -> None:
    change_state(client, f"account {ACCOUNT} is registered", registered())
    account = client.get(f"/__mock/accounts/{ACCOUNT}").json()
    assert account["registration_date"] == "2026-11-21T09:00:00-03:00"
    assert account["limit"] == {"pix": {"withdraw": day_night(500000, 300000)}}
    # What the limits decide: a raise of the day window waits for the notification period.
    raised = client.post(limit_update_path(ACCOUNT), json={"pix": {"withdraw": day_night(600000, 300000)}})
    assert raised.json()["client_notification_status"] == "awaiting_notification_period"


def test_an_account_of_the_scenario_takes_the_limits_given_and_keeps_its_list(client) -> None:
    change_state(client, f"account {FULL_ACCOUNT} is registered", registered(FULL_ACCOUNT, change=day_night(1, 1)))
    account = client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()
    assert account["limit"] == {"pix": {"change": day_night(1, 1)}}
    assert len(account["recipient_list"]["recipients"]) == 2


def test_a_name_alone_holds_when_the_fact_does(client) -> None:
    assert change_state(client, f"account {FULL_ACCOUNT} is registered")["reset"] is True
    assert_error(
        client.post(STATES_URL, json={"state": f"account {ACCOUNT} is registered"}), 409, "provider_state_unreachable"
    )


def test_outcomes_given_are_the_words_the_account_answers_with(client) -> None:
    outcomes = {
        "limit_update_request": {"analysis_status": "pending_analysis", "limit_update_request_status": "pending"}
    }
    change_state(client, f"account {ACCOUNT} is registered", {**registered(), "outcomes": outcomes})
    proposal = client.post(limit_update_path(ACCOUNT), json={"pix": {"withdraw": day_night(1, 1)}}).json()
    assert (proposal["analysis_status"], proposal["limit_update_request_status"]) == ("pending_analysis", "pending")


def test_an_account_registered_by_the_session_can_be_made_absent_one_of_the_scenario_cannot(client) -> None:
    assert client.post("/limits/account", json=registration(ACCOUNT)).status_code == 201
    change_state(client, f"account {ACCOUNT} is not registered", {"account_id": ACCOUNT})
    # The call above was answered: the setup started afresh, and the account is gone either way.
    assert client.post("/limits/account", json=registration(ACCOUNT)).status_code == 201
    change_state(client, f"account {ACCOUNT} is registered", registered())
    change_state(client, f"account {ACCOUNT} is not registered", {"account_id": ACCOUNT})  # same interaction: removed
    assert client.get(f"/__mock/accounts/{ACCOUNT}").status_code == 404
    body = assert_error(
        client.post(STATES_URL, json={"state": f"account {FULL_ACCOUNT} is not registered"}),
        409,
        "provider_state_unreachable",
    )
    assert FULL_ACCOUNT in body["message"] and "default" in body["message"]


def test_recipient_list_states(client) -> None:
    change_state(client, f"account {ACCOUNT} is registered", registered())
    transaction = {"pix": {"transaction": day_night(100000, 50000)}}
    change_state(client, f"account {ACCOUNT} has a recipient list", {"account_id": ACCOUNT, "limit": transaction})
    assert client.get(f"/__mock/accounts/{ACCOUNT}").json()["recipient_list"]["limit"] == transaction
    assert client.post(recipient_list_path(ACCOUNT), json={"limit": transaction}).status_code == 409
    change_state(client, f"account {FULL_ACCOUNT} has no recipient list", {"account_id": FULL_ACCOUNT})
    assert "recipient_list" not in client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()
    assert client.post(recipient_list_path(FULL_ACCOUNT), json={"limit": transaction}).status_code == 201


def test_a_list_needs_its_account_and_its_limit(client) -> None:
    body = assert_error(
        client.post(STATES_URL, json={"state": f"account {ACCOUNT} has a recipient list"}),
        409,
        "provider_state_unreachable",
    )
    assert f"account {ACCOUNT} is registered" in body["message"]
    change_state(client, f"account {ACCOUNT} is registered", registered())
    assert_error(
        client.post(STATES_URL, json={"state": f"account {ACCOUNT} has a recipient list"}),
        409,
        "provider_state_unreachable",
        ["params.limit"],
    )


def list_of(client: Any, account_id: str) -> list[dict[str, Any]]:
    recipients: list[dict[str, Any]] = client.get(f"/__mock/accounts/{account_id}").json()["recipient_list"][
        "recipients"
    ]
    return recipients


def test_recipient_states_hold_the_document_under_the_id_given(client) -> None:
    change_state(client, f"account {ACCOUNT} is registered", registered())
    change_state(
        client,
        f"account {ACCOUNT} has a recipient list",
        {"account_id": ACCOUNT, "limit": {"pix": {"transaction": day_night(1, 1)}}},
    )
    change_state(
        client,
        f"recipient {RECIPIENT_ID} is in the recipient list of account {ACCOUNT}",
        {"account_id": ACCOUNT, "recipient_id": RECIPIENT_ID, "document_number": DOCUMENT},
    )
    assert [(r["recipient_id"], r["document_number"]) for r in list_of(client, ACCOUNT)] == [(RECIPIENT_ID, DOCUMENT)]
    # The same document under another id replaces it: one recipient a document.
    change_state(
        client,
        f"document {DOCUMENT_BARE} is in the recipient list of account {ACCOUNT}",
        {"account_id": ACCOUNT, "recipient_id": "rcp-0002", "document_number": DOCUMENT_BARE},
    )
    assert [r["recipient_id"] for r in list_of(client, ACCOUNT)] == ["rcp-0002"]
    adding = client.post(recipient_list_path(ACCOUNT) + "/recipient", json={"document_number": DOCUMENT})
    assert_error(adding, 409, "recipient_already_in_list")


def test_recipient_absence_states_remove_by_id_or_by_document_in_any_layout(client) -> None:
    recipients = list_of(client, FULL_ACCOUNT)
    first, second = recipients
    change_state(client, f"recipient {first['recipient_id']} is not in the recipient list of account {FULL_ACCOUNT}")
    assert [r["recipient_id"] for r in list_of(client, FULL_ACCOUNT)] == [second["recipient_id"]]
    bare = second["document_number"].replace(".", "").replace("/", "").replace("-", "")
    change_state(client, f"document {bare} is not in the recipient list of account {FULL_ACCOUNT}")
    assert list_of(client, FULL_ACCOUNT) == []
    removed = client.delete(f"{recipient_list_path(FULL_ACCOUNT)}/recipient/{first['recipient_id']}")
    assert_error(removed, 404, "recipient_not_found")


def test_a_recipient_without_an_id_gets_one_of_the_session(client) -> None:
    change_state(client, f"document {DOCUMENT} is in the recipient list of account {FULL_ACCOUNT}")
    assert DOCUMENT in [r["document_number"] for r in list_of(client, FULL_ACCOUNT)]


def test_an_event_is_made_as_the_params_show_it(client) -> None:
    paid = {
        **PENDING_EVENT_BODY,
        "total_paid_amount": 1500,
        "status": "paid",
        "paid_at": "2026-11-20",
        "event_conciliation_list": [
            {**i, "event_conciliation_status": "paid"} for i in PENDING_EVENT_BODY["event_conciliation_list"]
        ],
    }
    change_state(client, f"event {PENDING_EVENT} is paid", {"key": PENDING_EVENT, **paid})
    assert client.get(EVENT_PATH + PENDING_EVENT).json() == paid
    made = {
        **paid,
        "extraordinary_event_conciliation_key": UNKNOWN_EVENT,
        "event_conciliation_list": [
            {**i, "event_conciliation_key": f"{UNKNOWN_EVENT[:-1]}{n}"}
            for n, i in enumerate(paid["event_conciliation_list"])
        ],
    }
    change_state(client, f"event {UNKNOWN_EVENT} is paid", {"key": UNKNOWN_EVENT, **made})
    assert client.get(EVENT_PATH + UNKNOWN_EVENT).json() == made


def test_an_event_state_refuses_params_that_contradict_it(client) -> None:
    params = {"key": PENDING_EVENT, **PENDING_EVENT_BODY}
    assert_error(
        client.post(STATES_URL, json={"state": f"event {PENDING_EVENT} is paid", "params": params}),
        409,
        "provider_state_unreachable",
        ["params.status"],
    )
    wrong_money = {**params, "total_paid_amount": 9999}
    assert_error(
        client.post(
            STATES_URL, json={"state": f"event {PENDING_EVENT} is pending conciliation", "params": wrong_money}
        ),
        409,
        "provider_state_unreachable",
        ["params.total_paid_amount"],
    )
    partial = {"key": PENDING_EVENT, "status": "pending_conciliation"}
    assert_error(
        client.post(STATES_URL, json={"state": f"event {PENDING_EVENT} is pending conciliation", "params": partial}),
        409,
        "provider_state_unreachable",
    )
    assert_error(
        client.post(STATES_URL, json={"state": f"event {CANCELED_EVENT} is paid"}),
        409,
        "provider_state_unreachable",
        ["params"],
    )
    change_state(client, f"event {CANCELED_EVENT} is canceled")  # the name alone: the scenario's event is so already


def test_an_event_the_session_made_can_be_made_absent_one_of_the_scenario_cannot(client) -> None:
    assert client.get(EVENT_PATH + UNKNOWN_EVENT).status_code == 404
    made = {
        **PENDING_EVENT_BODY,
        "extraordinary_event_conciliation_key": UNKNOWN_EVENT,
        "event_conciliation_list": [
            {**PENDING_EVENT_BODY["event_conciliation_list"][0], "event_conciliation_key": UNKNOWN_EVENT}
        ],
    }
    change_state(client, f"event {UNKNOWN_EVENT} is pending conciliation", {"key": UNKNOWN_EVENT, **made})
    change_state(client, f"event {UNKNOWN_EVENT} does not exist")
    assert client.get(EVENT_PATH + UNKNOWN_EVENT).status_code == 404
    assert_error(
        client.post(STATES_URL, json={"state": f"event {PENDING_EVENT} does not exist"}),
        409,
        "provider_state_unreachable",
    )


def test_each_interaction_starts_afresh_and_its_states_add_up(client) -> None:
    """What a verifier does: the setups of one interaction, its request, then the next interaction's setups."""
    assert change_state(client, f"account {ACCOUNT} is registered", registered())["reset"] is True  # the first ever
    assert change_state(client, f"account {ACCOUNT} has no recipient list")["reset"] is False
    assert client.post(limit_update_path(ACCOUNT), json={"pix": {"withdraw": day_night(1, 1)}}).status_code == 201
    assert change_state(client, f"account {ACCOUNT} is registered", action="teardown")["reset"] is False
    assert client.get(f"/__mock/accounts/{ACCOUNT}").status_code == 200  # teardown changed nothing
    assert change_state(client, "")["reset"] is True  # the next interaction, with no state: afresh
    assert client.get(f"/__mock/accounts/{ACCOUNT}").status_code == 404
    assert client.get("/__mock/requests").json()["requests"] == []


def test_the_session_goes_back_to_its_own_scenario(client) -> None:
    assert client.post("/__mock/reset", json={"scenario": "empty"}).status_code == 200
    change_state(client, "")
    assert client.get("/__mock/scenarios").json()["active"] == "empty"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"state": "the moon is full"}, ["state"]),
        ({"state": f"account {ACCOUNT} is registered", "params": {"limit": 1}}, ["params.limit"]),
        (
            {"state": f"event {PENDING_EVENT} does not exist", "params": {"key": "x", "status": "paid"}},
            ["params.key", "params.status"],
        ),
        (
            {"state": "recipient 1 is in the recipient list of account 2", "params": {"document_number": "1"}},
            ["params.document_number"],
        ),
        ({"state": f"event {PENDING_EVENT} does not exist", "action": "destroy"}, ["action"]),
        ({"params": {}}, ["state"]),
    ],
)
def test_what_no_state_is_gets_a_400_naming_it(client, body, fields) -> None:
    assert_error(client.post(STATES_URL, json=body), 400, "invalid_request", fields)


def test_a_value_in_the_name_its_fact_cannot_hold_is_a_409(client) -> None:
    body = {"state": f"document 123 is in the recipient list of account {FULL_ACCOUNT}"}
    assert_error(client.post(STATES_URL, json=body), 409, "provider_state_unreachable", ["params.document_number"])


def _differences(expected: Any, actual: Any, rules: dict[str, Any], path: str = "$") -> list[str]:
    """Where `actual` breaks what a pact expects (a reading of Pact's rules for the ones the export writes: a
    regex, a type, an integer, a number; everything else equal; an object may hold more keys)."""
    found = rules.get(path)
    if found is not None:
        (matcher,) = found["matchers"]
        if matcher["match"] == "regex":
            ok = isinstance(actual, str) and re.search(matcher["regex"], actual) is not None
        elif matcher["match"] == "number":
            ok = isinstance(actual, (int, float)) and not isinstance(actual, bool)
        elif matcher["match"] == "integer":
            ok = isinstance(actual, int) and not isinstance(actual, bool)
        else:
            ok = type(actual) is type(expected)
        return [] if ok else [f"{path}: {actual!r} breaks {matcher}"]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: {actual!r} is not an object"]
        return [
            problem
            for key, value in expected.items()
            for problem in (
                _differences(value, actual[key], rules, f"{path}.{key}")
                if key in actual
                else [f"{path}.{key}: missing"]
            )
        ]
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: {actual!r} is not a list of {len(expected)}"]
        return [
            p
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for p in _differences(e, a, rules, f"{path}[{i}]")
        ]
    return [] if expected == actual else [f"{path}: {actual!r} is not {expected!r}"]


def test_the_exported_pact_replays_against_a_session_with_other_ids_using_only_the_states(client) -> None:
    """In process, what Pact's verifier does (tests/e2e/test_pact_verification.py runs the real one): each
    interaction's states set up, its request sent, its answer held to the pact's rules, in a session whose ids
    come from another seed and whose clock stands elsewhere."""
    run_flow(client)
    pact = client.get(f"/__mock/pact?consumer={CONSUMER}&provider={PROVIDER}").json()
    made = client.post("/__mock/sessions", json={"name": "provider", "seed": 99})
    assert made.status_code == 201, made.text
    provider = {"X-Mock-Session": "provider"}
    assert client.put("/__mock/clock", json={"now": "2031-05-06T07:08:09Z"}, headers=provider).status_code == 200
    report = []
    for interaction in pact["interactions"]:
        for state in interaction.get("providerStates", [{"name": "", "params": {}}]):
            body = {"state": state["name"], "params": state["params"], "action": "setup"}
            changed = client.post(STATES_URL, json=body, headers=provider)
            assert changed.status_code == 200, (state, changed.text)
        request, expected = interaction["request"], interaction["response"]
        sent = client.request(
            request["method"],
            request["path"],
            json=request["body"]["content"] if "body" in request else None,
            headers=provider,
        )
        problems = [] if sent.status_code == expected["status"] else [f"status {sent.status_code}"]
        if "body" in expected:
            rules = expected.get("matchingRules", {}).get("body", {})
            problems += _differences(expected["body"]["content"], sent.json(), rules)
        report += [f"{interaction['description']}: {p}" for p in problems]
    assert report == []
    recipient = pact["interactions"][8]["response"]["body"]["content"]["recipient_id"]
    replayed = client.get("/__mock/requests", headers=provider).json()["requests"][-1]
    assert replayed["path"].endswith("limit_update_request")
    assert recipient not in str(client.get("/__mock/state", headers=provider).json())  # the seed made other ids


def test_every_state_the_handler_knows_is_written_once() -> None:
    templates = [kind.template for kind in STATES]
    assert len(set(templates)) == len(templates)
    for kind in STATES:
        values = {name: f"<{name}>" for name in kind.placeholders}
        found = kind_of(kind.name(**values))
        assert found is not None and found[0] is kind, kind.template


def _state_bytes(client: Any) -> int:
    (session,) = [s for s in client.get("/__mock/sessions").json()["sessions"] if s["name"] == "default"]
    return int(session["state_bytes"])


def test_provider_states_count_what_they_put_and_give_back_what_they_take(client) -> None:
    """Issue 24: what a provider state puts in the session counts against its bound like any write, and what one
    takes away gives its bytes back (the count never drifts below what the session holds)."""
    client.get("/__mock/clock")
    empty = _state_bytes(client)
    change_state(client, f"account {ACCOUNT} is registered", registered())
    with_account = _state_bytes(client)
    assert with_account > empty
    transaction = {"pix": {"transaction": day_night(100000, 50000)}}
    change_state(client, f"account {ACCOUNT} has a recipient list", {"account_id": ACCOUNT, "limit": transaction})
    with_list = _state_bytes(client)
    assert with_list > with_account
    change_state(client, f"account {ACCOUNT} has no recipient list", {"account_id": ACCOUNT})
    assert _state_bytes(client) == with_account
    change_state(client, f"account {ACCOUNT} is not registered", {"account_id": ACCOUNT})
    assert _state_bytes(client) == empty
