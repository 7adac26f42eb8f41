"""Names for what the shipped default scenario (fixtures/default.yaml) holds: the ids every API test starts from.

One place, so a test says which event or account it uses (`PENDING_EVENT`, `FULL_ACCOUNT`) instead of
repeating a UUID; a change to the scenario is a change here.
"""

from __future__ import annotations

from typing import Any

# --- events ------------------------------------------------------------------------------------------

PENDING_EVENT = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"  # early_amortization, 1500.00, nothing paid, two instalments
PARTIALLY_PAID_EVENT = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"  # still pending: 2000.00, 750.25 paid, one instalment
PAID_EVENT = "4b8e5d2f-9c1a-4f7b-8d6e-1a3c5e7f9b55"  # present_amount, 1000.00 less a 25.50 discount, paid
CANCELED_EVENT = "5c9f6e3a-0d2b-4a8c-9e7f-2b4d6f8a0c66"  # 300.00, canceled
EVENTS = (PENDING_EVENT, PARTIALLY_PAID_EVENT, PAID_EVENT, CANCELED_EVENT)
UNKNOWN_EVENT = "00000000-0000-4000-8000-000000000000"  # a valid UUID no scenario uses

# PENDING_EVENT as the lookup answers it: the one copy of a default event's whole body the tests compare with
PENDING_EVENT_BODY: dict[str, Any] = {
    "extraordinary_event_conciliation_key": PENDING_EVENT,
    "security_key": "3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
    "investment_key": "6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
    "amortization_type": "early_amortization",
    "total_expected_amount": 1500,
    "total_discount_amount": 0,
    "total_paid_amount": 0,
    "status": "pending_conciliation",
    "reference_date": "2026-11-01",
    "due_date": "2026-11-30",
    "paid_at": None,
    "event_conciliation_list": [
        {
            "event_conciliation_key": "0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40",
            "installment_key": "4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11",
            "event_conciliation_status": "pending_conciliation",
            "event_conciliation_type": "extraordinary_event",
        },
        {
            "event_conciliation_key": "1c8f5e3b-0d2a-4b4c-9f6e-7a3b2d0c8e51",
            "installment_key": "5d9b3f7a-2c4e-4a6b-8d8f-1e3c5a7b9d22",
            "event_conciliation_status": "pending_conciliation",
            "event_conciliation_type": "extraordinary_event",
        },
    ],
}

# --- accounts ----------------------------------------------------------------------------------------

FULL_ACCOUNT = "0001-123456"  # every mode at 06:00/20:00 -03:00 (withdraw and change 500000/300000); a list of two
SMALL_ACCOUNT = "0002-654321"  # withdraw [200000], transaction_natural_person [400000, 50000]; no recipient list
UNKNOWN_ACCOUNT = "0009-000000"  # in no scenario

# --- the recipient list of FULL_ACCOUNT ----------------------------------------------------------------

CPF_RECIPIENT = "5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f"  # recipient_id of CPF_IN_LIST
CPF_IN_LIST = "123.456.789-09"
CNPJ_RECIPIENT = "6c1e8f5b-2a3c-4d4e-8f9a-8b7c6d5e4f30"  # recipient_id of CNPJ_IN_LIST (alphanumeric CNPJ)
CNPJ_IN_LIST = "12.ABC.345/01DE-35"
CPF_NOT_IN_LIST = "529.982.247-25"  # a valid CPF in no list


def event_path(key: str) -> str:
    """The public lookup of one event (`getExtraordinaryEvent`)."""
    return f"/event_conciliation/extraordinary_event/{key}"


PENDING_EVENT_PATH = event_path(PENDING_EVENT)
