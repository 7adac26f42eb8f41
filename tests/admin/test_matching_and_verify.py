"""mock_server.domain.matching (the JSON subset rule) and mock_server.admin.verify (expectations over journal
entries)."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.admin.verify import ABSENT, Expectation, expectation_from, judge
from mock_server.domain.matching import contains


@pytest.mark.parametrize(
    ("pattern", "value", "expected"),
    [
        ({}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True),
        ({"a": {"b": 1}}, {"a": [1]}, False),
        ({"a": None}, {"a": None}, True),
        ({"a": None}, {}, False),
        ([1, 2], [1, 2], True),
        ([1, 2], [2, 1], False),  # order matters
        ([1], [1, 2], False),  # same length
        ([{"a": 1}], [{"a": 1, "b": 2}], True),
        (1, 1.0, True),
        (1.5, 1.5, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (True, True, True),
        ("1", 1, False),
        ("x", "x", True),
        (None, None, True),
        (None, "null", False),
        ({"a": 1}, "text", False),
    ],
)
def test_subset_rule(pattern: Any, value: Any, expected: bool) -> None:
    assert contains(pattern, value) is expected


def entry(operation_id: str = "addRecipient", status: int = 201, body: Any = None) -> dict[str, Any]:
    return {"operation_id": operation_id, "status": status, "request_body": body}


def test_an_expectation_matches_operation_status_and_body() -> None:
    expectation = Expectation("addRecipient", 201, {"document_number": "1"})
    assert expectation.matches(entry(body={"document_number": "1", "x": 2}))
    assert not expectation.matches(entry(status=409, body={"document_number": "1"}))
    assert not expectation.matches(entry(operation_id="removeRecipient", body={"document_number": "1"}))
    assert not expectation.matches(entry(body={"document_number": "2"}))
    assert not expectation.matches(entry(body=None))


def test_a_null_pattern_means_no_body_and_no_pattern_means_any() -> None:
    assert Expectation("addRecipient", body=None).matches(entry(body=None))
    assert not Expectation("addRecipient", body=None).matches(entry(body={}))
    assert Expectation("addRecipient", body=ABSENT).matches(entry(body={"a": 1}))


@pytest.mark.parametrize(
    ("body", "bounds"),
    [
        ({}, (1, None)),
        ({"times": 0}, (0, 0)),
        ({"times": 3}, (3, 3)),
        ({"at_least": 2}, (2, None)),
        ({"at_most": 2}, (0, 2)),
        ({"at_least": 1, "at_most": 2}, (1, 2)),
        ({"at_least": 2, "at_most": 2}, (2, 2)),
    ],
)
def test_counts_a_verify_request_states(body: dict[str, Any], bounds: tuple[int, int | None]) -> None:
    expectation, problems = expectation_from({"operation_id": "addRecipient", **body})
    assert problems == []
    assert expectation is not None
    assert (expectation.at_least, expectation.at_most) == bounds


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"times": 1, "at_least": 1}, ["at_least"]),
        ({"times": 1, "at_least": 0, "at_most": 3}, ["at_least", "at_most"]),
        ({"at_least": 3, "at_most": 2}, ["at_least"]),
        ({"body_contains": {}, "body_matches": {}}, ["body_matches"]),
    ],
)
def test_inconsistent_verify_requests_name_the_fields(body: dict[str, Any], fields: list[str]) -> None:
    expectation, problems = expectation_from({"operation_id": "addRecipient", **body})
    assert expectation is None
    assert sorted(d.field for d in problems) == fields


def test_body_matches_is_the_same_pattern_as_body_contains() -> None:
    one, _ = expectation_from({"operation_id": "addRecipient", "body_matches": {"a": 1}})
    other, _ = expectation_from({"operation_id": "addRecipient", "body_contains": {"a": 1}})
    assert one == other


@pytest.mark.parametrize(
    ("at_least", "at_most", "count", "holds"),
    [(1, None, 0, False), (1, None, 1, True), (1, None, 5, True), (0, 0, 0, True), (0, 0, 1, False),
     (2, 3, 1, False), (2, 3, 2, True), (2, 3, 3, True), (2, 3, 4, False)],
)  # fmt: skip
def test_judge_counts_the_matching_calls(at_least: int, at_most: int | None, count: int, holds: bool) -> None:
    entries = [entry(status=201)] * count + [entry(status=409), entry(operation_id="removeRecipient")]
    verdict = judge(Expectation("addRecipient", 201, at_least=at_least, at_most=at_most), entries)
    assert (verdict.holds, verdict.matched, len(verdict.calls)) == (holds, count, count + 1)


@pytest.mark.parametrize(
    ("expectation", "words"),
    [
        (Expectation("addRecipient"), "addRecipient, at least 1 time"),
        (Expectation("addRecipient", 201, at_least=2, at_most=2), "addRecipient with status 201, exactly 2 times"),
        (Expectation("addRecipient", at_least=0, at_most=1), "addRecipient, at most 1 time"),
        (Expectation("addRecipient", at_least=1, at_most=3), "addRecipient, from 1 to 3 times"),
        (
            Expectation("addRecipient", 201, {"a": "é"}),
            'addRecipient with status 201 and a request body containing {"a":"é"}, at least 1 time',
        ),
        (Expectation("addRecipient", body=[1]), "addRecipient with a request body containing [1], at least 1 time"),
    ],
)
def test_an_expectation_says_what_it_expects(expectation: Expectation, words: str) -> None:
    assert expectation.describe() == words
