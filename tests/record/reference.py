"""The reference provider of the record tests: a scenario the recorder has never seen (none of the shipped
fixtures), and a client's flow through the seven operations, shared by the in-process and the process tests."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mock_server.domain.documents import canonical_document, format_document

PAID = "0c5a3e5e-6b57-4c77-a1c4-4b0f2f7f4a01"
PARTLY_PAID = "1d6b4f6f-7c68-4d88-b2d5-5c1a3a8a5b12"
CANCELED = "2e7c5a7a-8d79-4e99-83e6-6d2b4b9b6c23"
EVENTS = (PAID, PARTLY_PAID, CANCELED)
EXISTING = "7001-000123"  # in the provider's scenario: its registration is never recorded
OTHER_EXISTING = "7001-000456"  # in the provider's scenario, never called: must not reach the file
FIRST = "4321-000111"
SECOND = "4321-000222"
CPF = "529.982.247-25"
CNPJ = "11.444.777/0001-61"
REMOVED_CPF = "39053344705"
EXISTING_CPF = "016.499.520-07"  # a recipient of EXISTING in the provider's scenario
IDENTIFIERS = (EXISTING, OTHER_EXISTING, FIRST, SECOND, CPF, CNPJ, REMOVED_CPF, EXISTING_CPF)

SCENARIO = f"""\
description: an integrator's sandbox, kept outside the repository
events:
  - extraordinary_event_conciliation_key: {PAID}
    security_key: 3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d
    investment_key: 4b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c4d5e
    amortization_type: present_amount
    total_expected_amount: 2310.70
    total_discount_amount: 10.05
    total_paid_amount: 2300.65
    status: paid
    reference_date: 2026-08-01
    due_date: 2026-08-31
    paid_at: 2026-08-29
    event_conciliation_list:
      - event_conciliation_key: 5c3d4e5f-6a7b-4c8d-8e9f-1a2b3c4d5e6f
        installment_key: 6d4e5f6a-7b8c-4d9e-9f0a-2b3c4d5e6f7a
      - event_conciliation_key: 7e5f6a7b-8c9d-4e0f-8a1b-3c4d5e6f7a8b
        installment_key: 8f6a7b8c-9d0e-4f1a-9b2c-4d5e6f7a8b9c
  - extraordinary_event_conciliation_key: {PARTLY_PAID}
    security_key: 9a7b8c9d-0e1f-4a2b-8c3d-5e6f7a8b9c0d
    investment_key: 0b8c9d0e-1f2a-4b3c-9d4e-6f7a8b9c0d1e
    amortization_type: early_amortization
    total_expected_amount: 98765.43
    total_paid_amount: 1234.5
    reference_date: 2026-10-01
    due_date: 2026-12-15
    paid_at: null
    event_conciliation_list:
      - event_conciliation_key: 1c9d0e1f-2a3b-4c4d-8e5f-7a8b9c0d1e2f
        installment_key: 2d0e1f2a-3b4c-4d5e-9f6a-8b9c0d1e2f3a
  - extraordinary_event_conciliation_key: {CANCELED}
    security_key: 3e1f2a3b-4c5d-4e6f-8a7b-9c0d1e2f3a4b
    investment_key: 4f2a3b4c-5d6e-4f7a-9b8c-0d1e2f3a4b5c
    amortization_type: early_amortization
    total_expected_amount: 500
    status: canceled
    reference_date: 2026-07-01
    due_date: 2026-07-31
    paid_at: null
    event_conciliation_list:
      - event_conciliation_key: 5a3b4c5d-6e7f-4a8b-8c9d-1e2f3a4b5c6d
        installment_key: 6b4c5d6e-7f8a-4b9c-9d0e-2f3a4b5c6d7e
accounts:
  - account_id: "{EXISTING}"
    registration_date: 2025-03-02T08:30:00-03:00
    limit:
      pix:
        withdraw: [{{start_time: "06:00:00-03:00", amount: 400000}}, {{start_time: "20:00:00-03:00", amount: 90000}}]
        change: [{{start_time: "06:00:00-03:00", amount: 70000}}]
    recipient_list:
      limit: {{pix: {{transaction: [{{start_time: "06:00:00-03:00", amount: 50000}}]}}}}
      recipients:
        - {{recipient_id: 7c5d6e7f-8a9b-4c0d-8e1f-3a4b5c6d7e8f, document_number: "{EXISTING_CPF}"}}
  - account_id: "{OTHER_EXISTING}"
    registration_date: 2025-04-02T08:30:00-03:00
    limit: {{pix: {{withdraw: [{{start_time: "06:00:00-03:00", amount: 1000}}]}}}}
"""

DAY_NIGHT = [{"start_time": "06:00:00-03:00", "amount": 500000}, {"start_time": "20:00:00-03:00", "amount": 100000}]


def write_provider_fixtures(directory: Path) -> Path:
    """The provider's fixtures directory, with its one scenario `sandbox`."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sandbox.yaml").write_text(SCENARIO, encoding="utf-8")
    return directory


@dataclass
class Flow:
    """What the provider answered the flow: each lookup's bytes, each call's status and body."""

    lookups: dict[str, bytes] = field(default_factory=dict)
    answers: list[tuple[str, int, Any]] = field(default_factory=list)


# A call: (method, path, JSON body or None) -> (status, raw bytes of the answer)
Caller = Callable[[str, str, Any], tuple[int, bytes]]


def client_flow(call: Caller) -> Flow:
    """A client's day: the three lookups, two registrations, limit changes, a recipient list with a CPF and a CNPJ
    recipient, one removal, and a limit change of an account registered before the recording."""
    import json

    flow = Flow()

    def step(method: str, path: str, body: Any = None, expected: int = 201) -> Any:
        status, content = call(method, path, body)
        decoded = json.loads(content) if content else None
        flow.answers.append((f"{method} {path}", status, decoded))
        assert status == expected, (method, path, status, content)
        return decoded

    for key in EVENTS:
        status, content = call("GET", f"/event_conciliation/extraordinary_event/{key}", None)
        assert status == 200, content
        flow.lookups[key] = content
    for account_id, pix in ((FIRST, {"withdraw": DAY_NIGHT}), (SECOND, {"transaction": DAY_NIGHT[:1]})):
        body = {"account_id": account_id, "registration_date": "2026-11-20T09:00:00-03:00", "limit": {"pix": pix}}
        step("POST", "/limits/account", body)
    raised = [{"start_time": "06:00:00-03:00", "amount": 900000}, {"start_time": "20:00:00-03:00", "amount": 100000}]
    step("POST", f"/limits/account/{FIRST}/limit_update_request", {"pix": {"withdraw": raised}})
    lowered = [{"start_time": "06:00:00-03:00", "amount": 300000}]
    step("POST", f"/limits/account/{SECOND}/limit_update_request", {"pix": {"transaction": lowered}})
    base = f"/limits/account/{FIRST}/recipient_list"
    step("POST", base, {"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 20000}]}}})
    step("POST", f"{base}/recipient", {"document_number": CPF})
    step("POST", f"{base}/recipient", {"document_number": CNPJ})
    removed = step("POST", f"{base}/recipient", {"document_number": REMOVED_CPF})
    step("DELETE", f"{base}/recipient/{removed['recipient_id']}", expected=204)
    existing_change = [{"start_time": "06:00:00-03:00", "amount": 450000}]
    step("POST", f"/limits/account/{EXISTING}/limit_update_request", {"pix": {"withdraw": existing_change}})
    return flow


# The next limit change of each account, after the recording: its answer depends on the windows the recording kept
# (a mock that had kept the registration's windows, or none, would answer another client_notification_status).
NEXT_CHANGES = {
    FIRST: {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 800000}]},  # lower than recorded: not_applicable
    SECOND: {"transaction": [{"start_time": "06:00:00-03:00", "amount": 300001}]},  # up by a cent: awaiting
    EXISTING: {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 450000}]},  # as recorded: not_applicable
}


def layouts(identifier: str) -> set[str]:
    """Every way an identifier may be written in a file: as given, bare, punctuated (documents)."""
    found = {identifier}
    if re.fullmatch(r"[0-9.\-/A-Z]+", identifier) and len(canonical_document(identifier)) in (11, 14):
        bare = canonical_document(identifier)
        found |= {bare, format_document(bare)}
    return found
