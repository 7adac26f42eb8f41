"""The Pact export's pure rules: matching rules from a schema, merging a run's documents, file names."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.admin.pact import (
    DATE_TIME_REGEX,
    UUID_REGEX,
    merge_pacts,
    pact_file_name,
    rules_for,
)

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
        "key": "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11",
        "when": "2026-11-21T10:00:00.000-03:00",
        "amounts": [{"cents": 1}, {"cents": 2}],
        "total": 1.5,
        "word": "abc",
        "status": "paid",
        "thing_id": "t-1",
        "message": "Hello.",
        "flag": True,
        "gone": None,
        "odd key": "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11",
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


def test_merging_a_runs_documents_keeps_each_interaction_once_in_order() -> None:
    skipped = {"method": "GET", "path": "/x", "status": 503, "reason": "a server error"}
    merged = merge_pacts(
        [
            document(interaction("a", "one"), interaction("b", "two"), calls=3, left_out=[skipped]),
            document(interaction("b", "two"), interaction("c", "one"), calls=2, left_out=[skipped]),
        ]
    )
    assert [(i["key"], i["description"]) for i in merged["interactions"]] == [
        ("a", "one"),
        ("b", "two"),
        ("c", "one (2)"),
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
