"""Names for what the shipped default scenario (fixtures/default.yaml) holds: the ids every API test starts from.

One place, so a test says which event or account it uses (`PENDING_EVENT`, `FULL_ACCOUNT`) instead of
repeating a UUID; a change to the scenario is a change here.
"""

from __future__ import annotations

# --- events ------------------------------------------------------------------------------------------

PENDING_EVENT = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"  # early_amortization, 1500.00, nothing paid, two instalments
PARTIALLY_PAID_EVENT = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"  # still pending: 2000.00, 750.25 paid, one instalment
PAID_EVENT = "4b8e5d2f-9c1a-4f7b-8d6e-1a3c5e7f9b55"  # present_amount, 1000.00 less a 25.50 discount, paid
CANCELED_EVENT = "5c9f6e3a-0d2b-4a8c-9e7f-2b4d6f8a0c66"  # 300.00, canceled
EVENTS = (PENDING_EVENT, PARTIALLY_PAID_EVENT, PAID_EVENT, CANCELED_EVENT)
UNKNOWN_EVENT = "00000000-0000-4000-8000-000000000000"  # a valid UUID no scenario uses

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
