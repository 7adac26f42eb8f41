"""Conversions between the wire and scenario shapes (plain JSON values) and the domain's records.

Input here is already schema-valid: these functions shape, they do not judge.
"""

from __future__ import annotations

import sys
from decimal import Decimal
from operator import itemgetter
from typing import Any

from mock_server.domain.clock import parse_date
from mock_server.domain.documents import canonical_document
from mock_server.domain.events import to_money
from mock_server.domain.models import (
    ACCOUNT_TARGET,
    APPLIED,
    AUTOMATICALLY_APPROVED,
    CREATED,
    NOT_APPLICABLE,
    PENDING,
    PROPOSAL_STATUS_FIELD,
    RECIPIENT_LIST_TARGET,
    Account,
    Event,
    Installment,
    Limits,
    LimitWindow,
    Outcome,
    Outcomes,
    Proposal,
    Recipient,
    RecipientList,
)

# --- limits -------------------------------------------------------------------------------------


# A mode's windows as limit changes send them, each made once and shared: calls send the same few start times and
# amounts again and again, and every proposal keeps its windows (1000 an account). Shared, they cost nothing per
# call for the garbage collector to walk (CPython never stops tracking a NamedTuple, nor a tuple holding one, and
# a proposal's ten of them made every collection longer). They are immutable values: sharing them changes
# nothing. A memo, not state: bounded, and dropped whole when full.
_WINDOWS: dict[tuple[tuple[str, int], ...], tuple[LimitWindow, ...]] = {}
MAX_SHARED_WINDOWS = 4096


_START_AND_AMOUNT = itemgetter("start_time", "amount")


def _shared_windows(key: tuple[tuple[str, Any], ...]) -> tuple[LimitWindow, ...]:
    if len(_WINDOWS) >= MAX_SHARED_WINDOWS:
        _WINDOWS.clear()
    # `int()`: JSON Schema counts 100.0 as an integer, and the amount is kept as the integer it is (a key with
    # 100.0 finds the windows of 100 too: they are equal, and those hold the int).
    windows = _WINDOWS[key] = tuple([LimitWindow(start_time, int(amount)) for start_time, amount in key])
    return windows


def limits_from_json(pix: dict[str, Any]) -> Limits:
    """The validated body's windows per mode, shared (`_WINDOWS`); looked up with no Python-level loop over a
    mode's windows: once per limit change and mode."""
    limits: Limits = {}
    for mode, given in pix.items():
        key = tuple(map(_START_AND_AMOUNT, given))
        limits[mode] = _WINDOWS.get(key) or _shared_windows(key)
    return limits


def window_to_json(window: LimitWindow) -> dict[str, Any]:
    return {"start_time": window.start_time, "amount": window.amount}


def limits_to_json(limits: Limits) -> dict[str, Any]:
    return {mode: [window_to_json(w) for w in windows] for mode, windows in limits.items()}


# --- events -------------------------------------------------------------------------------------


def money_to_json(amount: Decimal) -> int | float:
    """Decimals with at most two places and at most 15 digits survive a float exactly, as JSON numbers."""
    return int(amount) if amount == amount.to_integral_value() else float(amount)


def event_to_public(event: Event) -> dict[str, Any]:
    """The event in the shape of interface 2.1."""
    return {
        "extraordinary_event_conciliation_key": event.key,
        "security_key": event.security_key,
        "investment_key": event.investment_key,
        "amortization_type": event.amortization_type,
        "total_expected_amount": money_to_json(event.total_expected_amount),
        "total_discount_amount": money_to_json(event.total_discount_amount),
        "total_paid_amount": money_to_json(event.total_paid_amount),
        "status": event.status,
        "reference_date": event.reference_date.isoformat(),
        "due_date": event.due_date.isoformat(),
        "paid_at": event.paid_at.isoformat() if event.paid_at else None,
        "event_conciliation_list": [
            {
                "event_conciliation_key": i.event_conciliation_key,
                "installment_key": i.installment_key,
                "event_conciliation_status": i.event_conciliation_status,
                "event_conciliation_type": i.event_conciliation_type,
            }
            for i in event.installments
        ],
    }


def uuid_text(value: str) -> str:
    """UUIDs compare case-insensitively: keys are kept in lower case."""
    return value.lower()


def event_from_scenario(data: dict[str, Any], key: str) -> Event:
    # Interned: a big scenario repeats these few words per event and instalment, once in memory is enough.
    status = sys.intern(data.get("status", PENDING))
    paid_at = data.get("paid_at")
    return Event(
        key=uuid_text(key),
        security_key=uuid_text(data["security_key"]),
        investment_key=uuid_text(data["investment_key"]),
        amortization_type=sys.intern(data["amortization_type"]),
        total_expected_amount=to_money(data["total_expected_amount"]),
        total_discount_amount=to_money(data.get("total_discount_amount", 0)),
        total_paid_amount=to_money(data.get("total_paid_amount", 0)),
        status=status,
        reference_date=parse_date(data["reference_date"]),
        due_date=parse_date(data["due_date"]),
        paid_at=parse_date(paid_at) if paid_at else None,
        installments=[
            Installment(
                event_conciliation_key=uuid_text(i["event_conciliation_key"]),
                installment_key=uuid_text(i["installment_key"]),
                event_conciliation_status=sys.intern(i.get("event_conciliation_status", status)),
            )
            for i in data["event_conciliation_list"]
        ],
    )


def event_to_scenario(event: Event) -> dict[str, Any]:
    """The scenario shape is the public one: every field written, so the file loads back the same."""
    return event_to_public(event)


# --- accounts -----------------------------------------------------------------------------------

# A scenario's `outcomes` entry -> the name of the status field it overrides.
_OUTCOME_STATUS_FIELD = {
    "limit_update_request": PROPOSAL_STATUS_FIELD[ACCOUNT_TARGET],
    "recipient_list_limit_update_request": PROPOSAL_STATUS_FIELD[RECIPIENT_LIST_TARGET],
    "recipient": "recipient_status",
}


def _outcome_from_json(data: dict[str, Any], status_field: str) -> Outcome:
    return Outcome(data.get("analysis_status"), data.get("client_notification_status"), data.get(status_field))


def _outcome_to_json(outcome: Outcome, status_field: str) -> dict[str, str]:
    pairs = (
        ("analysis_status", outcome.analysis_status),
        ("client_notification_status", outcome.client_notification_status),
        (status_field, outcome.status),
    )
    return {name: value for name, value in pairs if value is not None}


def proposal_to_public(proposal: Proposal) -> dict[str, Any]:
    """The answer to a limit change of the account (interface 2.4) or of its recipient list (2.5)."""
    return {
        "limit_update_request_id": proposal.limit_update_request_id,
        "analysis_status": proposal.analysis_status,
        "client_notification_status": proposal.client_notification_status,
        PROPOSAL_STATUS_FIELD[proposal.target]: proposal.status,
        "event_date": proposal.event_date,
    }


def proposal_to_json(proposal: Proposal) -> dict[str, Any]:
    """The proposal as the state export keeps it: the public answer plus what it targeted and proposed."""
    public = proposal_to_public(proposal)
    return {
        "limit_update_request_id": public.pop("limit_update_request_id"),
        "target": proposal.target,
        "pix": limits_to_json(proposal.pix),
        **public,
    }


def _proposal_from_json(data: dict[str, Any]) -> Proposal:
    target = data["target"]
    default_status = APPLIED if target == ACCOUNT_TARGET else CREATED
    return Proposal(
        limit_update_request_id=data["limit_update_request_id"],
        target=target,
        pix=limits_from_json(data["pix"]),
        analysis_status=data["analysis_status"],
        client_notification_status=data["client_notification_status"],
        status=data.get(PROPOSAL_STATUS_FIELD[target], default_status),
        event_date=data["event_date"],
    )


def _recipient_from_json(data: dict[str, Any]) -> Recipient:
    return Recipient(
        recipient_id=data["recipient_id"],
        document_number=data["document_number"],
        document_key=canonical_document(data["document_number"]),
        recipient_status=data.get("recipient_status", CREATED),
        analysis_status=data.get("analysis_status", AUTOMATICALLY_APPROVED),
        client_notification_status=data.get("client_notification_status", NOT_APPLICABLE),
        event_date=data.get("event_date"),
    )


def recipient_to_public(recipient: Recipient) -> dict[str, Any]:
    """The answer to adding a recipient (interface 2.5)."""
    return {
        "recipient_id": recipient.recipient_id,
        "analysis_status": recipient.analysis_status,
        "client_notification_status": recipient.client_notification_status,
        "recipient_status": recipient.recipient_status,
        "event_date": recipient.event_date,
    }


def _recipient_to_json(recipient: Recipient) -> dict[str, Any]:
    """The recipient as a scenario file lists it: the public answer plus its document number (event_date
    only when known: a scenario's own recipients may have none)."""
    public = recipient_to_public(recipient)
    out: dict[str, Any] = {
        "recipient_id": public.pop("recipient_id"),
        "document_number": recipient.document_number,
        "recipient_status": public.pop("recipient_status"),
        **public,
    }
    if recipient.event_date is None:
        del out["event_date"]
    return out


def account_from_scenario(data: dict[str, Any]) -> Account:
    recipient_list = None
    if "recipient_list" in data:
        raw_list = data["recipient_list"]
        recipients = [_recipient_from_json(r) for r in raw_list.get("recipients", [])]
        recipient_list = RecipientList(
            limits=limits_from_json(raw_list["limit"]["pix"]),
            event_date=raw_list.get("event_date"),
            recipients={r.recipient_id: r for r in recipients},
        )
    outcomes = data.get("outcomes", {})
    return Account(
        account_id=data["account_id"],
        registration_date=data["registration_date"],
        limits=limits_from_json(data["limit"]["pix"]),
        event_date=data.get("event_date"),
        recipient_list=recipient_list,
        outcomes=Outcomes(
            **{name: _outcome_from_json(outcomes.get(name, {}), field) for name, field in _OUTCOME_STATUS_FIELD.items()}
        ),
        limit_update_requests=[_proposal_from_json(p) for p in data.get("limit_update_requests", [])],
    )


def account_to_scenario(account: Account) -> dict[str, Any]:
    out: dict[str, Any] = {
        "account_id": account.account_id,
        "registration_date": account.registration_date,
    }
    if account.event_date is not None:
        out["event_date"] = account.event_date
    out["limit"] = {"pix": limits_to_json(account.limits)}
    if account.recipient_list is not None:
        recipient_list: dict[str, Any] = {"limit": {"pix": limits_to_json(account.recipient_list.limits)}}
        if account.recipient_list.event_date is not None:
            recipient_list["event_date"] = account.recipient_list.event_date
        recipient_list["recipients"] = [_recipient_to_json(r) for r in account.recipient_list.recipients.values()]
        out["recipient_list"] = recipient_list
    outcomes = {
        name: _outcome_to_json(getattr(account.outcomes, name), field) for name, field in _OUTCOME_STATUS_FIELD.items()
    }
    outcomes = {name: values for name, values in outcomes.items() if values}
    if outcomes:
        out["outcomes"] = outcomes
    if account.limit_update_requests:
        out["limit_update_requests"] = [proposal_to_json(p) for p in account.limit_update_requests]
    return out
