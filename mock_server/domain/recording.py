"""What a real provider's answer to one public call shows of its state (record mode, `mock-server record`): the
account as it is after the call, from the account as the recording knew it before, the call and the answer.

Pure: the caller puts the result in the session (state/recording.py). A call the provider refused changes
nothing; an account the recording meets first in a later call (its registration not recorded) is made from what
that call shows of it, and is partial. Which operations show an event or an account is their declaration's
(domain/operations.py `shows`); what each one that shows an account does to it is its rule here (`ACCOUNT_RULES`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mock_server.domain import limits as limit_rules
from mock_server.domain.conversions import event_from_scenario, limits_from_json
from mock_server.domain.documents import canonical_document
from mock_server.domain.models import (
    APPLIED,
    AUTOMATICALLY_APPROVED,
    CREATED,
    NOT_APPLICABLE,
    Account,
    Event,
    Recipient,
    RecipientList,
)
from mock_server.domain.operations import OPERATIONS, Fact, Shows

# What record mode puts in step after each call, read from the operations' declarations (domain/operations.py).
EVENT_OPERATIONS = frozenset(name for name, facts in OPERATIONS.items() if facts.shows is Shows.EVENT)
ACCOUNT_OPERATIONS = frozenset(name for name, facts in OPERATIONS.items() if facts.shows is Shows.ACCOUNT)
ACCOUNT_NOT_FOUND = "account_not_found"


@dataclass(frozen=True)
class Shown:
    """The provider's answer to one call: status and decoded JSON body (None when it had none)."""

    status: int
    body: Any


@dataclass(frozen=True)
class AccountChange:
    """The account after the call (None: the provider holds no such account, or nothing is known of it), and
    whether the call was its registration."""

    account: Account | None
    registered: bool = False


def facts_of(account: Account) -> Account:
    """A copy of what an answer can change of an account (its windows, its recipient list and recipients), without
    its proposals: those are the mock's own (a thousand an account, which a deep copy per call would walk)."""
    copied = dataclasses.replace(account, limit_update_requests=[])
    kept = account.recipient_list
    if kept is not None:
        copied.recipient_list = RecipientList(kept.limits, kept.event_date, dict(kept.recipients))
    return copied


def account_id_of(operation_id: str, path: dict[str, str], body: Any) -> str | None:
    """The account a call is about: the one its path names, else (a registration) the one its body names."""
    if "account_id" in path:
        return path["account_id"]
    return body.get("account_id") if isinstance(body, dict) and isinstance(body.get("account_id"), str) else None


def event_shown(key: str, answer: Shown) -> Event | None:
    """The event a lookup's 200 answer shows (KeyError/ValueError/TypeError when the body is not an event)."""
    if answer.status != 200 or not isinstance(answer.body, dict):
        return None
    return event_from_scenario(answer.body, key)


def account_after(
    operation_id: str, path: dict[str, str], body: Any, before: Account | None, answer: Shown, seen_at: str
) -> AccountChange:
    """The account after a call of `operation_id` (its path parameters and JSON body) that the provider answered
    `answer`; `before` is the account as known before the call, `seen_at` the instant to give an account first met
    here (registration_date and event_date, which the call does not show). KeyError/TypeError on a body off the
    interface's shape."""
    if answer.status == 404 and isinstance(answer.body, dict) and answer.body.get("code") == ACCOUNT_NOT_FOUND:
        return AccountChange(None)
    if not 200 <= answer.status < 300:
        return AccountChange(before)
    rule = ACCOUNT_RULES.get(operation_id)
    if rule is None:  # a declaration that shows an account, and no rule here (tests/record names it)
        raise KeyError(f"domain/recording.py has no rule of what {operation_id} does to an account")
    shown = answer.body if isinstance(answer.body, dict) else {}
    facts = OPERATIONS[operation_id]
    if facts.creates is Fact.ACCOUNT:
        return AccountChange(rule(None, path, body, shown), registered=True)
    account_id = path["account_id"]
    account = facts_of(before) if before is not None else Account(account_id, seen_at, {}, event_date=seen_at)
    return AccountChange(rule(account, path, body, shown))


# --- what each operation that shows an account does to it --------------------------------------------------------
# A rule gets the account as known before the call (None for a registration, which makes it), the call's path
# parameters and JSON body, and the answer's body (an object); it returns the account after the call.
AccountRule = Callable[[Account | None, dict[str, str], Any, dict[str, Any]], Account]


def _registered(account: Account | None, path: dict[str, str], body: Any, shown: dict[str, Any]) -> Account:
    limits = limits_from_json(body["limit"]["pix"])
    return Account(body["account_id"], body["registration_date"], limits, event_date=shown.get("event_date"))


def _limits_changed(account: Account | None, path: dict[str, str], body: Any, shown: dict[str, Any]) -> Account:
    assert account is not None
    if shown.get("limit_update_request_status", APPLIED) == APPLIED:
        account.limits = limit_rules.apply_change(account.limits, limits_from_json(body["pix"]))
    return account


def _list_created(account: Account | None, path: dict[str, str], body: Any, shown: dict[str, Any]) -> Account:
    assert account is not None
    account.recipient_list = RecipientList(limits_from_json(body["limit"]["pix"]), shown.get("event_date"))
    return account


def _recipient_added(account: Account | None, path: dict[str, str], body: Any, shown: dict[str, Any]) -> Account:
    assert account is not None
    if account.recipient_list is None:  # made before the recording: its windows are not known
        account.recipient_list = RecipientList({}, None)
    number = body["document_number"]
    key = canonical_document(number)
    for recipient in [r for r in account.recipient_list.recipients.values() if r.document_key == key]:
        account.recipient_list.remove(recipient.recipient_id)
    account.recipient_list.add(
        Recipient(
            recipient_id=shown["recipient_id"],
            document_number=number,
            document_key=key,
            recipient_status=shown.get("recipient_status", CREATED),
            analysis_status=shown.get("analysis_status", AUTOMATICALLY_APPROVED),
            client_notification_status=shown.get("client_notification_status", NOT_APPLICABLE),
            event_date=shown.get("event_date"),
        )
    )
    return account


def _recipient_removed(account: Account | None, path: dict[str, str], body: Any, shown: dict[str, Any]) -> Account:
    assert account is not None
    if account.recipient_list is not None and path["recipient_id"] in account.recipient_list.recipients:
        account.recipient_list.remove(path["recipient_id"])
    return account


def _list_limits_changed(account: Account | None, path: dict[str, str], body: Any, shown: dict[str, Any]) -> Account:
    assert account is not None
    if account.recipient_list is None:
        account.recipient_list = RecipientList({}, None)
    if shown.get("analysis_status", AUTOMATICALLY_APPROVED) == AUTOMATICALLY_APPROVED:
        account.recipient_list.limits = limit_rules.apply_change(
            account.recipient_list.limits, limits_from_json(body["pix"])
        )
    return account


ACCOUNT_RULES: Mapping[str, AccountRule] = {
    "registerAccountLimit": _registered,
    "createLimitUpdateRequest": _limits_changed,
    "createRecipientList": _list_created,
    "addRecipient": _recipient_added,
    "removeRecipient": _recipient_removed,
    "createRecipientListLimitUpdateRequest": _list_limits_changed,
}
