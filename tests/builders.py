"""Request bodies and paths the API tests share: one builder each, the same defaults everywhere."""

from __future__ import annotations

import uuid
from typing import Any

REGISTRATION_DATE = "2026-11-21T09:00:00-03:00"
DAY, NIGHT = "06:00:00-03:00", "20:00:00-03:00"  # where the default scenario's windows start
REGISTER = "/limits/account"  # registerAccountLimit


def window(start_time: str, amount: Any) -> dict[str, Any]:
    """One limit window; `amount` is Any so a test can send what the spec rejects."""
    return {"start_time": start_time, "amount": amount}


def day_night(day: int, night: int) -> list[dict[str, Any]]:
    """Two windows, from 06:00 and from 20:00 (-03:00), as the default scenario's accounts have."""
    return [window(DAY, day), window(NIGHT, night)]


def registration(
    account_id: str, registration_date: str = REGISTRATION_DATE, **pix: list[dict[str, Any]]
) -> dict[str, Any]:
    """A registerAccountLimit body; the limits are `pix` by mode, by default one withdraw window of 1000."""
    return {
        "account_id": account_id,
        "registration_date": registration_date,
        "limit": {"pix": pix or {"withdraw": [window(DAY, 1000)]}},
    }


def limit_update_path(account_id: str) -> str:
    return f"/limits/account/{account_id}/limit_update_request"


def recipient_list_path(account_id: str) -> str:
    return f"/limits/account/{account_id}/recipient_list"


def recipient_path(account_id: str, recipient_id: str | None = None) -> str:
    """Where recipients are added (no id) or removed (with one)."""
    base = f"/limits/account/{account_id}/recipient_list/recipient"
    return base if recipient_id is None else f"{base}/{recipient_id}"


def list_limit_update_path(account_id: str) -> str:
    return f"/limits/account/{account_id}/recipient_list/limit_update_request"


def event_creation(
    *conciliation_keys: str, key: str | None = None, instalments: int = 1, **fields: Any
) -> dict[str, Any]:
    """A valid `POST /__mock/events` body with fresh UUIDs: instalments with these event_conciliation_keys, or
    `instalments` fresh ones; `key` the event's own; `fields` over the rest."""
    keys = conciliation_keys or tuple(str(uuid.uuid4()) for _ in range(instalments))
    body: dict[str, Any] = {
        "security_key": str(uuid.uuid4()),
        "investment_key": str(uuid.uuid4()),
        "amortization_type": "early_amortization",
        "total_expected_amount": 100.0,
        "reference_date": "2026-11-01",
        "due_date": "2026-11-30",
        "event_conciliation_list": [{"event_conciliation_key": k, "installment_key": str(uuid.uuid4())} for k in keys],
    }
    if key is not None:
        body["extraordinary_event_conciliation_key"] = key
    body.update(fields)
    return body
