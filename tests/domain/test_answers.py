"""The rule two answers to one call are compared by (verify-provider's and shadow mode's): pure, no HTTP."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest

from mock_server.domain.answers import Answer, Noise, differences, generated_id, pointer, rules_for

EVENT = {
    "total_paid_amount": 750.25,
    "status": "pending_conciliation",
    "paid_at": None,
    "event_conciliation_list": [{"event_conciliation_status": "pending_conciliation"}],
}
PROPOSAL = {
    "limit_update_request_id": "a",
    "analysis_status": "automatically_approved",
    "event_date": "2026-11-21T10:00:00.000-03:00",
}


def test_equal_answers_agree() -> None:
    assert differences(Answer(200, EVENT), Answer(200, dict(EVENT)), rules_for("getExtraordinaryEvent")) == []


def test_a_different_status_is_one_difference_whatever_the_bodies() -> None:
    found = differences(Answer(409, {"code": "x"}), Answer(201, {"account_id": "a"}), rules_for("registerAccountLimit"))
    assert found == ["status: expected 409, got 201"]


def test_two_errors_of_different_statuses_name_both_codes() -> None:
    found = differences(Answer(404, {"code": "a"}), Answer(400, {"code": "b"}), rules_for("addRecipient"))
    assert found == ["status: expected 404, got 400", '/code: expected "a", got "b"']


def test_an_error_compares_its_code_not_its_prose() -> None:
    mine = Answer(404, {"code": "account_not_found", "message": "Account x is not registered."})
    same_code = Answer(
        404, {"code": "account_not_found", "message": "No such account", "details": [{"field": "", "message": "m"}]}
    )
    other_code = Answer(404, {"code": "not_found", "message": "Account x is not registered."})
    assert differences(mine, same_code, rules_for("addRecipient")) == []
    assert differences(mine, other_code, rules_for("addRecipient")) == [
        '/code: expected "account_not_found", got "not_found"'
    ]


def test_money_is_compared_as_a_number_to_the_cent() -> None:
    rules = rules_for("getExtraordinaryEvent")
    assert differences(Answer(200, {"a": 1500}), Answer(200, {"a": 1500.0}), rules) == []
    assert differences(Answer(200, {"a": Decimal("750.25")}), Answer(200, {"a": 750.25}), rules) == []
    assert differences(Answer(200, {"a": 750.25}), Answer(200, {"a": 750.26}), rules) == [
        "/a: expected 750.25, got 750.26"
    ]


def test_true_is_not_one() -> None:
    assert differences(Answer(200, {"a": 1}), Answer(200, {"a": True}), rules_for("x")) == ["/a: expected 1, got true"]


@pytest.mark.parametrize(
    ("mine", "theirs", "found"),
    [
        ({"a": [1, {"b": False}]}, {"a": [1, {"b": 0}]}, ["/a/1/b: expected false, got 0"]),
        ({"a": [1, 2]}, {"a": [1, 2, 3]}, ["/a: expected 2 items, got 3"]),
        ({"a": 1, "b": "x"}, {"b": "x", "a": 1}, []),  # the same JSON, its keys in another order
        ({"a": 1500}, {"a": 1500.0}, []),  # one number, written two ways
        ({"a": None}, {"a": "None"}, ['/a: expected null, got "None"']),
    ],
)
def test_bodies_equal_as_python_values_still_differ_by_json_type(mine: Any, theirs: Any, found: list[str]) -> None:
    """Two bodies found the same JSON are not walked field by field; `False == 0` in Python is no such sameness."""
    assert differences(Answer(200, mine), Answer(200, theirs), rules_for("x")) == found


def test_generated_fields_are_compared_by_type_only() -> None:
    rules = rules_for("createLimitUpdateRequest")
    other = {**PROPOSAL, "limit_update_request_id": "b", "event_date": "2031-01-01T00:00:00Z"}
    assert differences(Answer(201, PROPOSAL), Answer(201, other), rules) == []
    wrong = {**PROPOSAL, "limit_update_request_id": 7}
    assert differences(Answer(201, PROPOSAL), Answer(201, wrong), rules) == [
        "/limit_update_request_id: expected a string (its value is the server's), got 7"
    ]


def test_missing_and_unexpected_fields_and_list_lengths_are_differences() -> None:
    found = differences(
        Answer(200, {"a": 1, "list": [1, 2]}), Answer(200, {"b": 1, "list": [1]}), rules_for("getExtraordinaryEvent")
    )
    assert found == ["/a: missing (expected 1)", "/list: expected 2 items, got 1", "/b: not expected (got 1)"]


def test_nested_fields_are_named_by_json_pointer() -> None:
    theirs = {**EVENT, "event_conciliation_list": [{"event_conciliation_status": "paid"}]}
    assert differences(Answer(200, EVENT), Answer(200, theirs), rules_for("getExtraordinaryEvent")) == [
        '/event_conciliation_list/0/event_conciliation_status: expected "pending_conciliation", got "paid"'
    ]
    assert pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"


@pytest.mark.parametrize(
    "noise",
    [
        Noise(frozenset({"/event_conciliation_list"})),
        Noise(patterns=(re.compile("_status$"),)),
        Noise(frozenset({""})),
    ],
)
def test_noise_silences_the_fields_it_names_and_what_is_below(noise: Noise) -> None:
    theirs = {**EVENT, "event_conciliation_list": [{"event_conciliation_status": "paid"}]}
    assert differences(Answer(200, EVENT), Answer(200, theirs), rules_for("getExtraordinaryEvent", noise)) == []


def test_schema_problems_count_unless_their_field_is_noise() -> None:
    problems = [("/recipient_id", "must be a string"), ("", "must not have `extra`")]
    rules = rules_for("addRecipient", Noise(frozenset({"/recipient_id"})))
    assert differences(Answer(201, {}), Answer(201, {}), rules, problems) == ["schema: (body): must not have `extra`"]


def test_no_answer_is_a_difference_saying_why() -> None:
    found = differences(Answer(200, EVENT), Answer(None, error="ReadTimeout"), rules_for("getExtraordinaryEvent"))
    assert found == ["status: expected 200, got no answer (ReadTimeout)"]


def test_the_recipient_id_is_the_id_a_later_call_names() -> None:
    assert generated_id("addRecipient", Answer(201, {"recipient_id": "r"})) == "r"
    assert generated_id("addRecipient", Answer(409, {"code": "x"})) is None
    assert generated_id("createLimitUpdateRequest", Answer(201, PROPOSAL)) is None
