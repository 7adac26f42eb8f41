"""The state of one session: the domain's records over a scenario's seed, and the operations on them.

The seed is shared by every session that uses the scenario and is never written: a session keeps only
what it changed (copy on write), so a new session or a reset costs nothing, whatever the scenario's size.
"""

from __future__ import annotations

import copy
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

from mock_server.domain import events as event_rules
from mock_server.domain import limits as limit_rules
from mock_server.domain.clock import timestamp
from mock_server.domain.conversions import uuid_text
from mock_server.domain.documents import canonical_document
from mock_server.domain.errors import (
    AccountAlreadyRegistered,
    AccountNotFound,
    EventAlreadyExists,
    EventNotFound,
    ProviderStateUnreachable,
    RecipientAlreadyInList,
    RecipientListAlreadyExists,
    RecipientListNotFound,
    RecipientNotFound,
)
from mock_server.domain.models import (
    ACCOUNT_TARGET,
    APPLIED,
    AUTOMATICALLY_APPROVED,
    CREATED,
    NOT_APPLICABLE,
    PAID,
    RECIPIENT_LIST_TARGET,
    Account,
    Event,
    Limits,
    Outcome,
    Outcomes,
    Proposal,
    Recipient,
    RecipientList,
    Scenario,
)
from mock_server.state.bounds import Bounds, ByteMeter, check_room
from mock_server.state.conciliation_index import ConciliationIndex
from mock_server.state.footprint import (
    DICT_ENTRY,
    LIST_ENTRY,
    account_footprint,
    event_footprint,
    footprint,
    limits_bytes,
    proposal_bytes,
)

if TYPE_CHECKING:
    from mock_server.state.turn import Turn

T = TypeVar("T")

# Proposals kept per account, and per session (the oldest of any account goes first): enough for any test to
# inspect, bounded for long fuzz and load runs.
MAX_PROPOSALS_PER_ACCOUNT = 1000
MAX_PROPOSALS_PER_SESSION = 10_000
# A proposal's slots besides itself: its place in the account's list, the session's order and its set of ids.
_PROPOSAL_SLOTS = 8 + 16 + DICT_ENTRY
# A recipient's slots in its list's two dicts (by id, by document), and an instalment's in the session's index
# of conciliation keys.
_RECIPIENT_SLOTS = 2 * DICT_ENTRY
_KEY_SLOT = DICT_ENTRY
# An id's text, for the footprint of a record before its id is drawn (a refused write draws none): ids are
# version-4 UUIDs, 36 ASCII characters.
_UUID_SHAPE = "00000000-0000-4000-8000-000000000000"


# Attributes capture() does not copy: the read-only seeds, the bounds and the session's meter, and the events
# (copied by reference).
# `turn` is the request being answered, not state: a snapshot that copied it deep-copied the whole session graph
# behind it (its session, the sessions, their snapshots), each snapshot larger than the last.
_SHARED = frozenset({"seed", "base", "bounds", "meter", "_events", "turn"})


@dataclass(frozen=True, slots=True)
class StoreCopy:
    base: Scenario
    events: dict[str, Event]
    mutable: dict[str, Any]  # the other attributes, deep-copied


class Store:
    """One session's events and accounts. `reset()` goes back to the seed. What a session adds is capped by
    `bounds` (409 `capacity_exceeded`), in number and in bytes (`meter`: `held_bytes` is the store's share); its
    seed does not count."""

    def __init__(self, seed: Scenario, bounds: Bounds | None = None, meter: ByteMeter | None = None) -> None:
        self.seed = seed  # what a reset goes back to
        self.base = seed  # what the session's changes lie over: the seed, or a state loaded by PUT /__mock/state
        self.bounds = bounds or Bounds()
        if meter is None:
            meter = ByteMeter(self.bounds.max_session_bytes)
            meter.count(lambda: self.held_bytes)
        self.meter = meter
        # The request being answered in the session, while one holds it (state/turn.py): what a change of state
        # notes its domain events on. None outside a request.
        self.turn: Turn | None = None
        # The footprint (state/footprint.py) of what the session holds beyond its seed: its own events and
        # accounts, and what a loaded state holds beyond the seed's own.
        self.held_bytes = 0
        # The limits whose bytes were measured last, and those bytes: an account's new limits are the old ones of
        # its next change, measured once instead of twice (a limit change is the API's busiest write).
        self._measured_limits: tuple[Limits | None, int] = (None, 0)
        self._events: dict[str, Event] = {}
        self._accounts: dict[str, Account] = {}
        self._created_events = 0
        # event_conciliation_key -> event key, of the events this session created: the base's are in its
        # index (state/conciliation_index.py), and paying or canceling never changes an instalment's keys.
        self._created_conciliation_keys: dict[str, str] = {}
        self._registered_accounts = 0
        self._added_recipients = 0  # added minus removed, never below 0
        # (account_id, proposal id) of the proposals this session made, oldest first, and the ids still kept
        # with the bytes each holds (the per-account bound drops some first: the order skips them).
        self._proposals: deque[tuple[str, str]] = deque()
        self._proposal_ids: dict[str, int] = {}

    def reset(self, seed: Scenario | None = None) -> None:
        """Back to the seed (or to another scenario's): forget every change."""
        if seed is not None:
            self.seed = seed
        self.base = self.seed
        self._events.clear()
        self._created_conciliation_keys.clear()
        self._accounts.clear()
        self._created_events = self._registered_accounts = self._added_recipients = 0
        self._proposals.clear()
        self._proposal_ids.clear()
        self.held_bytes = 0

    def load(self, state: Scenario, state_bytes: int) -> None:
        """The session's state becomes `state` (a validated scenario document); a reset still goes to the seed.
        `state_bytes`: what it holds beyond the seed's own footprint, counted against the session's bound by the
        caller (the session, which counts the state's schedules with it)."""
        seed = self.seed
        self.reset()
        self.base = state
        self.seed = seed
        self.held_bytes = state_bytes

    def capture(self) -> StoreCopy:
        """A copy of everything this store holds, for restore(): accounts are changed in place, so they are copied;
        events are replaced, never changed, so the mapping is enough."""
        mutable = {name: copy.deepcopy(value) for name, value in vars(self).items() if name not in _SHARED}
        return StoreCopy(self.base, dict(self._events), mutable)

    def restore(self, saved: StoreCopy) -> None:
        for name, value in saved.mutable.items():
            setattr(self, name, copy.deepcopy(value))
        self.base = saved.base
        self._events = dict(saved.events)

    # --- the state file (state/persistence.py) ---------------------------------------------------------------

    def view(self) -> StoreCopy:
        """What the store holds now, safe to read from another thread while the session goes on: what the state
        file keeps of it (its own accounts copied one level deep, as the session changes them in place)."""
        mutable = {
            "_accounts": {key: _account_copy(account) for key, account in self._accounts.items()},
            "_added_recipients": self._added_recipients,
            "_proposals": list(self._proposals),
            "held_bytes": self.held_bytes,
        }
        return StoreCopy(self.base, dict(self._events), mutable)

    def adopt(
        self,
        base: Scenario,
        events: dict[str, Event],
        accounts: dict[str, Account],
        added_recipients: int,
        proposals: list[tuple[str, str]],
        held_bytes: int,
    ) -> None:
        """The store holds these records (a state file's): what follows from them (the counts, the index of
        created events' keys, the bytes of each proposal kept) is made again."""
        self.base = base
        self._events = events
        self._accounts = accounts
        created = [event for key, event in events.items() if key not in base.events]
        self._created_events = len(created)
        self._created_conciliation_keys = {i.event_conciliation_key: e.key for e in created for i in e.installments}
        self._registered_accounts = sum(1 for key in accounts if key not in base.accounts)
        self._added_recipients = added_recipients
        self._proposals = deque(proposals)
        self._proposal_ids = {}
        for account_id, proposal_id in proposals:
            account = accounts.get(account_id)
            for proposal in account.limit_update_requests if account is not None else ():
                if proposal.limit_update_request_id == proposal_id:
                    self._proposal_ids[proposal_id] = proposal_bytes(proposal) + _PROPOSAL_SLOTS
        self.held_bytes = held_bytes

    def hand_over(self) -> StoreCopy:
        """Everything the store holds as a copy for restore(), without copying: for a store made only for that."""
        mutable = {name: value for name, value in vars(self).items() if name not in _SHARED}
        return StoreCopy(self.base, dict(self._events), mutable)

    # --- events -------------------------------------------------------------------------------

    def find_event(self, key: str) -> Event | None:
        """The event of `key` (any letter case), or None."""
        key = uuid_text(key)
        event = self._events.get(key)
        return event if event is not None else self.base.events.get(key)

    def event(self, key: str) -> Event:
        event = self.find_event(key)
        if event is None:
            raise EventNotFound(f"No event {key}.")
        return event

    def all_events(self) -> Iterator[Event]:
        return _overlay(self.base.events, self._events)

    def counts(self) -> tuple[int, int]:
        """How many events and accounts the session has, without walking the seed: each creation adds one
        (a key the base has not), nothing is ever removed."""
        return len(self.base.events) + self._created_events, len(self.base.accounts) + self._registered_accounts

    def event_using(self, conciliation_key: str, base_index: ConciliationIndex) -> str | None:
        """The key of the event whose instalment has `conciliation_key` (lower case), or None; `base_index` is
        the index of `self.base.events` (conciliation_index.ready)."""
        return self._created_conciliation_keys.get(conciliation_key) or base_index.owner(conciliation_key)

    def add_event(self, event: Event) -> Event:
        if self.find_event(event.key) is not None:
            raise EventAlreadyExists(f"Event {event.key} exists already.")
        check_room(self._created_events, self.bounds.max_events, "events created", "--max-events")
        cost = event_footprint(event) + len(event.installments) * _KEY_SLOT
        self.meter.check(cost, "The event")
        self._events[event.key] = event
        self._created_events += 1
        for instalment in event.installments:
            self._created_conciliation_keys[instalment.event_conciliation_key] = event.key
        self.held_bytes += cost
        return event

    def pay_event(self, event: Event, amount: Decimal | None, paid_at: date) -> Event:
        paid = self._replace_event(event_rules.pay(event, amount, paid_at))
        turn = self.turn
        if turn is not None and turn.events is not None:  # a turn that wants its events (tracing on)
            what = "pix_mock.event.paid" if paid.status == PAID else "pix_mock.event.partially_paid"
            attributes = {"pix_mock.event.key": event.key}
            if amount is not None:  # a part of the balance; none: the open balance
                attributes["pix_mock.event.amount"] = str(amount)
            turn.note(what, attributes)
        return paid

    def cancel_event(self, event: Event) -> Event:
        canceled = self._replace_event(event_rules.cancel(event))
        turn = self.turn
        if turn is not None and turn.events is not None:
            turn.note("pix_mock.event.canceled", {"pix_mock.event.key": event.key})
        return canceled

    def _replace_event(self, event: Event) -> Event:
        """The session's copy of the event becomes `event` (its first change of a base event makes the copy)."""
        old = self._events.get(event.key)
        more = event_footprint(event) - (event_footprint(old) if old is not None else 0)
        self.meter.check(more, "The event's new state")
        self._events[event.key] = event
        self.held_bytes += more
        return event

    # --- accounts -----------------------------------------------------------------------------

    def account(self, account_id: str) -> Account:
        account = self._accounts.get(account_id) or self.base.accounts.get(account_id)
        if account is None:
            raise AccountNotFound(f"Account {account_id} is not registered.")
        return account

    def has_account(self, account_id: str) -> bool:
        return account_id in self._accounts or account_id in self.base.accounts

    def _writable_account(self, account_id: str, more: int, what: str) -> Account:
        """The session's own copy of the account, made on its first change, with room for `more` bytes of the
        change (of `what`) besides the copy; counted here, so the caller must then make it."""
        account = self._accounts.get(account_id)
        if account is None:
            base = self.account(account_id)
            copied = account_footprint(base)
            self.meter.check(copied + more, what)
            account = self._accounts[account_id] = copy.deepcopy(base)
            self.held_bytes += copied
        else:
            self.meter.check(more, what)
        self.held_bytes += more
        return account

    def all_accounts(self) -> Iterator[Account]:
        return _overlay(self.base.accounts, self._accounts)

    def snapshot(self) -> tuple[Events, list[Account]]:
        """Every event and account as they are now, safe to read from another thread while the session changes.

        Cheap: events are replaced on change, never changed, and the seed's records are never written, so the
        events are the base and a copy of the session's own, walked by whoever reads them (a million-event
        seed takes seconds to unpack: state/export.py does it in its worker); only the session's own accounts change
        in place (their recipients and proposals), so only those are copied, one level deep."""
        events = Events(self.base.events, dict(self._events))
        accounts = [
            _account_copy(account) if self._accounts.get(account.account_id) is account else account
            for account in self.all_accounts()
        ]
        return events, accounts

    def register_account(self, account_id: str, registration_date: str, limits: Limits, now: datetime) -> Account:
        if account_id in self._accounts or account_id in self.base.accounts:
            raise AccountAlreadyRegistered(f"Account {account_id} is already registered.")
        check_room(self._registered_accounts, self.bounds.max_accounts, "accounts registered", "--max-accounts")
        account = Account(account_id, registration_date, limits, event_date=timestamp(now))
        cost = account_footprint(account)
        self.meter.check(cost, "The account")
        self._accounts[account_id] = account
        self._registered_accounts += 1
        self.held_bytes += cost
        turn = self.turn
        if turn is not None and turn.events is not None:
            turn.note("pix_mock.account.registered", {"pix_mock.account.id": account_id})
        return account

    def request_limit_update(self, account_id: str, pix: Limits, now: datetime, new_id: Callable[[], str]) -> Proposal:
        current = self.account(account_id)
        proposal = _proposal(
            _UUID_SHAPE, ACCOUNT_TARGET, current.limits, pix, current.outcomes.limit_update_request, APPLIED, now
        )
        limits = limit_rules.apply_change(current.limits, pix) if proposal.status == APPLIED else current.limits
        pix_bytes = limits_bytes(pix)
        proposal_cost = proposal_bytes(proposal, pix_bytes) + _PROPOSAL_SLOTS
        # The new limits are nearly always the proposal's own (it names every mode the account has): measured once.
        more = proposal_cost + self._limits_change(current.limits, limits, pix_bytes if limits is pix else None)
        account = self._writable_account(account_id, more, "The proposal")
        proposal.limit_update_request_id = new_id()
        account.limits = limits
        self._remember(account, proposal, proposal_cost)
        turn = self.turn
        if turn is not None and turn.events is not None:
            turn.note("pix_mock.limit_change.proposed", _proposal_ids(account_id, proposal, "account"))
        return proposal

    def create_recipient_list(self, account_id: str, limits: Limits, now: datetime) -> RecipientList:
        if self.account(account_id).recipient_list is not None:
            raise RecipientListAlreadyExists(f"Account {account_id} already has a recipient list.")
        recipient_list = RecipientList(limits, timestamp(now))
        account = self._writable_account(account_id, footprint(recipient_list), "The recipient list")
        account.recipient_list = recipient_list
        return recipient_list

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
        check_room(self._added_recipients, self.bounds.max_recipients, "recipients added", "--max-recipients")
        outcome = self.account(account_id).outcomes.recipient
        recipient = Recipient(
            recipient_id=_UUID_SHAPE,
            document_number=document_number,
            document_key=key,
            recipient_status=outcome.status or CREATED,
            analysis_status=outcome.analysis_status or AUTOMATICALLY_APPROVED,
            client_notification_status=outcome.client_notification_status or NOT_APPLICABLE,
            event_date=timestamp(now),
        )
        more = footprint(recipient) + _RECIPIENT_SLOTS
        account = self._writable_account(account_id, more, "The recipient")
        recipient.recipient_id = new_id()
        self.held_bytes += sys.getsizeof(recipient.recipient_id) - sys.getsizeof(_UUID_SHAPE)  # 0 for a UUID
        self._recipient_list(account).add(recipient)
        self._added_recipients += 1
        turn = self.turn
        if turn is not None and turn.events is not None:
            turn.note(
                "pix_mock.recipient.added",
                {"pix_mock.account.id": account_id, "pix_mock.recipient.id": recipient.recipient_id},
            )
        return recipient

    def remove_recipient(self, account_id: str, recipient_id: str) -> None:
        recipients = self._recipient_list(self.account(account_id)).recipients
        if recipient_id not in recipients:
            raise RecipientNotFound(f"Recipient {recipient_id} is not in the recipient list of account {account_id}.")
        less = footprint(recipients[recipient_id]) + _RECIPIENT_SLOTS
        self._recipient_list(self._writable_account(account_id, -less, "The removal")).remove(recipient_id)
        self._added_recipients = max(0, self._added_recipients - 1)
        turn = self.turn
        if turn is not None and turn.events is not None:
            turn.note(
                "pix_mock.recipient.removed", {"pix_mock.account.id": account_id, "pix_mock.recipient.id": recipient_id}
            )

    def request_recipient_list_limit_update(
        self, account_id: str, pix: Limits, now: datetime, new_id: Callable[[], str]
    ) -> Proposal:
        current_account = self.account(account_id)
        current = self._recipient_list(current_account).limits
        proposal = _proposal(
            _UUID_SHAPE,
            RECIPIENT_LIST_TARGET,
            current,
            pix,
            current_account.outcomes.recipient_list_limit_update_request,
            CREATED,
            now,
        )
        # The list's proposal has no "applied" status of its own: it takes effect when approved.
        approved = proposal.analysis_status == AUTOMATICALLY_APPROVED
        limits = limit_rules.apply_change(current, pix) if approved else current
        pix_bytes = limits_bytes(pix)
        proposal_cost = proposal_bytes(proposal, pix_bytes) + _PROPOSAL_SLOTS
        more = proposal_cost + self._limits_change(current, limits, pix_bytes if limits is pix else None)
        account = self._writable_account(account_id, more, "The proposal")
        proposal.limit_update_request_id = new_id()
        self._recipient_list(account).limits = limits
        self._remember(account, proposal, proposal_cost)
        turn = self.turn
        if turn is not None and turn.events is not None:
            turn.note("pix_mock.limit_change.proposed", _proposal_ids(account_id, proposal, "recipient_list"))
        return proposal

    # --- provider states (POST /__mock/pact/states): facts put in place directly --------------------------

    def put_event(self, event: Event) -> None:
        """The session's event of that key becomes `event`, whatever it was (its instalments' keys must be the ones
        the key's event has, if it has one: the caller checks)."""
        if self.find_event(event.key) is None:
            self.add_event(event)
        else:
            self._replace_event(event)

    def remove_event(self, key: str) -> bool:
        """Forget an event this session created; False when there is none of that key. Raises
        ProviderStateUnreachable for an event of the base: a session never takes the seed's records away."""
        key = uuid_text(key)
        if key in self.base.events:
            raise ProviderStateUnreachable(f"Event {key} is in the scenario {self.base.name!r}: it cannot be removed.")
        event = self._events.pop(key, None)
        if event is None:
            return False
        self._created_events -= 1
        for instalment in event.installments:
            self._created_conciliation_keys.pop(instalment.event_conciliation_key, None)
        self.held_bytes -= event_footprint(event) + len(event.installments) * _KEY_SLOT  # as add_event counted
        return True

    def put_account(
        self, account_id: str, registration_date: str, limits: Limits, outcomes: Outcomes, now: datetime
    ) -> Account:
        """The account registered with these facts: registered when missing, else its own facts replaced (its
        recipient list and proposals stay)."""
        if self._accounts.get(account_id) is None and self.base.accounts.get(account_id) is None:
            account = self.register_account(account_id, registration_date, limits, now)
            more = footprint(outcomes) - footprint(account.outcomes)
            self.meter.check(more, "The account's outcomes")
            self.held_bytes += more
        else:
            current = self.account(account_id)
            changed = copy.copy(current)
            changed.registration_date, changed.limits, changed.outcomes = registration_date, limits, outcomes
            more = account_footprint(changed) - account_footprint(current)
            account = self._writable_account(account_id, more, "The account")
            account.registration_date = registration_date
            account.limits = limits
        account.outcomes = outcomes
        return account

    def remove_account(self, account_id: str) -> bool:
        """Forget an account this session registered; False when there is none. Raises ProviderStateUnreachable
        for an account of the base."""
        if account_id in self.base.accounts:
            raise ProviderStateUnreachable(
                f"Account {account_id} is in the scenario {self.base.name!r}: it cannot be unregistered."
            )
        account = self._accounts.pop(account_id, None)
        if account is None:
            return False
        # What it held: its footprint, but its proposals as they were counted (self._remember), not as walked.
        made = [p for p in account.limit_update_requests if p.limit_update_request_id in self._proposal_ids]
        counted_proposals = sum(self._proposal_ids.pop(p.limit_update_request_id) for p in made)
        walked_proposals = sum(footprint(p) + LIST_ENTRY for p in made)
        less = account_footprint(account) - walked_proposals + counted_proposals
        self.held_bytes = max(0, self.held_bytes - less)
        self._registered_accounts -= 1
        if account.recipient_list is not None:
            self._added_recipients = max(0, self._added_recipients - len(account.recipient_list.recipients))
        return True

    def put_recipient_list(self, account_id: str, limits: Limits, now: datetime) -> RecipientList:
        """The account has a recipient list with these limits: made when missing (empty), else its limits replaced."""
        current = self.account(account_id).recipient_list
        made = RecipientList(limits, timestamp(now)) if current is None else None
        more = footprint(made) if made is not None else self._limits_change(current.limits, limits) if current else 0
        account = self._writable_account(account_id, more, "The recipient list")
        if account.recipient_list is None:
            account.recipient_list = made
        else:
            account.recipient_list.limits = limits
        assert account.recipient_list is not None
        return account.recipient_list

    def remove_recipient_list(self, account_id: str) -> None:
        """The account has no recipient list (nor its recipients)."""
        current = self.account(account_id).recipient_list
        if current is None:
            return
        less = footprint(current) + len(current.recipients) * _RECIPIENT_SLOTS
        account = self._writable_account(account_id, -less, "The removal")
        assert account.recipient_list is not None
        self._added_recipients = max(0, self._added_recipients - len(account.recipient_list.recipients))
        account.recipient_list = None

    def put_recipient(self, account_id: str, recipient_id: str, document_number: str, now: datetime) -> Recipient:
        """The recipient list holds the document under `recipient_id`: whatever recipient had that id or that
        document (in any layout) gives way."""
        key = canonical_document(document_number)
        self.remove_recipients(account_id, recipient_id=recipient_id, document_key=key)
        return self.add_recipient(account_id, document_number, now, lambda: recipient_id)

    def remove_recipients(
        self, account_id: str, recipient_id: str | None = None, document_key: str | None = None
    ) -> None:
        """The recipient list holds no recipient of that id, nor one of that document (canonical form)."""
        recipients = self._recipient_list(self.account(account_id)).recipients
        gone = [
            r.recipient_id
            for r in recipients.values()
            if r.recipient_id == recipient_id or (document_key is not None and r.document_key == document_key)
        ]
        for found in gone:
            self.remove_recipient(account_id, found)

    def _limits_change(self, old: Limits, new: Limits, new_bytes: int | None = None) -> int:
        """The bytes `new` holds more than `old` (nothing to measure when a change was not applied; `new_bytes`:
        `limits_bytes(new)` when the caller has it)."""
        if new is old:
            return 0
        measured, measured_bytes = self._measured_limits
        old_bytes = measured_bytes if measured is old else limits_bytes(old)
        if new_bytes is None:
            new_bytes = limits_bytes(new)
        self._measured_limits = (new, new_bytes)
        return new_bytes - old_bytes

    def _remember(self, account: Account, proposal: Proposal, cost: int) -> None:
        """Keep the proposal: the last MAX_PROPOSALS_PER_ACCOUNT of the account, and the last
        MAX_PROPOSALS_PER_SESSION the session made over every account (the oldest of any account goes first)."""
        kept = account.limit_update_requests
        kept.append(proposal)
        self._proposals.append((account.account_id, proposal.limit_update_request_id))
        self._proposal_ids[proposal.limit_update_request_id] = cost
        if len(kept) > MAX_PROPOSALS_PER_ACCOUNT:
            dropped = kept.pop(0).limit_update_request_id
            self.held_bytes -= self._proposal_ids.pop(dropped, 0)
            if self._proposals[0][1] == dropped:  # the session's oldest too: its place in the order goes now
                self._proposals.popleft()
        while len(self._proposal_ids) > MAX_PROPOSALS_PER_SESSION:
            account_id, proposal_id = self._proposals.popleft()
            if proposal_id in self._proposal_ids:
                self.held_bytes -= self._proposal_ids.pop(proposal_id)
                held = self._accounts[account_id].limit_update_requests
                held[:] = [p for p in held if p.limit_update_request_id != proposal_id]
        if len(self._proposals) > 2 * len(self._proposal_ids) + 1024:
            # The order still names proposals the per-account bound dropped: keep only the live ones.
            self._proposals = deque(p for p in self._proposals if p[1] in self._proposal_ids)


def _proposal_ids(account_id: str, proposal: Proposal, target: str) -> dict[str, str]:
    """A limit change's span event attributes: whose limits, which proposal, what became of it."""
    return {
        "pix_mock.account.id": account_id,
        "pix_mock.limit_change.id": proposal.limit_update_request_id,
        "pix_mock.limit_change.target": target,
        "pix_mock.limit_change.status": proposal.status,
    }


def _proposal(
    proposal_id: str, target: str, current: Limits, pix: Limits, outcome: Outcome, default_status: str, now: datetime
) -> Proposal:
    # Positional, in the order of Proposal's fields (limit_update_request_id, target, pix, analysis_status,
    # client_notification_status, status, event_date): keywords cost more, once per limit change.
    return Proposal(
        proposal_id,
        target,
        pix,
        outcome.analysis_status or AUTOMATICALLY_APPROVED,
        outcome.client_notification_status or limit_rules.notification_status(current, pix),
        outcome.status or default_status,
        timestamp(now),
    )


def _account_copy(account: Account) -> Account:
    """The account with its own containers copied: what the session changes in place (limits are replaced)."""
    snapshot = copy.copy(account)
    snapshot.limit_update_requests = list(account.limit_update_requests)
    if account.recipient_list is not None:
        snapshot.recipient_list = copy.copy(account.recipient_list)
        snapshot.recipient_list.recipients = dict(account.recipient_list.recipients)
    return snapshot


class Events(Iterable[Event]):
    """A session's events at one moment, in the order of the state export: the base's, each replaced by the
    session's copy where it has one, then the session's new ones. Walked on each iteration; `own` must not
    change (a copy)."""

    def __init__(self, base: Mapping[str, Event], own: Mapping[str, Event]) -> None:
        self._base = base
        self._own = own

    def __iter__(self) -> Iterator[Event]:
        return _overlay(self._base, self._own)


def _overlay(seed: Mapping[str, T], own: Mapping[str, T]) -> Iterator[T]:
    """The seed's records in their order, each replaced by the session's copy where it has one, then the
    session's new records."""
    for key, record in seed.items():
        yield own.get(key, record)
    for key, record in own.items():
        if key not in seed:
            yield record
