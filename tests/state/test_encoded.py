"""The events' answers, encoded once per version (state/encoded.py): the pure rules, without HTTP."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

from mock_server.domain import events as event_rules
from mock_server.domain.conversions import event_to_public
from mock_server.domain.models import Event, Installment
from mock_server.state.encoded import EncodedEvents
from tests.default_scenario import PENDING_EVENT


def an_event(key: str = PENDING_EVENT) -> Event:
    return Event(
        key,
        "3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
        "6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
        "early_amortization",
        Decimal(1500),
        Decimal(0),
        Decimal(0),
        "pending_conciliation",
        date(2026, 11, 1),
        date(2026, 11, 30),
        None,
        [Installment("0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40", "4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11")],
    )


def test_an_event_is_encoded_once_and_answered_the_same_after():
    encoded = EncodedEvents()
    event = an_event()
    first = encoded.public_json(event)
    assert json.loads(first) == event_to_public(event)
    assert encoded.public_json(event) is first


def test_a_paid_event_is_a_new_version_with_its_own_answer():
    """Paying replaces the Event (domain/events.py): the bytes of the old one are never answered for it."""
    encoded = EncodedEvents()
    pending = an_event()
    before = encoded.public_json(pending)
    paid = event_rules.pay(pending, None, date(2026, 11, 21))
    assert paid is not pending
    after = json.loads(encoded.public_json(paid))
    assert after["status"] == "paid"
    assert after["paid_at"] == "2026-11-21"
    assert encoded.public_json(pending) is before  # the old version is untouched


def test_an_equal_event_of_another_object_is_encoded_for_itself():
    """Versions are objects, not keys: two Events of one key (a reset and an unpacked seed record) each get theirs."""
    encoded = EncodedEvents()
    one, other = an_event(), an_event()
    assert encoded.public_json(one) == encoded.public_json(other)
    assert len(encoded) == 2


def test_the_table_is_bounded():
    encoded = EncodedEvents(max_entries=3)
    kept = [an_event() for _ in range(10)]  # kept alive: their ids stay distinct
    for event in kept:
        encoded.public_json(event)
    assert len(encoded) <= 3
