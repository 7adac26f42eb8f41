"""GET /__mock/pact is the same, byte for byte, for the same calls (whatever the session, its ids and its clock,
whatever order a run's sessions are merged in), says what the mock defined, takes amounts literally on request,
keeps only rules its own examples meet, and is drawn off the event loop."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import httpx
import pytest

from mock_server.admin import pact
from mock_server.admin.pact import CLOCK_DATE, CLOCK_INSTANT, merge_pacts
from mock_server.app import create_app
from mock_server.settings import Settings
from tests.builders import registration
from tests.default_scenario import CANCELED_EVENT, PENDING_EVENT
from tests.pact_flow import ACCOUNT, CONSUMER, EVENT_PATH, PROVIDER, run_flow

PACT = f"/__mock/pact?consumer={CONSUMER}&provider={PROVIDER}"


def in_session(client: Any, name: str) -> Any:
    client.headers["X-Mock-Session"] = name
    return client


def pact_bytes(client: Any, query: str = "") -> bytes:
    answer = client.get(PACT + query)
    assert answer.status_code == 200, answer.text
    content: bytes = answer.content
    return content


def test_the_same_flow_in_two_sessions_is_the_same_pact_byte_for_byte(client) -> None:
    """Each session issues its own random ids and answers at its own instants: the pact shows neither."""
    run_flow(in_session(client, "first"))
    first = pact_bytes(client)
    answered = client.get("/__mock/requests").json()["requests"]
    run_flow(in_session(client, "second"))
    assert pact_bytes(client) == first
    issued = [
        e["response_body"]["recipient_id"]
        for e in answered
        if e["operation_id"] == "addRecipient" and e["status"] == 201
    ]
    assert issued and issued[0].encode() not in first  # the run's own id appears nowhere
    document = json.loads(first)
    registered = [i for i in document["interactions"] if i["request"]["path"] == "/limits/account"]
    assert {i["response"]["body"]["content"].get("event_date") for i in registered} == {CLOCK_INSTANT, None}


def test_a_runs_sessions_merge_to_the_same_pact_in_any_order(client) -> None:
    documents = []
    for name in ("lookups", "accounts", "more-lookups"):
        in_session(client, name)
        if name == "accounts":
            run_flow(client)
        else:
            for key in (PENDING_EVENT, CANCELED_EVENT) if name == "lookups" else (CANCELED_EVENT,):
                assert client.get(EVENT_PATH + key).status_code == 200
        documents.append(json.loads(pact_bytes(client)))
    merged = [json.dumps(merge_pacts(order)) for order in (documents, documents[::-1], documents[1:] + documents[:1])]
    assert len(set(merged)) == 1
    descriptions = [i["description"] for i in json.loads(merged[0])["interactions"]]
    assert descriptions == sorted(descriptions) and len(descriptions) == 13


def test_a_date_the_providers_clock_wrote_is_an_example_and_no_session_is_named(client) -> None:
    """An event paid today (no `paid_at` given): its date is the real clock's, so the pact holds a fixed one."""
    name = "pytest-main-6947db41-16"
    assert client.post(f"/__session/{name}/__mock/events/{PENDING_EVENT}/pay").status_code == 200
    assert client.get(f"/__session/{name}{EVENT_PATH}{PENDING_EVENT}").status_code == 200
    assert client.head(f"/__session/{name}{EVENT_PATH}{PENDING_EVENT}").status_code == 200  # left out
    text = client.get(f"/__session/{name}{PACT}").text
    assert name not in text and "__session" not in text
    document = json.loads(text)
    (paid,) = document["interactions"]
    assert paid["description"] == f"a lookup of event {PENDING_EVENT} (paid), answered 200"
    assert paid["response"]["body"]["content"]["paid_at"] == CLOCK_DATE
    assert paid["providerStates"][0]["params"]["paid_at"] == CLOCK_DATE
    assert document["metadata"]["mockServer"]["leftOut"][0]["path"] == EVENT_PATH + PENDING_EVENT


def test_answers_the_mock_defined_are_flagged_or_left_out_on_request(client) -> None:
    run_flow(client)
    flagged = {
        i["description"]: i.get("comments", {}).get("text", [""])[0]
        for i in json.loads(pact_bytes(client))["interactions"]
    }
    conflict = f"a registration of account {ACCOUNT}, answered 409 account_already_registered"
    assert flagged[conflict].startswith("mock-defined: openapi.yaml marks this answer of registerAccountLimit")
    assert "status 409 and code account_already_registered" in flagged[conflict]
    # The interface's own answers: a lookup and its EVC100011.
    assert flagged[f"a lookup of event {PENDING_EVENT} (pending_conciliation), answered 200"] == ""
    assert flagged["a lookup of event 00000000-0000-4000-8000-000000000000, answered 404 EVC100011"] == ""
    omitted = json.loads(pact_bytes(client, "&mock_defined=omit"))
    assert [i["description"] for i in omitted["interactions"]] == sorted(d for d, f in flagged.items() if not f)
    left_out = omitted["metadata"]["mockServer"]["leftOut"]
    assert len(left_out) == 10 and {e["reason"] for e in left_out} == {
        "an answer openapi.yaml marks x-mock-defined (mock_defined=omit)"
    }


def test_amounts_are_matched_by_type_unless_asked_exact(client) -> None:
    assert client.get(EVENT_PATH + PENDING_EVENT).status_code == 200

    def lookup_rules(query: str) -> dict[str, Any]:
        (lookup,) = json.loads(pact_bytes(client, query))["interactions"]
        rules: dict[str, Any] = lookup["response"]["matchingRules"]["body"]
        return rules

    number = {"combine": "AND", "matchers": [{"match": "number"}]}
    assert lookup_rules("")["$.total_expected_amount"] == number
    exact = lookup_rules("&amounts=exact")
    assert "$.total_expected_amount" not in exact and "$.security_key" in exact  # formats still match by regex
    refused = client.get(PACT + "&amounts=cents")
    assert refused.status_code == 400 and refused.json()["details"][0]["field"] == "amounts"


def test_a_refused_requests_rules_are_ones_its_own_example_meets(client) -> None:
    """A date where a date-time belongs is refused (400): the pact's request keeps it literal, not a date-time
    regex it would fail itself."""
    refused = registration(ACCOUNT, registration_date="2026-11-21")
    assert client.post("/limits/account", json=refused).status_code == 400
    (interaction,) = json.loads(pact_bytes(client))["interactions"]
    rules = interaction["request"]["matchingRules"]["body"]
    assert "$.registration_date" not in rules and "$.limit.pix.withdraw[0].amount" in rules


@pytest.mark.parametrize("journaled", [40])
def test_a_pact_being_drawn_stalls_no_other_client(specs, monkeypatch, journaled: int) -> None:
    """The document is drawn in a worker thread, held there until a bystander has been answered: had it been
    drawn on the event loop, the bystander could never be answered (the held export gives up after 10 s and
    the test fails). No timing is measured."""
    app = create_app(Settings(), specs)
    drawing, release = threading.Event(), threading.Event()
    export = pact.export_pact

    def held_export(*args: Any) -> dict[str, Any]:
        drawing.set()
        assert release.wait(10), "the bystander was never answered while the pact was being drawn"
        return export(*args)

    monkeypatch.setattr(pact, "export_pact", held_export)  # imported by the handler when called

    async def exchange() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as http:
            exporter = {"X-Mock-Session": "exporter"}
            for _ in range(journaled):
                assert (await http.get(EVENT_PATH + PENDING_EVENT, headers=exporter)).status_code == 200
            exporting = asyncio.create_task(http.get(PACT, headers=exporter))
            assert await asyncio.to_thread(drawing.wait, 10), "the export never started"
            bystander = await http.get("/__mock/health")
            assert bystander.status_code == 200
            assert not exporting.done()  # answered while the pact was still being drawn
            release.set()
            answer = await exporting
            assert answer.status_code == 200
            assert len(answer.json()["interactions"]) == 1

    asyncio.run(exchange())


def test_a_state_the_handler_cannot_set_up_is_a_409_that_the_servers_log_explains(client, caplog) -> None:
    """Pact's verifier shows a state handler's status only: the reason is in the body and in the server's log."""
    state = {"state": "account 0001-123456 is not registered", "params": {"account_id": "0001-123456"}}
    with caplog.at_level("WARNING", logger="mock_server"):
        refused = client.post("/__mock/pact/states", json={**state, "action": "setup"})
    assert refused.status_code == 409 and refused.json()["code"] == "provider_state_unreachable"
    reason = refused.json()["message"]
    assert "in the scenario 'default'" in reason
    assert f"provider state 'account 0001-123456 is not registered' (setup) not set up: {reason}" in caplog.text
