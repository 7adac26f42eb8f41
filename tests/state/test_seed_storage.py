"""mock_server.state.seed_storage: the packed read-only events give back exactly the Events that went in."""

from __future__ import annotations

import dataclasses
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_server.domain.conversions import event_from_scenario
from mock_server.domain.models import CANCELED, PAID, PENDING, Event, Installment
from mock_server.scenarios.loader import ScenarioLoader
from mock_server.spec.openapi import load_specs
from mock_server.state import seed_storage
from mock_server.state.seed_storage import SeedBuilder, SeedEvents
from tests.default_scenario import PENDING_EVENT

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def exact(event: Event) -> tuple[object, ...]:
    """Every field, Decimals by their text too: 1500, 1500.0 and 1500.00 are equal but not written alike. (The
    fields as they are: dataclasses.astuple deep-copies each, the most of these tests' CPU for nothing.)"""
    fields = tuple(getattr(event, field.name) for field in dataclasses.fields(event))
    amounts = (event.total_expected_amount, event.total_discount_amount, event.total_paid_amount)
    return (*fields, *(str(a) for a in amounts), *(a.as_tuple() for a in amounts))


def an_event(key: str = PENDING_EVENT, **changes: object) -> Event:
    event = Event(
        key=key,
        security_key="3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
        investment_key="6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
        amortization_type="present_amount",
        total_expected_amount=Decimal("1000.00"),
        total_discount_amount=Decimal("25.5"),
        total_paid_amount=Decimal("974.50"),
        status=PAID,
        reference_date=date(2026, 9, 1),
        due_date=date(2026, 9, 30),
        paid_at=date(2026, 9, 28),
        installments=[
            Installment("5c0f7e3a-2b4d-4e6f-8a1c-7d9b3e5f1a77", "7f1d5b9c-4e6a-4c8d-9f2b-3a5e7c9d1f44", PAID)
        ],
    )
    return dataclasses.replace(event, **changes)  # type: ignore[arg-type]


def test_every_shipped_scenario_reads_back_exactly() -> None:
    loader = ScenarioLoader.from_specs(load_specs())
    for name, scenario in loader.load_directory(FIXTURES).items():
        assert isinstance(scenario.events, SeedEvents), name
        plain = [exact(e) for e in scenario.events.values()]
        assert plain or name in ("empty", "recipients")
        again = SeedEvents(scenario.events.values())
        assert [exact(again[key]) for key in scenario.events] == plain


UUIDS = st.uuids().map(str)
MONEY = st.one_of(
    st.integers(0, 999_999_999_999_999).map(Decimal),
    st.decimals(0, Decimal("9999999999999.99"), places=2),
    st.decimals(0, Decimal("9999999999999.9"), places=1),
    st.sampled_from([Decimal("-0.0"), Decimal("1E+16"), Decimal("0E-2"), Decimal("1.5E+3")]),
)
DATES = st.dates(date(1, 1, 1), date(9999, 12, 31))
WORDS = st.sampled_from([PENDING, PAID, CANCELED, "early_amortization", "present_amount", "ção", "x" * 300])


@st.composite
def events(draw: st.DrawFn) -> Event:
    return Event(
        key=draw(UUIDS),
        security_key=draw(UUIDS),
        investment_key=draw(UUIDS),
        amortization_type=draw(WORDS),
        total_expected_amount=draw(MONEY),
        total_discount_amount=draw(MONEY),
        total_paid_amount=draw(MONEY),
        status=draw(WORDS),
        reference_date=draw(DATES),
        due_date=draw(DATES),
        paid_at=draw(st.none() | DATES),
        installments=draw(
            st.lists(st.builds(Installment, UUIDS, UUIDS, WORDS, WORDS), min_size=1, max_size=4),
        ),
    )


# The default tier draws a sample of the property tests' examples; the exhaustive tier (`make test-exhaustive`, in
# CI) the full count: 200 lists of events cost ~7 s of one worker.
ANY_EVENTS = st.lists(events(), max_size=6, unique_by=lambda e: e.key)


@settings(max_examples=50, deadline=None)
@given(ANY_EVENTS)
def test_any_events_read_back_exactly(given_events: list[Event]) -> None:
    _reads_back_exactly(given_events)


@pytest.mark.exhaustive
@settings(max_examples=200, deadline=None)
@given(ANY_EVENTS)
def test_any_events_read_back_exactly_full_count(given_events: list[Event]) -> None:
    _reads_back_exactly(given_events)


def _reads_back_exactly(given_events: list[Event]) -> None:
    seed = SeedEvents(given_events)
    assert len(seed) == len(given_events)
    assert list(seed) == [e.key for e in given_events]
    assert [exact(e) for e in seed.values()] == [exact(e) for e in given_events]
    for e in given_events:
        assert e.key in seed
        assert exact(seed[e.key]) == exact(e)
        assert exact(seed.get(e.key)) == exact(e)  # type: ignore[arg-type]


@pytest.mark.parametrize("key", ["NOT-A-UUID", PENDING_EVENT.upper(), "ção", "x" * 70000])
def test_any_key_text_is_found_by_that_text_only(key: str) -> None:
    odd = an_event(key=key)
    seed = SeedEvents([odd, an_event()])
    assert exact(seed[key]) == exact(odd)
    assert key[:-1] not in seed
    assert key + "0" not in seed
    assert "\ud800" not in seed


def test_two_events_with_one_key_are_refused() -> None:
    with pytest.raises(ValueError, match="appears more than once"):
        SeedEvents([an_event(), an_event(status=CANCELED, paid_at=None)])


@pytest.mark.parametrize(
    "changes",
    [
        {"security_key": "3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b9"},  # 35 characters
        {"investment_key": "6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6cç3"},  # not ASCII
        {"total_expected_amount": Decimal("1" * 300)},  # an amount's text past 255 characters
        {"installments": [Installment("short", "7f1d5b9c-4e6a-4c8d-9f2b-3a5e7c9d1f44")]},
    ],
)
def test_what_the_layout_cannot_hold_is_kept_as_it_is(changes: dict[str, object]) -> None:
    odd = dataclasses.replace(an_event(), **changes)  # type: ignore[arg-type]
    usual = an_event(key="0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40")
    seed = SeedEvents([odd, usual])
    assert seed[odd.key] is odd
    assert exact(seed[usual.key]) == exact(usual)
    assert sorted(seed) == sorted([odd.key, usual.key])


@pytest.mark.parametrize(
    "bound",
    [
        # The table's bound lowered: the same path past it, for 70 events; the real bound takes 65,540 events, ~2 s.
        pytest.param(64, id="bound-64"),
        pytest.param(None, id="bound-65535", marks=pytest.mark.exhaustive),
    ],
)
def test_a_word_table_past_its_bound_keeps_the_rest_as_objects(monkeypatch, bound: int | None) -> None:
    if bound is not None:
        monkeypatch.setattr(seed_storage, "_MAX_WORDS", bound)
    limit = seed_storage._MAX_WORDS
    many = [an_event(key=f"00000000-0000-4000-8000-{i:012x}", amortization_type=f"type-{i}") for i in range(limit + 5)]
    seed = SeedEvents(many)
    assert len(seed) == len(many)
    assert seed._objects  # the events whose word found no room
    for event in (many[0], many[limit - 1], many[limit], many[-1]):
        assert exact(seed[event.key]) == exact(event)


def test_it_is_a_read_only_mapping() -> None:
    event = an_event()
    seed = SeedEvents([event])
    assert seed == {event.key: event}
    assert SeedEvents() == {}
    assert "00000000-0000-4000-8000-000000000000" not in seed
    assert 42 not in seed  # type: ignore[comparison-overlap]
    assert seed.get("00000000-0000-4000-8000-000000000000") is None
    with pytest.raises(KeyError):
        seed["00000000-0000-4000-8000-000000000000"]
    assert dict(seed.items()) == {event.key: event}
    assert not hasattr(seed, "__setitem__")
    with pytest.raises(AttributeError):
        seed.extra = 1  # type: ignore[attr-defined]


def test_lookups_past_the_recent_bound_stay_exact() -> None:
    many = [an_event(key=f"00000000-0000-4000-8000-{i:012x}", total_paid_amount=Decimal(i)) for i in range(5000)]
    seed = SeedEvents(many)
    for _ in range(2):
        for event in many:
            assert exact(seed[event.key]) == exact(event)
    assert len(seed._recent) <= SeedEvents.RECENT


def test_an_event_costs_its_record_and_one_slot() -> None:
    """The point of packing (the benchmark measures the process; this guards the layout)."""
    seed = SeedEvents(an_event(key=f"00000000-0000-4000-8000-{i:012x}") for i in range(1000))
    assert not seed._objects
    assert len(seed._buffer) / 1000 < 250
    assert seed._slots.itemsize * len(seed._slots) / 1000 <= 32


SCENARIO_AMOUNTS = st.one_of(
    st.integers(0, 10**20),
    st.floats(0, 1e17, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 1e-05, 1e16, 100.0, 1500.25, 0, 10**300]),
)
SCENARIO_UUIDS = st.one_of(
    UUIDS, UUIDS.map(str.upper), st.sampled_from(["short", "{9F1C6F0E-3C8E-4A55-9D47-0A4C2B8F6D1}"])
)


@st.composite
def scenario_events(draw: st.DrawFn) -> dict[str, object]:
    """Scenario events as a reader hands them over: amounts as JSON numbers, dates as text, keys in any case."""
    data: dict[str, object] = {
        "extraordinary_event_conciliation_key": draw(SCENARIO_UUIDS),
        "security_key": draw(SCENARIO_UUIDS),
        "investment_key": draw(SCENARIO_UUIDS),
        "amortization_type": draw(WORDS),
        "total_expected_amount": draw(SCENARIO_AMOUNTS),
        "reference_date": draw(DATES).isoformat(),
        "due_date": draw(DATES).isoformat(),
        "event_conciliation_list": [
            {"event_conciliation_key": draw(SCENARIO_UUIDS), "installment_key": draw(SCENARIO_UUIDS)}
            | ({"event_conciliation_status": draw(WORDS)} if draw(st.booleans()) else {})
            for _ in range(draw(st.integers(1, 3)))
        ],
    }
    for name in ("total_discount_amount", "total_paid_amount"):
        if draw(st.booleans()):
            data[name] = draw(SCENARIO_AMOUNTS)
    if draw(st.booleans()):
        data["status"] = draw(WORDS)
    data["paid_at"] = draw(st.none() | DATES.map(date.isoformat))
    return data


# The default tier packs 100 drawn events; the exhaustive tier the full count, 300 (~1.5 s of one worker).
@settings(max_examples=100, deadline=None)
@given(scenario_events())
def test_an_event_packed_from_its_scenario_data_reads_back_as_the_event_the_data_makes(data: dict[str, Any]) -> None:
    """SeedBuilder.add_scenario_event skips making the Event: what it packs must read back as that Event."""
    _packed_from_its_data_reads_back(data)


@pytest.mark.exhaustive
@settings(max_examples=300, deadline=None)
@given(scenario_events())
def test_an_event_packed_from_its_scenario_data_reads_back_full_count(data: dict[str, Any]) -> None:
    _packed_from_its_data_reads_back(data)


def _packed_from_its_data_reads_back(data: dict[str, Any]) -> None:
    builder = SeedBuilder()
    builder.add_scenario_event(data)
    seed = builder.build()
    key = str(data["extraordinary_event_conciliation_key"]).lower()
    assert list(seed) == [key]
    assert exact(seed[key]) == exact(event_from_scenario(data, key))


def test_keys_whose_hashes_are_all_equal_are_told_apart_by_their_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is built from the hashes taken at packing: equal hashes must still compare the keys."""
    import mock_server.state.seed_storage as seed_module

    monkeypatch.setattr(seed_module, "hash", lambda value: 7, raising=False)
    events = [an_event(key=f"00000000-0000-4000-8000-{i:012x}") for i in range(20)]
    seed = SeedEvents(events)
    assert [exact(seed[e.key]) for e in events] == [exact(e) for e in events]
    assert "00000000-0000-4000-8000-999999999999" not in seed
    with pytest.raises(ValueError, match="appears more than once"):
        SeedEvents([*events, an_event(key=events[5].key, status=CANCELED, paid_at=None)])
