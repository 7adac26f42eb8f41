"""Record mode's state (`mock-server record`): the options, the empty scenario a recording starts from, a session
kept in step with what the target showed (its records put in place through the store's own operations), and the
scenario document written at the end, with personal identifiers replaced."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mock_server.domain.conversions import account_to_scenario, event_to_scenario
from mock_server.domain.models import Account, Event, Outcomes, Scenario
from mock_server.domain.pseudonyms import Pseudonymizer
from mock_server.state.store import Store


@dataclass(frozen=True)
class RecordOptions:
    """Where a recording goes and how identifiers are replaced."""

    out: Path  # the scenario file written at the end (NAME.yaml: the scenario is named after it)
    target: str = ""  # the provider's base URL, for the scenario's description
    pseudonym_key: bytes | None = None  # None: a random key for this recording alone
    pseudonym_map: Path | None = None  # where the map original -> pseudonym goes (JSON); None: nowhere
    keep_identifiers: bool = False  # write the originals

    @property
    def name(self) -> str:
        return self.out.stem


def empty_scenario(options: RecordOptions) -> Scenario:
    """What a recording starts from: nothing, so the file holds only what the target showed."""
    return Scenario(options.name, f"recorded from {options.target}" if options.target else "recorded")


@dataclass
class SessionRecord:
    """What a recording knows of one session beyond its store: the accounts whose registration it saw, and the
    events whose last lookup answer the mock would not give byte for byte (key -> why)."""

    registered: set[str] = field(default_factory=set)
    unreproduced: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # calls that could not be recorded, and why (the last 100)


# --- the session kept in step -----------------------------------------------------------------------


def put_event(store: Store, event: Event) -> None:
    """The session's event of that key becomes `event` (one whose instalments changed keys is replaced whole)."""
    old = store.find_event(event.key)
    if old is not None and [i.event_conciliation_key for i in old.installments] != [
        i.event_conciliation_key for i in event.installments
    ]:
        store.remove_event(event.key)
    store.put_event(event)


def drop_event(store: Store, key: str) -> None:
    store.remove_event(key)


def put_account(store: Store, account_id: str, account: Account | None, now: datetime) -> None:
    """The session's account `account_id` becomes `account` (None: the session holds none), through the store's
    provider-state operations, so its bounds and byte counts hold."""
    if account is None:
        store.remove_account(account_id)
        return
    if store.has_account(account_id) and _same_facts(store.account(account_id), account):
        # The mock's own answer made what the target showed (the usual case): only the instants differ, which
        # the store does not count. Putting the account again would walk its thousand proposals.
        current = store.account(account_id)
        current.event_date = account.event_date
        if current.recipient_list is not None and account.recipient_list is not None:
            current.recipient_list.event_date = account.recipient_list.event_date
            for recipient_id, recipient in account.recipient_list.recipients.items():
                current.recipient_list.recipients[recipient_id].event_date = recipient.event_date
        return
    stored = store.put_account(account_id, account.registration_date, account.limits, Outcomes(), now)
    stored.event_date = account.event_date
    shown = account.recipient_list
    if shown is None:
        store.remove_recipient_list(account_id)
        return
    kept = store.put_recipient_list(account_id, shown.limits, now)
    kept.event_date = shown.event_date
    gone = [rid for rid, r in kept.recipients.items() if shown.recipients.get(rid) != r]
    for recipient_id in gone:
        store.remove_recipients(account_id, recipient_id=recipient_id)
    for recipient_id, recipient in shown.recipients.items():
        if recipient_id not in kept.recipients:
            added = store.put_recipient(account_id, recipient_id, recipient.document_number, now)
            added.recipient_status = recipient.recipient_status
            added.analysis_status = recipient.analysis_status
            added.client_notification_status = recipient.client_notification_status
            added.event_date = recipient.event_date


def _same_facts(held: Account, shown: Account) -> bool:
    """Whether the session's account holds what `shown` does, but for the instants (event_date) of each part."""
    if (held.registration_date, held.limits) != (shown.registration_date, shown.limits):
        return False
    mine, theirs = held.recipient_list, shown.recipient_list
    if mine is None or theirs is None:
        return mine is theirs
    if mine.limits != theirs.limits or mine.recipients.keys() != theirs.recipients.keys():
        return False
    return all(
        dataclasses.replace(recipient, event_date=None) == dataclasses.replace(theirs.recipients[rid], event_date=None)
        for rid, recipient in mine.recipients.items()
    )


# --- the file ------------------------------------------------------------------------------------


@dataclass
class RecordedDocument:
    """The scenario document of a recording, and what the command says about it."""

    document: dict[str, Any]
    partial: list[str]  # ids (as written) of the accounts whose registration was not recorded
    notes: list[str]  # what was left out, and why


def recorded_document(
    description: str,
    events: list[Event],
    accounts: list[Account],
    registered: set[str],
    pseudonyms: Pseudonymizer | None,
) -> RecordedDocument:
    """The state as a scenario file: events as their lookups answered them, accounts with their windows,
    recipient lists and recipients (not the proposals: the mock's own answers, beside the target's); account ids
    and document numbers replaced by `pseudonyms` when given. What a scenario cannot hold (an account none of whose
    windows a call showed, a list made before the recording) is left out and noted."""
    notes: list[str] = []
    partial: list[str] = []
    written_accounts = []
    for account in accounts:
        shown_id = pseudonyms.account_id(account.account_id) if pseudonyms else account.account_id
        if not account.limits:
            notes.append(f"account {shown_id}: not written: no call showed any of its limits")
            continue
        data = account_to_scenario(account)
        data.pop("limit_update_requests", None)
        data.pop("outcomes", None)
        data["account_id"] = shown_id
        recipient_list = data.get("recipient_list")
        if recipient_list is not None and not recipient_list["limit"]["pix"]:
            del data["recipient_list"]
            notes.append(
                f"account {shown_id}: recipient list not written: made before the recording, its limits unknown"
            )
        elif recipient_list is not None and pseudonyms is not None:
            for recipient in recipient_list["recipients"]:
                recipient["document_number"] = pseudonyms.document(recipient["document_number"])
        if account.account_id not in registered:
            partial.append(shown_id)
        written_accounts.append(data)
    document = {
        "description": description,
        "events": [event_to_scenario(e) for e in events],
        "accounts": written_accounts,
    }
    return RecordedDocument(document, partial, notes)


def write_atomically(path: Path, text: str, private: bool = False) -> None:
    """`text` into `path`, whole or not at all (a temporary file beside it, renamed); `private`: mode 0600."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        if not private:
            os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
