"""What a real provider's answer to one public call shows of its state (record mode, `mock-server record`): the
account as it is after the call, from the account as the recording knew it before, the call and the answer.

Pure: the caller puts the result in the session (state/recording.py). A call the provider refused changes
nothing; an account the recording meets first in a later call (its registration not recorded) is made from what
that call shows of it, and is partial.
"""

from __future__ import annotations

import dataclasses
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

EVENT_LOOKUP = "getExtraordinaryEvent"
REGISTRATION = "registerAccountLimit"
# The operations that change an account, by the path parameter that names it.
ACCOUNT_OPERATIONS = frozenset(
    {
        REGISTRATION,
        "createLimitUpdateRequest",
        "createRecipientList",
        "addRecipient",
        "removeRecipient",
        "createRecipientListLimitUpdateRequest",
    }
)
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
    """The account a call is about: the registration's body names it, the other calls their path."""
    if operation_id == REGISTRATION:
        return body.get("account_id") if isinstance(body, dict) and isinstance(body.get("account_id"), str) else None
    return path.get("account_id")


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
    shown = answer.body if isinstance(answer.body, dict) else {}
    if operation_id == REGISTRATION:
        limits = limits_from_json(body["limit"]["pix"])
        registered = Account(body["account_id"], body["registration_date"], limits, event_date=shown.get("event_date"))
        return AccountChange(registered, registered=True)
    account_id = path["account_id"]
    account = facts_of(before) if before is not None else Account(account_id, seen_at, {}, event_date=seen_at)
    if operation_id == "createLimitUpdateRequest":
        if shown.get("limit_update_request_status", APPLIED) == APPLIED:
            account.limits = limit_rules.apply_change(account.limits, limits_from_json(body["pix"]))
    elif operation_id == "createRecipientList":
        account.recipient_list = RecipientList(limits_from_json(body["limit"]["pix"]), shown.get("event_date"))
    elif operation_id == "addRecipient":
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
    elif operation_id == "removeRecipient":
        recipients = account.recipient_list.recipients if account.recipient_list is not None else {}
        if path["recipient_id"] in recipients:
            assert account.recipient_list is not None
            account.recipient_list.remove(path["recipient_id"])
    elif operation_id == "createRecipientListLimitUpdateRequest":
        if account.recipient_list is None:
            account.recipient_list = RecipientList({}, None)
        if shown.get("analysis_status", AUTOMATICALLY_APPROVED) == AUTOMATICALLY_APPROVED:
            account.recipient_list.limits = limit_rules.apply_change(
                account.recipient_list.limits, limits_from_json(body["pix"])
            )
    return AccountChange(account)
