"""Record mode reads what an operation does from its declaration (domain/operations.py `shows`): an operation
that shows an account without its rule in domain/recording.py fails here by name, and is never recorded past
silently."""

from __future__ import annotations

import pytest

from mock_server.domain import recording
from mock_server.domain.models import Account
from mock_server.domain.operations import OPERATIONS, Shows
from mock_server.domain.recording import ACCOUNT_RULES, Shown, account_after


def test_every_operation_that_shows_an_account_has_its_rule() -> None:
    shows_account = {name for name, facts in OPERATIONS.items() if facts.shows is Shows.ACCOUNT}
    missing = sorted(shows_account - set(ACCOUNT_RULES))
    assert missing == [], f"declared to show an account, no rule in domain/recording.py ACCOUNT_RULES: {missing}"
    assert sorted(set(ACCOUNT_RULES) - shows_account) == [], "a rule of an operation not declared to show an account"


def test_record_modes_tables_are_the_declarations() -> None:
    assert {n for n, f in OPERATIONS.items() if f.shows is Shows.ACCOUNT} == recording.ACCOUNT_OPERATIONS
    assert {n for n, f in OPERATIONS.items() if f.shows is Shows.EVENT} == recording.EVENT_OPERATIONS
    assert not recording.ACCOUNT_OPERATIONS & recording.EVENT_OPERATIONS
    assert {
        n for n, f in OPERATIONS.items() if f.shows is not Shows.NOTHING
    } == recording.ACCOUNT_OPERATIONS | recording.EVENT_OPERATIONS


def test_an_operation_shown_without_its_rule_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """http/record.py notes a KeyError as a call not recorded (record.skipped): the words name the operation."""
    rules = {name: rule for name, rule in ACCOUNT_RULES.items() if name != "createRecipientList"}
    monkeypatch.setattr(recording, "ACCOUNT_RULES", rules)
    before = Account("0001-000001", "2026-01-01T00:00:00-03:00", {})
    path = {"account_id": "0001-000001"}
    with pytest.raises(KeyError, match="no rule of what createRecipientList does to an account"):
        account_after("createRecipientList", path, {}, before, Shown(201, {}), "2026-01-01T00:00:00-03:00")


def test_the_account_of_a_call_is_its_paths_else_its_bodys() -> None:
    assert recording.account_id_of("addRecipient", {"account_id": "a"}, {"account_id": "b"}) == "a"
    assert recording.account_id_of("registerAccountLimit", {}, {"account_id": "b"}) == "b"
    assert recording.account_id_of("registerAccountLimit", {}, {"account_id": 7}) is None
