"""events._plainly_consistent (the cross-checks in whole cents, for the common case) says "consistent" only
where the full rules find nothing: it may step aside, never hide a problem."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_server.domain.events import _cents, _plainly_consistent, cross_check_event, has_cents_precision, to_money

money = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**12),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e13),
    st.decimals(min_value=0, max_value=10**6, places=2).map(float),
    st.decimals(min_value=0, max_value=10**6, places=3).map(float),
    st.sampled_from([0, 0.0, 974.5, 25.5, 1000.0, 0.1, 0.2, 0.3, 1e20, "12", None, True]),
)
dates = st.sampled_from(["2026-11-01", "2026-02-30", "0000-01-01", "x", None, 5])
statuses = st.sampled_from(["pending_conciliation", "paid", "canceled", "payed", None, 3])


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    event: dict[str, Any] = {
        "amortization_type": draw(st.sampled_from(["early_amortization", "present_amount", "other", 7])),
        "reference_date": draw(dates),
        "due_date": draw(dates),
        "paid_at": draw(dates),
        "event_conciliation_list": draw(
            st.one_of(
                st.lists(
                    st.one_of(st.just({}), st.fixed_dictionaries({"event_conciliation_status": statuses}), st.just(1)),
                    max_size=3,
                ),
                st.just("x"),
            )
        ),
    }
    for name in ("total_expected_amount", "total_discount_amount", "total_paid_amount", "status"):
        if draw(st.booleans()):
            event[name] = draw(statuses if name == "status" else money)
    return event


def _consistent_only_where_the_rules_find_nothing(event: dict[str, Any]) -> None:
    if _plainly_consistent(event):
        assert cross_check_event(event) == []


# The same property at two sizes: 300 events in the default tier, the full 1,500 in the exhaustive tier.
test_consistent_only_where_the_rules_find_nothing = settings(max_examples=300, deadline=None)(
    given(event=events())(_consistent_only_where_the_rules_find_nothing)
)
test_consistent_only_where_the_rules_find_nothing_on_1500_events = pytest.mark.exhaustive(
    settings(max_examples=1500, deadline=None)(given(event=events())(_consistent_only_where_the_rules_find_nothing))
)


@given(value=money)
@settings(max_examples=500, deadline=None)
def test_cents_are_exact(value: Any) -> None:
    cents = _cents(value)
    if cents is not None:
        assert isinstance(value, (int, float)) and not isinstance(value, bool)
        assert has_cents_precision(to_money(value))
        assert to_money(value) * 100 == cents


def test_a_generated_event_takes_the_fast_way() -> None:
    event = {
        "amortization_type": "present_amount",
        "total_expected_amount": 1000.0,
        "total_discount_amount": 25.5,
        "total_paid_amount": 974.5,
        "status": "paid",
        "reference_date": "2026-09-01",
        "due_date": "2026-09-30",
        "paid_at": "2026-09-28",
        "event_conciliation_list": [{"event_conciliation_key": "k", "installment_key": "i"}],
    }
    assert _plainly_consistent(event)
    assert not _plainly_consistent({**event, "total_paid_amount": 974.51})
