"""The Pact export's pure rules: matching rules from a schema, merging a run's documents, file names."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mock_server.admin.pact import export_pact, merge_pacts, pact_file_name
from mock_server.admin.pact_matching import DATE_TIME_REGEX, UUID_REGEX, rules_for
from mock_server.api.handlers import HANDLERS
from mock_server.domain.models import Scenario
from tests.default_scenario import PENDING_EVENT

MONEY = {"type": "number", "minimum": 0}


def regex(pattern: str) -> dict[str, Any]:
    return {"combine": "AND", "matchers": [{"match": "regex", "regex": pattern}]}


def test_rules_follow_the_schema_through_refs_folded_into_all_of() -> None:
    schema = {
        "type": "object",
        "properties": {
            "key": {"allOf": [{"type": "string", "format": "uuid"}], "description": "a $ref with a sibling"},
            "when": {"type": "string", "format": "date-time"},
            "amounts": {"type": "array", "items": {"type": "object", "properties": {"cents": {"type": "integer"}}}},
            "total": MONEY,
            "word": {"type": "string", "pattern": "^[a-z]+$"},
            "status": {"type": "string", "enum": ["paid"]},
            "thing_id": {"type": "string"},
            "message": {"type": "string"},
            "flag": {"type": "boolean"},
            "gone": {"type": ["string", "null"], "format": "date"},
            "odd key": {"type": "string", "format": "uuid"},
        },
    }
    value = {
        "key": PENDING_EVENT,
        "when": "2026-11-21T10:00:00.000-03:00",
        "amounts": [{"cents": 1}, {"cents": 2}],
        "total": 1.5,
        "word": "abc",
        "status": "paid",
        "thing_id": "t-1",
        "message": "Hello.",
        "flag": True,
        "gone": None,
        "odd key": PENDING_EVENT,
        "unknown": "x",
    }
    assert rules_for(value, schema) == {
        "$.key": regex(UUID_REGEX),
        "$.when": regex(DATE_TIME_REGEX),
        "$.amounts[0].cents": {"combine": "AND", "matchers": [{"match": "integer"}]},
        "$.amounts[1].cents": {"combine": "AND", "matchers": [{"match": "integer"}]},
        "$.total": {"combine": "AND", "matchers": [{"match": "number"}]},
        "$.word": regex("^[a-z]+$"),
        "$.thing_id": {"combine": "AND", "matchers": [{"match": "type"}]},
        "$.message": {"combine": "AND", "matchers": [{"match": "type"}]},
        "$['odd key']": regex(UUID_REGEX),
    }


def test_a_value_the_client_sent_stays_literal_wherever_it_is_echoed() -> None:
    schema = {"type": "object", "properties": {"account_id": {"type": "string", "pattern": "^[^/]*$"}}}
    assert rules_for({"account_id": "0001-1"}, schema, echoes=["0001-1"]) == {}
    assert rules_for({"account_id": "0001-2"}, schema, echoes=["0001-1"]) == {"$.account_id": regex("^[^/]*$")}


def interaction(key: str, description: str) -> dict[str, Any]:
    return {"type": "Synchronous/HTTP", "key": key, "description": description, "request": {}, "response": {}}


def document(*interactions: dict[str, Any], calls: int = 1, left_out: list[Any] | None = None) -> dict[str, Any]:
    return {
        "consumer": {"name": "c"},
        "provider": {"name": "p"},
        "interactions": list(interactions),
        "metadata": {
            "pactSpecification": {"version": "4.0"},
            "mockServer": {"calls": calls, "leftOut": left_out or []},
        },
    }


def test_merging_a_runs_documents_keeps_each_interaction_once_sorted_whatever_their_order() -> None:
    skipped = {"method": "GET", "path": "/x", "status": 503, "reason": "a server error"}
    merged = merge_pacts(
        [
            document(interaction("a", "one"), interaction("b", "two"), calls=3, left_out=[skipped]),
            document(interaction("b", "two"), interaction("c", "one"), calls=2, left_out=[skipped]),
        ]
    )
    assert [(i["key"], i["description"]) for i in merged["interactions"]] == [
        ("a", "one"),
        ("c", "one (2)"),
        ("b", "two"),
    ]
    assert merged["metadata"] == {
        "pactSpecification": {"version": "4.0"},
        "mockServer": {"calls": 5, "leftOut": [skipped]},
    }
    assert (merged["consumer"], merged["provider"]) == ({"name": "c"}, {"name": "p"})


def test_merging_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no pact"):
        merge_pacts([])


@pytest.mark.parametrize(
    ("consumer", "provider", "name"),
    [("ci-consumer", "pix-limits", "ci-consumer-pix-limits.json"), ("a/b", "c\\d", "a_b-c_d.json")],
)
def test_the_file_is_named_as_pact_tools_name_it(consumer, provider, name) -> None:
    assert pact_file_name(consumer, provider) == name


def test_the_replay_answers_journaled_calls_through_the_public_apis_handlers(specs) -> None:
    """The states a pact names come from the calls answered again by api/handlers.HANDLERS (the server's own), with
    the instant and the id the journal shows: a handler that answers differently changes the states."""
    account: dict[str, Any] = {"account_id": "0007-000001", "registration_date": "2026-11-21T10:00:00-03:00"}
    account["limit"] = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 500000}]}}
    recipient_id = "0f0f0f0f-0000-4000-8000-000000000001"

    def entry(operation_id: str, path: str, status: int, body: Any, answer: Any) -> dict[str, Any]:
        return {
            "operation_id": operation_id,
            "method": "POST" if body is not None else "DELETE",
            "path": path,
            "status": status,
            "request_body": body,
            "response_body": answer,
            "received_at": "2026-11-21T10:00:00-03:00",
        }

    on = "/limits/account/0007-000001/recipient_list"
    listed = {"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 1000}]}}}
    entries = [
        entry("registerAccountLimit", "/limits/account", 201, account, {"account_id": "0007-000001"}),
        entry("createRecipientList", on, 201, listed, {"event_date": "2026-11-21T10:00:00.000-03:00"}),
        entry(
            "addRecipient", on + "/recipient", 201, {"document_number": "52998224725"}, {"recipient_id": recipient_id}
        ),
        entry("removeRecipient", f"{on}/recipient/{recipient_id}", 204, None, None),
    ]
    answered: list[str] = []

    def spying(name: str) -> Any:
        def handler(call: Any) -> Any:
            answered.append(name)
            return HANDLERS[name](call)

        return handler

    server = SimpleNamespace(specs=specs, public_handlers={name: spying(name) for name in HANDLERS})
    document = export_pact(entries, Scenario("empty", ""), server, "c", "p")  # type: ignore[arg-type]
    assert answered == ["registerAccountLimit", "createRecipientList", "addRecipient", "removeRecipient"]
    (removal,) = [i for i in document["interactions"] if i["request"]["method"] == "DELETE"]
    held = removal["providerStates"][-1]
    stable_id = removal["request"]["path"].rsplit("/", 1)[1]  # the pact's own id for the recipient, not the run's
    assert stable_id != recipient_id
    assert held["params"] == {"account_id": "0007-000001", "recipient_id": stable_id, "document_number": "52998224725"}
    assert removal["providerStates"][0]["params"]["registration_date"] == account["registration_date"]

    server.public_handlers = {}  # no handler: nothing is replayed, so no state holds the recipient's document
    bare = export_pact(entries, Scenario("empty", ""), server, "c", "p")  # type: ignore[arg-type]
    (removal,) = [i for i in bare["interactions"] if i["request"]["method"] == "DELETE"]
    assert "document_number" not in removal["providerStates"][-1]["params"]
