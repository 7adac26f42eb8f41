"""mock_server.domain.events: the extraordinary event's state machine (interface 3.1) and its exact money."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal

import pytest

from mock_server.domain.errors import InvalidRequest, InvalidTransition
from mock_server.domain.events import TRANSITIONS, cancel, has_cents_precision, next_status, pay, to_money
from mock_server.domain.models import CANCELED, EVENT_STATUSES, PAID, PENDING, Event, Installment
from tests.default_scenario import PENDING_EVENT

ACTIONS = ("pay_partially", "settle", "cancel")
# The whole table, written out: pending_conciliation is the only state that moves; paid and canceled are terminal.
EXPECTED_TRANSITIONS = {
    (PENDING, "pay_partially"): PENDING,
    (PENDING, "settle"): PAID,
    (PENDING, "cancel"): CANCELED,
}
SETTLED_ON = date(2026, 11, 21)


def event(
    expected: str = "1000.00",
    discount: str = "0",
    paid: str = "0",
    status: str = PENDING,
    amortization_type: str = "early_amortization",
) -> Event:
    return Event(
        key=PENDING_EVENT,
        security_key="3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
        investment_key="6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
        amortization_type=amortization_type,
        total_expected_amount=Decimal(expected),
        total_discount_amount=Decimal(discount),
        total_paid_amount=Decimal(paid),
        status=status,
        reference_date=date(2026, 11, 1),
        due_date=date(2026, 11, 30),
        paid_at=date(2026, 9, 28) if status == PAID else None,
        installments=[
            Installment("0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40", "4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11", status),
            Installment("1c8f5e3b-0d2a-4b4c-9f6e-7a3b2d0c8e51", "5d9b3f7a-2c4e-4a6b-8d8f-1e3c5a7b9d22", status),
        ],
    )


def instalment_statuses(e: Event) -> list[str]:
    return [i.event_conciliation_status for i in e.installments]


# --- the transition table -------------------------------------------------------------------------


def test_transition_table_is_exactly_the_interface_one() -> None:
    assert TRANSITIONS == EXPECTED_TRANSITIONS


@pytest.mark.parametrize(("status", "action"), [(s, a) for s in EVENT_STATUSES for a in ACTIONS])
def test_every_status_and_action(status: str, action: str) -> None:
    subject = event(status=status)
    expected = EXPECTED_TRANSITIONS.get((status, action))

    if expected is not None:
        assert next_status(subject, action) == expected
    else:
        with pytest.raises(InvalidTransition) as raised:
            next_status(subject, action)
        assert f"is {status}" in raised.value.message
        assert raised.value.status == 409
        assert raised.value.code == "invalid_transition"


# --- pay ------------------------------------------------------------------------------------------


def test_partial_payment_stays_pending_and_adds_up() -> None:
    before = event(expected="1000.00", paid="100.10")

    after = pay(before, Decimal("250.25"), SETTLED_ON)

    assert after.status == PENDING
    assert after.total_paid_amount == Decimal("350.35")
    assert after.paid_at is None
    assert instalment_statuses(after) == [PENDING, PENDING]
    assert before.total_paid_amount == Decimal("100.10")  # pure: the input is untouched


def test_paying_the_exact_balance_settles_the_event_and_its_instalments() -> None:
    after = pay(event(expected="1000.00", paid="750.25"), Decimal("249.75"), SETTLED_ON)

    assert after.status == PAID
    assert after.total_paid_amount == Decimal("1000.00")
    assert after.paid_at == SETTLED_ON
    assert instalment_statuses(after) == [PAID, PAID]


def test_paying_without_an_amount_pays_the_open_balance_net_of_the_discount() -> None:
    subject = event(expected="1000.00", discount="25.50", amortization_type="present_amount")

    after = pay(subject, None, SETTLED_ON)

    assert after.status == PAID
    assert after.total_paid_amount == Decimal("974.50")
    assert after.paid_at == SETTLED_ON
    assert after.open_balance == 0


def test_small_payments_add_up_exactly() -> None:
    subject = event(expected="0.30")

    once = pay(subject, to_money(0.1), SETTLED_ON)
    twice = pay(once, to_money(0.2), SETTLED_ON)

    assert once.status == PENDING
    assert twice.total_paid_amount == Decimal("0.3")
    assert twice.status == PAID
    assert twice.open_balance == 0


def test_many_cents_never_drift() -> None:
    subject = event(expected="10.00")
    for _ in range(999):
        subject = pay(subject, to_money(0.01), SETTLED_ON)

    assert subject.total_paid_amount == Decimal("9.99")
    assert subject.status == PENDING
    assert pay(subject, to_money(0.01), SETTLED_ON).status == PAID


@pytest.mark.parametrize(
    "amount",
    [
        pytest.param(Decimal("1000.01"), id="above-balance"),
        pytest.param(Decimal("0"), id="zero"),
        pytest.param(Decimal("-1"), id="negative"),
        pytest.param(Decimal("0.001"), id="three-decimals"),
        pytest.param(Decimal("10.005"), id="three-decimals-within-balance"),
    ],
)
def test_invalid_payment_amount_is_invalid_request(amount: Decimal) -> None:
    subject = event(expected="1000.00")

    with pytest.raises(InvalidRequest) as raised:
        pay(subject, amount, SETTLED_ON)

    assert raised.value.status == 400
    assert [d.field for d in raised.value.details] == ["amount"]
    assert subject.status == PENDING and subject.total_paid_amount == 0


def test_amount_above_the_balance_net_of_discount_and_paid_is_rejected() -> None:
    subject = event(expected="1000.00", discount="25.50", paid="900.00", amortization_type="present_amount")

    with pytest.raises(InvalidRequest):
        pay(subject, Decimal("74.51"), SETTLED_ON)
    assert pay(subject, Decimal("74.50"), SETTLED_ON).status == PAID


@pytest.mark.parametrize("status", [PAID, CANCELED])
@pytest.mark.parametrize("amount", [None, Decimal("1.00"), Decimal("-1"), Decimal("99999")])
def test_terminal_event_cannot_be_paid_whatever_the_amount(status: str, amount: Decimal | None) -> None:
    with pytest.raises(InvalidTransition) as raised:
        pay(event(status=status), amount, SETTLED_ON)

    assert f"is {status}" in raised.value.message


# --- cancel ---------------------------------------------------------------------------------------


def test_cancel_cancels_the_event_and_every_instalment() -> None:
    after = cancel(event(expected="1000.00", paid="100.00"))

    assert after.status == CANCELED
    assert after.paid_at is None
    assert instalment_statuses(after) == [CANCELED, CANCELED]
    assert after.total_paid_amount == Decimal("100.00")  # what was conciliated stays reported


def test_cancel_clears_a_paid_at_left_on_a_pending_event() -> None:
    subject = replace(event(), paid_at=date(2026, 11, 1))

    assert cancel(subject).paid_at is None


@pytest.mark.parametrize("status", [PAID, CANCELED])
def test_terminal_event_cannot_be_canceled(status: str) -> None:
    with pytest.raises(InvalidTransition) as raised:
        cancel(event(status=status))

    assert f"is {status}" in raised.value.message


# --- money ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.1, Decimal("0.1")),
        (0.2, Decimal("0.2")),
        (750.25, Decimal("750.25")),
        (974.5, Decimal("974.5")),
        (1500, Decimal("1500")),
        (0, Decimal("0")),
        (9999999999999.99, Decimal("9999999999999.99")),
        (Decimal("25.50"), Decimal("25.50")),
    ],
)
def test_to_money_is_the_number_as_written(value: float | int | Decimal, expected: Decimal) -> None:
    money = to_money(value)

    assert money == expected
    assert str(money) == str(expected)


def test_to_money_does_not_carry_float_noise() -> None:
    assert to_money(0.1) + to_money(0.2) == Decimal("0.3")


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        ("1", True),
        ("1.5", True),
        ("1.25", True),
        ("1.250", True),
        ("1.255", False),
        ("0.001", False),
        ("0E-10", True),
        ("-1.10", True),
        # past the 28 digits of Decimal's context, where quantize raised InvalidOperation (a 500 in PUT /__mock/state)
        ("1.0144566742128486e+308", True),
        ("1.0773833897682399e-209", False),
        ("12345678901234567890123456789012.345", False),
        ("12345678901234567890123456789012.340", True),
        ("NaN", False),
        ("Infinity", False),
    ],
)
def test_cents_precision(amount: str, expected: bool) -> None:
    assert has_cents_precision(Decimal(amount)) is expected
