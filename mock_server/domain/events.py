"""The extraordinary event's state machine (interface 3.1) and its money rules, as pure functions."""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from decimal import Decimal
from typing import Any

from mock_server.domain.clock import parse_date
from mock_server.domain.errors import Detail, InvalidRequest, InvalidTransition
from mock_server.domain.models import CANCELED, PAID, PENDING, Event

# (status, action) -> next status. Anything missing is not allowed: paid and canceled are terminal.
# A partial payment leaves the event pending (interface: "pending_conciliation means not yet paid or
# partially paid"); settling it, by paying the open balance, makes it paid.
TRANSITIONS: dict[tuple[str, str], str] = {
    (PENDING, "pay_partially"): PENDING,
    (PENDING, "settle"): PAID,
    (PENDING, "cancel"): CANCELED,
}

_ACTION_WORDS = {"pay_partially": "paid", "settle": "paid", "cancel": "canceled"}


def next_status(event: Event, action: str) -> str:
    """The status `action` leads to, or InvalidTransition naming the current status."""
    try:
        return TRANSITIONS[(event.status, action)]
    except KeyError:
        raise InvalidTransition(
            f"Event {event.key} is {event.status}: it cannot be {_ACTION_WORDS.get(action, action)}."
        ) from None


def to_money(value: int | float | Decimal) -> Decimal:
    """A JSON/YAML number -> an exact Decimal (floats through their shortest repr: 0.1 is 0.1, not 0.1000…055)."""
    if isinstance(value, Decimal):
        return value
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def has_cents_precision(amount: Decimal) -> bool:
    """Whether a finite `amount` has no digit past the cents (1.500 has none). Read from its digits, not with
    `quantize`, which raises InvalidOperation for an amount of more than 28 digits (1e308, a schemathesis find)."""
    _, digits, exponent = amount.as_tuple()
    if not isinstance(exponent, int):  # NaN or infinity: no cents at all
        return False
    past_cents = -exponent - 2  # how many of its last digits lie past the cents
    return past_cents <= 0 or not any(digits[-past_cents:])


def _with_status(event: Event, status: str, **changes: object) -> Event:
    installments = [replace(i, event_conciliation_status=status) for i in event.installments]
    return replace(event, status=status, installments=installments, **changes)  # type: ignore[arg-type]


def pay(event: Event, amount: Decimal | None, paid_at: date) -> Event:
    """The event after a payment of `amount` (None: the whole open balance)."""
    balance = event.open_balance
    if amount is None:
        amount = balance
    elif amount <= 0 or not has_cents_precision(amount) or amount > balance:
        next_status(event, "pay_partially")  # a terminal event answers 409 before its amount is judged
        raise InvalidRequest(
            "The payment amount is invalid.",
            [Detail(("amount",), f"must be more than 0, in cents, and at most the open balance {balance}")],
        )
    action = "settle" if amount == balance else "pay_partially"
    status = next_status(event, action)
    paid_total = event.total_paid_amount + amount
    if status == PAID:
        return _with_status(event, PAID, total_paid_amount=paid_total, paid_at=paid_at)
    return replace(event, total_paid_amount=paid_total)


def cancel(event: Event) -> Event:
    """The event canceled, with every instalment; paid_at stays null."""
    return _with_status(event, next_status(event, "cancel"), paid_at=None)


def _cents(value: Any) -> int | None:
    """A JSON number in whole cents when its shortest writing has at most two decimal places, else None."""
    if type(value) is int:
        return value * 100
    if type(value) is float:
        whole, dot, fraction = repr(value).partition(".")
        if dot and len(fraction) <= 2 and fraction.isdigit():
            cents = int(whole.lstrip("-") + fraction.ljust(2, "0"))
            return -cents if whole.startswith("-") else cents
    return None


_ALLOWED_INSTALMENTS = {PENDING: (PENDING, PAID), PAID: (PAID,), CANCELED: (CANCELED,)}


def _plainly_consistent(data: dict[str, Any]) -> bool:
    """True only when no rule of cross_check_event can fire: the same rules in whole cents, without a Decimal,
    for the common case (a million-event scenario checks a million events). Anything unusual is left to them."""
    expected = _cents(data.get("total_expected_amount"))
    discount = _cents(data.get("total_discount_amount", 0))
    paid = _cents(data.get("total_paid_amount", 0))
    if expected is None or discount is None or paid is None or discount > expected or paid > expected - discount:
        return False
    if discount != 0 and data.get("amortization_type") != "present_amount":
        return False
    status = data.get("status", PENDING)
    allowed = _ALLOWED_INSTALMENTS.get(status) if isinstance(status, str) else None
    paid_at = data.get("paid_at")
    if allowed is None or (status == PAID) != bool(paid_at):
        return False
    try:
        for name in ("reference_date", "due_date", "paid_at"):
            value = data.get(name)
            if isinstance(value, str):
                date.fromisoformat(value)
    except ValueError:
        return False
    installments = data.get("event_conciliation_list")
    if not isinstance(installments, list):
        return False
    return all(type(i) is dict and i.get("event_conciliation_status", status) in allowed for i in installments)


def cross_check_event(data: dict[str, Any]) -> list[Detail]:
    """What the schema cannot say about one event (CONTRACT 3): consistent status and money.

    Each rule runs on the fields it reads when they are well-formed, whatever else is wrong with the event
    (a scenario's events are checked even when the schema found problems in them: every problem in one run);
    a malformed field is the schema's to report."""
    if _plainly_consistent(data):
        return []
    problems: list[Detail] = []
    status = data.get("status", PENDING)
    amounts: dict[str, Decimal | None] = {}
    for name in ("total_expected_amount", "total_discount_amount", "total_paid_amount"):
        value = data.get(name, None if name == "total_expected_amount" else 0)
        amounts[name] = to_money(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        amount = amounts[name]
        if amount is not None and amount.is_finite() and not has_cents_precision(amount):
            problems.append(Detail((name,), f"{amount} has more than two decimal places"))
    expected, discount, paid = amounts.values()
    amortization_type = data.get("amortization_type")
    if (
        discount is not None
        and discount != 0
        and isinstance(amortization_type, str)
        and amortization_type != "present_amount"
    ):
        problems.append(Detail(("total_discount_amount",), "must be 0 unless amortization_type is present_amount"))
    if expected is not None and discount is not None and discount > expected:
        problems.append(Detail(("total_discount_amount",), f"{discount} is more than total_expected_amount {expected}"))
    elif expected is not None and discount is not None and paid is not None and paid > expected - discount:
        problems.append(
            Detail(
                ("total_paid_amount",),
                f"{paid} is more than total_expected_amount - total_discount_amount ({expected - discount})",
            )
        )
    for name in ("reference_date", "due_date", "paid_at"):
        value = data.get(name)
        if isinstance(value, str):
            try:
                parse_date(value)
            except ValueError as exc:
                problems.append(Detail((name,), str(exc)))
    if status not in (PENDING, PAID, CANCELED):
        return problems  # the schema says what is wrong with it; nothing else can be judged against it
    if status == PAID and not data.get("paid_at"):
        problems.append(Detail(("paid_at",), "is required (a date) when status is paid"))
    if status != PAID and data.get("paid_at"):
        problems.append(Detail(("paid_at",), f"must be null when status is {status}"))
    allowed = {PAID: {PAID}, CANCELED: {CANCELED}, PENDING: {PENDING, PAID}}[status]
    installments = data.get("event_conciliation_list")
    for index, installment in enumerate(installments if isinstance(installments, list) else []):
        own = installment.get("event_conciliation_status", status) if isinstance(installment, dict) else status
        if isinstance(own, str) and own in (PENDING, PAID, CANCELED) and own not in allowed:
            problems.append(
                Detail(
                    ("event_conciliation_list", index, "event_conciliation_status"),
                    f"{own} contradicts the event's status {status}",
                )
            )
    return problems
