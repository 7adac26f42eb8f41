"""The pure rule of fault predicates (faults.FaultMatch) and which fault a call gets (Faults.take)."""

from __future__ import annotations

from typing import Any

import pytest

from mock_server.state.faults import NO_BODY, FaultKind, FaultMatch, Faults


@pytest.mark.parametrize(
    ("match", "path", "body", "holds"),
    [
        (FaultMatch(), {}, NO_BODY, True),  # no condition: every call
        (FaultMatch({"account_id": "a"}), {"account_id": "a"}, NO_BODY, True),
        (FaultMatch({"account_id": "a"}), {"account_id": "b"}, NO_BODY, False),
        (FaultMatch({"account_id": "a"}), {"account_id": "A"}, NO_BODY, False),  # as sent: no case folding
        (
            FaultMatch({"account_id": "a", "recipient_id": "r"}),
            {"account_id": "a", "recipient_id": "s"},
            NO_BODY,
            False,
        ),
        (FaultMatch({"account_id": "a", "recipient_id": "r"}), {"account_id": "a", "recipient_id": "r"}, NO_BODY, True),
        (FaultMatch({"account_id": "a"}), {}, NO_BODY, False),
        (FaultMatch(body={"x": 1}), {}, {"x": 1, "y": 2}, True),  # a subset
        (FaultMatch(body={"x": 1}), {}, {"x": 2}, False),
        (FaultMatch(body={"x": 1}), {}, {"x": True}, False),  # matching.contains: true is not 1
        (FaultMatch(body={"x": 1}), {}, NO_BODY, False),  # no JSON body never matches a body pattern
        (FaultMatch(body={}), {}, NO_BODY, False),
        (FaultMatch(body=None), {}, None, True),  # a body of JSON null, and the pattern null
        (FaultMatch(body=None), {}, NO_BODY, False),
        (FaultMatch({"account_id": "a"}, {"x": [1]}), {"account_id": "a"}, {"x": [1]}, True),
        (FaultMatch({"account_id": "a"}, {"x": [1]}), {"account_id": "b"}, {"x": [1]}, False),
    ],
)
def test_a_match_holds_when_every_condition_does(match: FaultMatch, path: dict[str, str], body: Any, holds: bool):
    assert match.holds(path, body) is holds


def test_a_match_reads_and_writes_the_admin_specs_shape():
    shape = {"path": {"account_id": "a"}, "body_contains": {"document_number": "1"}}
    assert FaultMatch.from_json(shape).to_json() == shape
    assert FaultMatch.from_json({"body_contains": None}).to_json() == {"body_contains": None}
    assert FaultMatch.from_json({}).to_json() == {}


def test_take_skips_faults_that_do_not_match_without_spending_them():
    faults = Faults()
    only_a = faults.add("addRecipient", 503, None, 0, 1, match=FaultMatch({"account_id": "a"}))
    anyone = faults.add("addRecipient", 500, None, 0, 2)
    assert faults.take("addRecipient", {"account_id": "b"}) is anyone
    assert (only_a.times, anyone.times) == (1, 1)
    assert faults.take("addRecipient", {"account_id": "a"}) is only_a
    assert faults.all() == [anyone]
    assert faults.take("getExtraordinaryEvent", {"account_id": "a"}) is None


def test_only_a_body_pattern_of_the_operation_needs_the_body_read():
    faults = Faults()
    faults.add("addRecipient", 503, None, 0, 1, match=FaultMatch({"account_id": "a"}))
    faults.add("registerAccountLimit", None, None, 0, 1, FaultKind.RESET, match=FaultMatch(body={}))
    assert not faults.needs_body("addRecipient")
    assert faults.needs_body("registerAccountLimit")
