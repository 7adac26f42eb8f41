"""The proposals a session keeps (state/store.py): the last MAX_PROPOSALS_PER_ACCOUNT of an account, the last
MAX_PROPOSALS_PER_SESSION over every account, and an order of them that stays as short as what is kept."""

from __future__ import annotations

from datetime import UTC, datetime
from itertools import count

import pytest

from mock_server.domain.models import Account, Limits, LimitWindow, Scenario
from mock_server.state import store as store_module
from mock_server.state.store import Store

AT = datetime(2026, 11, 21, 13, 0, tzinfo=UTC)
PIX: Limits = {"withdraw": (LimitWindow("06:00:00-03:00", 1000),)}


def a_store(accounts: int) -> Store:
    return Store(
        Scenario(
            "s",
            "",
            accounts={f"a-{i}": Account(f"a-{i}", "2026-11-01T00:00:00-03:00", dict(PIX)) for i in range(accounts)},
        )
    )


def propose(store: Store, account_id: str, times: int, ids: count[int]) -> None:
    for _ in range(times):
        store.request_limit_update(account_id, PIX, AT, lambda: f"p-{next(ids)}")


def test_an_account_keeps_its_last_proposals_and_the_order_stays_as_short(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(store_module, "MAX_PROPOSALS_PER_ACCOUNT", 10)
    store, ids = a_store(1), count()
    propose(store, "a-0", 35, ids)
    kept = store.account("a-0").limit_update_requests
    assert [p.limit_update_request_id for p in kept] == [f"p-{i}" for i in range(25, 35)]
    assert len(store._proposals) == 10  # the one account's oldest is the session's oldest: it goes at once


def test_the_session_keeps_its_last_proposals_over_every_account(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(store_module, "MAX_PROPOSALS_PER_ACCOUNT", 10)
    monkeypatch.setattr(store_module, "MAX_PROPOSALS_PER_SESSION", 15)
    store, ids = a_store(2), count()
    propose(store, "a-0", 10, ids)  # p-0 .. p-9
    propose(store, "a-1", 12, ids)  # p-10 .. p-21: a-1 keeps its last 10, the session its last 15
    first = [p.limit_update_request_id for p in store.account("a-0").limit_update_requests]
    second = [p.limit_update_request_id for p in store.account("a-1").limit_update_requests]
    assert second == [f"p-{i}" for i in range(12, 22)]
    assert first == [f"p-{i}" for i in range(5, 10)]  # the oldest of any account went first
    assert len(first) + len(second) == 15
