"""state/footprint.py and the store's byte count: what a record is estimated to cost against what the process
really holds for it (tracemalloc), the fast counts of a limit change against the walk, and the count kept exact
as records come and go."""

from __future__ import annotations

import gc
import itertools
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from mock_server.domain.conversions import account_from_scenario, event_from_scenario, limits_from_json
from mock_server.domain.models import Scenario
from mock_server.state.bounds import Bounds
from mock_server.state.footprint import footprint, limits_bytes, proposal_bytes, scenario_footprint
from mock_server.state.store import MAX_PROPOSALS_PER_ACCOUNT, Store

NOW = datetime(2026, 11, 21, 13, tzinfo=UTC)
MODES = ("withdraw", "change", "transaction", "transaction_natural_person", "transaction_legal_person")


def _uuid(prefix: int, index: int) -> str:
    return f"{prefix:08x}-0000-4000-8000-{index:012x}"


def _event_data(index: int, instalments: int) -> dict[str, Any]:
    return {
        "security_key": _uuid(1, index),
        "investment_key": _uuid(2, index),
        "amortization_type": "early_amortization",
        "total_expected_amount": 500.25,
        "reference_date": "2026-11-01",
        "due_date": "2026-11-30",
        "event_conciliation_list": [
            {"event_conciliation_key": _uuid(index, i), "installment_key": _uuid(index, 10**6 + i)}
            for i in range(instalments)
        ],
    }


def _windows(count: int, start: str = "06:00:00-03:00", amount: int = 500000) -> list[dict[str, Any]]:
    return [{"start_time": start, "amount": amount + n} for n in range(count)]


def _traced(make: Callable[[], list[Any]]) -> tuple[list[Any], int]:
    """What `make()` returns and the bytes it left allocated. What the process held before is frozen out of the
    collector's sight meanwhile (gc.freeze; its garbage too: allocated before tracing began, it counts nothing
    either way): the collection after make() walks only what make() made, not the whole heap of a test process
    that ran a thousand tests before (~0.5 s a collection there; two of them were most of each test's second)."""
    gc.freeze()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        gc.collect()
        return made, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.unfreeze()


@pytest.mark.parametrize("instalments", [1, 10, 1000])
def test_an_events_footprint_is_what_the_process_holds_for_it(instalments: int) -> None:
    count = max(3, 2000 // instalments)
    data = [_event_data(i, instalments) for i in range(count)]
    events, held = _traced(lambda: [event_from_scenario(d, _uuid(9, i)) for i, d in enumerate(data)])
    estimated = sum(footprint(e) for e in events)
    assert 0.9 * held <= estimated <= 1.3 * held, (estimated, held)


def test_an_accounts_footprint_errs_high_but_not_far() -> None:
    data = [
        {
            "account_id": f"acc-{i:06d}",
            "registration_date": "2026-11-21T09:00:00-03:00",
            # Amounts of its own: windows sent alike are one shared object (domain/conversions.py), which the
            # footprint counts in every account holding it (high, as a bound should err).
            "limit": {"pix": {mode: _windows(2, amount=500000 + 10 * i) for mode in MODES[:3]}},
        }
        for i in range(500)
    ]
    accounts, held = _traced(lambda: [account_from_scenario(d) for d in data])
    estimated = sum(footprint(a) for a in accounts)
    assert held <= estimated <= 2.5 * held, (estimated, held)


@pytest.mark.parametrize(
    "pix",
    [
        {"withdraw": _windows(1)},
        {"withdraw": _windows(2, "20:00:00Z", 1)},
        {mode: _windows(2, "06:00:00+01:00", 2**63 - 1) for mode in MODES},
        {"transaction_natural_person": _windows(1, "00:00:00-03:00", 0)},
    ],
)
def test_the_fast_counts_of_a_limit_change_bound_the_walk_closely(pix: dict[str, Any]) -> None:
    limits = limits_from_json(pix)
    assert footprint(limits) <= limits_bytes(limits) <= 1.25 * footprint(limits)
    store = Store(Scenario("s", ""), Bounds())
    store.register_account("a", "2026-11-21T09:00:00-03:00", limits_from_json({"withdraw": _windows(1)}), NOW)
    proposal = store.request_limit_update("a", limits, NOW, lambda: _uuid(7, 1))
    assert footprint(proposal) <= proposal_bytes(proposal) <= 1.25 * footprint(proposal)


def _store() -> Store:
    store = Store(Scenario("s", ""), Bounds(max_recipients=10**6))
    store.register_account("a", "2026-11-21T09:00:00-03:00", limits_from_json({"withdraw": _windows(2)}), NOW)
    return store


def test_a_recipient_added_and_removed_gives_back_exactly_what_it_took() -> None:
    store = _store()
    store.create_recipient_list("a", limits_from_json({"transaction": _windows(1)}), NOW)
    before = store.held_bytes
    ids = (f"r-{n}" for n in itertools.count())
    added = [store.add_recipient("a", document, NOW, lambda: next(ids)) for document in ("52998224725", "11144477735")]
    assert store.held_bytes > before
    for recipient in added:
        store.remove_recipient("a", recipient.recipient_id)
    assert store.held_bytes == before


def test_proposals_past_the_per_account_bound_give_their_bytes_back() -> None:
    store = _store()
    ids = (_uuid(5, n) for n in itertools.count())
    pix = limits_from_json({"withdraw": _windows(2)})
    for _ in range(MAX_PROPOSALS_PER_ACCOUNT):
        store.request_limit_update("a", pix, NOW, lambda: next(ids))
    full = store.held_bytes
    for _ in range(500):
        store.request_limit_update("a", pix, NOW, lambda: next(ids))
    assert store.held_bytes == full  # each new one drops the oldest, of the same size


def test_a_capture_and_restore_bring_the_count_back_with_the_records() -> None:
    store = _store()
    saved = store.capture()
    held = store.held_bytes
    store.register_account("b", "2026-11-21T09:00:00-03:00", limits_from_json({"withdraw": _windows(1)}), NOW)
    assert store.held_bytes > held
    store.restore(saved)
    assert store.held_bytes == held
    store.reset()
    assert store.held_bytes == 0


def test_a_big_scenarios_footprint_is_estimated_from_a_sample() -> None:
    events = {_uuid(9, i): event_from_scenario(_event_data(i, 2), _uuid(9, i)) for i in range(3000)}
    exact = sum(footprint(e) for e in events.values()) + 48 * len(events)
    estimated = scenario_footprint(Scenario("big", "", events))
    assert 0.95 * exact <= estimated <= 1.05 * exact
