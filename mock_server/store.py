"""The state of one session: the domain's records over a scenario's seed, and the operations on them.

The seed is shared by every session that uses the scenario and is never written: a session keeps only
what it changed (copy on write), so a new session or a reset costs nothing, whatever the scenario's size.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import TypeVar

from . import events as event_rules
from . import limits as limit_rules
from .clock import timestamp
from .documents import canonical_document
from .errors import (
    AccountAlreadyRegistered,
    AccountNotFound,
    EventAlreadyExists,
    EventNotFound,
    RecipientAlreadyInList,
    RecipientListAlreadyExists,
    RecipientListNotFound,
    RecipientNotFound,
)
from .models import (
    ACCOUNT_TARGET,
    APPLIED,
    AUTOMATICALLY_APPROVED,
    CREATED,
    NOT_APPLICABLE,
    RECIPIENT_LIST_TARGET,
    Account,
    Event,
    Limits,
    Outcome,
    Proposal,
    Recipient,
    RecipientList,
    Scenario,
)
from .shapes import uuid_text

T = TypeVar("T")

# Proposals kept per account: enough for any test to inspect, bounded for long fuzz runs.
MAX_PROPOSALS_PER_ACCOUNT = 1000


class Store:
    """One session's events and accounts. `reset()` goes back to the seed."""

    def __init__(self, seed: Scenario) -> None:
        self.seed = seed
        self._events: dict[str, Event] = {}
        self._accounts: dict[str, Account] = {}

    def reset(self, seed: Scenario | None = None) -> None:
        """Back to the seed (or to another scenario's): forget every change."""
        if seed is not None:
            self.seed = seed
        self._events.clear()
        self._accounts.clear()

    # --- events -------------------------------------------------------------------------------

    def find_event(self, key: str) -> Event | None:
        """The event of `key` (any letter case), or None."""
        key = uuid_text(key)
        event = self._events.get(key)
        return event if event is not None else self.seed.events.get(key)

    def event(self, key: str) -> Event:
        event = self.find_event(key)
        if event is None:
            raise EventNotFound(f"No event {key}.")
        return event

    def all_events(self) -> Iterator[Event]:
        return _overlay(self.seed.events, self._events)

    def add_event(self, event: Event) -> Event:
        if self.find_event(event.key) is not None:
            raise EventAlreadyExists(f"Event {event.key} exists already.")
        self._events[event.key] = event
        return event

    def pay_event(self, event: Event, amount: Decimal | None, paid_at: date) -> Event:
        self._events[event.key] = paid = event_rules.pay(event, amount, paid_at)
        return paid

    def cancel_event(self, event: Event) -> Event:
        self._events[event.key] = canceled = event_rules.cancel(event)
        return canceled

    # --- accounts -----------------------------------------------------------------------------

    def account(self, account_id: str) -> Account:
        account = self._accounts.get(account_id) or self.seed.accounts.get(account_id)
        if account is None:
            raise AccountNotFound(f"Account {account_id} is not registered.")
        return account

    def _writable_account(self, account_id: str) -> Account:
        """The session's own copy of the account, made on its first change."""
        account = self._accounts.get(account_id)
        if account is None:
            account = self._accounts[account_id] = copy.deepcopy(self.account(account_id))
        return account

    def all_accounts(self) -> Iterator[Account]:
        return _overlay(self.seed.accounts, self._accounts)

    def register_account(self, account_id: str, registration_date: str, limits: Limits, now: datetime) -> Account:
        if account_id in self._accounts or account_id in self.seed.accounts:
            raise AccountAlreadyRegistered(f"Account {account_id} is already registered.")
        account = Account(account_id, registration_date, limits, event_date=timestamp(now))
        self._accounts[account_id] = account
        return account

    def request_limit_update(self, account_id: str, pix: Limits, now: datetime, new_id: Callable[[], str]) -> Proposal:
        account = self._writable_account(account_id)
        proposal = _proposal(
            new_id(), ACCOUNT_TARGET, account.limits, pix, account.outcomes.limit_update_request, APPLIED, now
        )
        if proposal.status == APPLIED:
            account.limits = limit_rules.apply_change(account.limits, pix)
        _remember(account, proposal)
        return proposal

    def create_recipient_list(self, account_id: str, limits: Limits, now: datetime) -> RecipientList:
        if self.account(account_id).recipient_list is not None:
            raise RecipientListAlreadyExists(f"Account {account_id} already has a recipient list.")
        account = self._writable_account(account_id)
        account.recipient_list = RecipientList(limits, timestamp(now))
        return account.recipient_list

    def _recipient_list(self, account: Account) -> RecipientList:
        if account.recipient_list is None:
            raise RecipientListNotFound(f"Account {account.account_id} has no recipient list.")
        return account.recipient_list

    def add_recipient(
        self, account_id: str, document_number: str, now: datetime, new_id: Callable[[], str]
    ) -> Recipient:
        key = canonical_document(document_number)
        if self._recipient_list(self.account(account_id)).holds_document(key):
            raise RecipientAlreadyInList(
                f"Document {document_number} is already in the recipient list of account {account_id}."
            )
        outcome = self.account(account_id).outcomes.recipient
        recipient = Recipient(
            recipient_id=new_id(),
            document_number=document_number,
            document_key=key,
            recipient_status=outcome.status or CREATED,
            analysis_status=outcome.analysis_status or AUTOMATICALLY_APPROVED,
            client_notification_status=outcome.client_notification_status or NOT_APPLICABLE,
            event_date=timestamp(now),
        )
        self._recipient_list(self._writable_account(account_id)).add(recipient)
        return recipient

    def remove_recipient(self, account_id: str, recipient_id: str) -> None:
        if recipient_id not in self._recipient_list(self.account(account_id)).recipients:
            raise RecipientNotFound(f"Recipient {recipient_id} is not in the recipient list of account {account_id}.")
        self._recipient_list(self._writable_account(account_id)).remove(recipient_id)

    def request_recipient_list_limit_update(
        self, account_id: str, pix: Limits, now: datetime, new_id: Callable[[], str]
    ) -> Proposal:
        current = self._recipient_list(self.account(account_id)).limits
        account = self._writable_account(account_id)
        proposal = _proposal(
            new_id(),
            RECIPIENT_LIST_TARGET,
            current,
            pix,
            account.outcomes.recipient_list_limit_update_request,
            CREATED,
            now,
        )
        # The list's proposal has no "applied" status of its own: it takes effect when approved.
        if proposal.analysis_status == AUTOMATICALLY_APPROVED:
            self._recipient_list(account).limits = limit_rules.apply_change(current, pix)
        _remember(account, proposal)
        return proposal


def _proposal(
    proposal_id: str, target: str, current: Limits, pix: Limits, outcome: Outcome, default_status: str, now: datetime
) -> Proposal:
    return Proposal(
        limit_update_request_id=proposal_id,
        target=target,
        pix=pix,
        analysis_status=outcome.analysis_status or AUTOMATICALLY_APPROVED,
        client_notification_status=outcome.client_notification_status or limit_rules.notification_status(current, pix),
        status=outcome.status or default_status,
        event_date=timestamp(now),
    )


def _remember(account: Account, proposal: Proposal) -> None:
    account.limit_update_requests.append(proposal)
    if len(account.limit_update_requests) > MAX_PROPOSALS_PER_ACCOUNT:
        del account.limit_update_requests[0]


def _overlay(seed: Mapping[str, T], own: Mapping[str, T]) -> Iterator[T]:
    """The seed's records in their order, each replaced by the session's copy where it has one, then the
    session's new records."""
    for key, record in seed.items():
        yield own.get(key, record)
    for key, record in own.items():
        if key not in seed:
            yield record
