"""The domain's records: plain dataclasses, no HTTP and no rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import NamedTuple

# The five PIX modes of interface 2.3, in the order they are listed there.
PIX_MODES = (
    "withdraw",
    "change",
    "transaction",
    "transaction_natural_person",
    "transaction_legal_person",
)
RECIPIENT_LIST_MODE = "transaction"

# Every status word the mock writes, in one place.
# Events and their instalments (interface 2.1, 3.1):
PENDING = "pending_conciliation"
PAID = "paid"
CANCELED = "canceled"
EVENT_STATUSES = (PENDING, PAID, CANCELED)
EXTRAORDINARY_EVENT = "extraordinary_event"
# Proposals and recipients (interface 2.4, 2.5: the values its examples show; the enumerations are open):
AUTOMATICALLY_APPROVED = "automatically_approved"
AWAITING_NOTIFICATION = "awaiting_notification_period"
NOT_APPLICABLE = "not_applicable"
APPLIED = "applied"
CREATED = "created"
# A proposal's status field is named after what it changes (CONTRACT 2: the list's answer uses recipient_status).
ACCOUNT_TARGET = "account"
RECIPIENT_LIST_TARGET = "recipient_list"
PROPOSAL_STATUS_FIELD = {ACCOUNT_TARGET: "limit_update_request_status", RECIPIENT_LIST_TARGET: "recipient_status"}


class LimitWindow(NamedTuple):
    """One time-of-day window: from `start_time` (HH:MM:SS plus offset) the cap is `amount` cents.

    A NamedTuple, not a frozen dataclass: a limit change builds several per request, and tuples are built
    several times faster."""

    start_time: str
    amount: int


# mode -> its windows (1 or 2: daytime first, nighttime second)
Limits = dict[str, tuple[LimitWindow, ...]]


@dataclass(slots=True)
class Installment:
    event_conciliation_key: str
    installment_key: str
    event_conciliation_status: str = PENDING
    event_conciliation_type: str = EXTRAORDINARY_EVENT


@dataclass(slots=True)
class Event:
    key: str
    security_key: str
    investment_key: str
    amortization_type: str
    total_expected_amount: Decimal
    total_discount_amount: Decimal
    total_paid_amount: Decimal
    status: str
    reference_date: date
    due_date: date
    paid_at: date | None
    installments: list[Installment]

    @property
    def open_balance(self) -> Decimal:
        return self.total_expected_amount - self.total_discount_amount - self.total_paid_amount


@dataclass(frozen=True, slots=True)
class Outcome:
    """Status values a proposal or recipient answers with; None keeps the computed default."""

    analysis_status: str | None = None
    client_notification_status: str | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class Outcomes:
    limit_update_request: Outcome = Outcome()
    recipient_list_limit_update_request: Outcome = Outcome()
    recipient: Outcome = Outcome()


@dataclass(slots=True)
class Recipient:
    recipient_id: str
    document_number: str  # as the caller wrote it
    document_key: str  # canonical bare form: two layouts of one number are one recipient
    recipient_status: str
    analysis_status: str
    client_notification_status: str
    event_date: str | None


@dataclass(slots=True)
class RecipientList:
    limits: Limits
    event_date: str | None
    recipients: dict[str, Recipient] = field(default_factory=dict)
    # document_key -> recipient_id: finds a number in either layout without a scan of the whole list
    _by_document: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._by_document = {r.document_key: r.recipient_id for r in self.recipients.values()}

    def holds_document(self, document_key: str) -> bool:
        return document_key in self._by_document

    def add(self, recipient: Recipient) -> None:
        self.recipients[recipient.recipient_id] = recipient
        self._by_document[recipient.document_key] = recipient.recipient_id

    def remove(self, recipient_id: str) -> None:
        del self._by_document[self.recipients.pop(recipient_id).document_key]


@dataclass(slots=True)
class Proposal:
    """A limit modification proposal, for the account (`target="account"`) or its recipient list."""

    limit_update_request_id: str
    target: str
    pix: Limits
    analysis_status: str
    client_notification_status: str
    status: str  # limit_update_request_status, or recipient_status for the recipient list
    event_date: str


@dataclass(slots=True)
class Account:
    account_id: str
    registration_date: str
    limits: Limits
    event_date: str | None = None
    recipient_list: RecipientList | None = None
    outcomes: Outcomes = Outcomes()
    limit_update_requests: list[Proposal] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ScheduledTransition:
    """A transition a test asked for ahead of time: `action` on the event `key` after `after_lookups` lookups
    of it, or once the session clock reaches `at` (exactly one of the two)."""

    key: str
    action: str  # pay | cancel
    amount: Decimal | None = None  # pay only; None: the open balance when it applies
    after_lookups: int | None = None
    at: datetime | None = None


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: the seed sessions start from, never written (sessions keep their own changes).

    `events` is a read-only mapping: a loaded scenario holds them packed (seed.SeedEvents)."""

    name: str
    description: str
    events: Mapping[str, Event] = field(default_factory=dict)
    accounts: dict[str, Account] = field(default_factory=dict)
    schedules: tuple[ScheduledTransition, ...] = ()
