"""A consumer's pact for this interface written with pact-python's consumer DSL (Pact's own mock server, in
process): what docs/gate.md shows checked by `mock-server gate pact`. `write_consumer_pact(DIR)` writes it (the
e2e tier does, tests/e2e/test_gate_pact_python.py); `python -m tests.gate.consumer_pact` writes the checked-in copy
the fast tests use (tests/gate/pacts/v3/ and v4/)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

CONSUMER, PROVIDER = "pix-client", "pix-limits"
PACTS = Path(__file__).resolve().parent / "pacts"
CHECKED_IN = {version: PACTS / version / f"{CONSUMER}-{PROVIDER}.json" for version in ("v3", "v4")}
PAID_EVENT = "4b8e5d2f-9c1a-4f7b-8d6e-1a3c5e7f9b55"
UNKNOWN_EVENT = "00000000-0000-4000-8000-000000000000"
NEW_ACCOUNT, ACCOUNT = "0003-777777", "0001-123456"
EVENT_PATH = "/event_conciliation/extraordinary_event/"
INSTANT = "2026-11-21T10:00:00.000-03:00"


def _windows(day: int, night: int) -> list[dict[str, Any]]:
    return [{"start_time": "06:00:00-03:00", "amount": day}, {"start_time": "20:00:00-03:00", "amount": night}]


REGISTRATION = {
    "account_id": NEW_ACCOUNT,
    "registration_date": "2026-11-21T09:00:00-03:00",
    "limit": {"pix": {"withdraw": _windows(500000, 300000)}},
}
RAISE = {"pix": {"withdraw": _windows(600000, 300000)}}


def write_consumer_pact(directory: Path, specification: str = "V4") -> Path:
    """The consumer's four interactions, each exercised against Pact's mock server, written as a pact of that
    specification (V3 or V4) in `directory`."""
    import httpx
    from pact import Pact, match

    os.environ.setdefault("PACT_DO_NOT_TRACK", "true")  # Pact's core reports usage over the network unless told not to

    pact = Pact(CONSUMER, PROVIDER).with_specification(specification)
    instalment = {
        "event_conciliation_key": match.uuid("5c0f7e3a-2b4d-4e6f-8a1c-7d9b3e5f1a77"),
        "installment_key": match.uuid("7f1d5b9c-4e6a-4c8d-9f2b-3a5e7c9d1f44"),
        "event_conciliation_status": "paid",
        "event_conciliation_type": "extraordinary_event",
    }
    (
        pact.upon_receiving("a lookup of a paid event")
        .given(f"event {PAID_EVENT} is paid", {"key": PAID_EVENT})
        .with_request("GET", EVENT_PATH + PAID_EVENT)
        .will_respond_with(200)
        .with_body(
            {
                "extraordinary_event_conciliation_key": PAID_EVENT,
                "security_key": match.uuid("8c4b0e36-7d5a-4b9c-8f1e-3a2d4c6e8f05"),
                "investment_key": match.uuid("9d5c1f47-8e6b-4c0d-9a2f-4b3e5d7f9a16"),
                "amortization_type": match.string("present_amount"),
                "total_expected_amount": match.number(1000),
                "total_discount_amount": match.number(25.5),
                "total_paid_amount": match.number(974.5),
                "status": "paid",
                "reference_date": match.date("2026-09-01", "yyyy-MM-dd"),
                "due_date": match.date("2026-09-30", "yyyy-MM-dd"),
                "paid_at": match.date("2026-09-28", "yyyy-MM-dd"),
                "event_conciliation_list": match.each_like(instalment, min=1),
            },
            "application/json",
        )
    )
    (
        pact.upon_receiving("a lookup of an unknown event")
        .given(f"event {UNKNOWN_EVENT} does not exist", {"key": UNKNOWN_EVENT})
        .with_request("GET", EVENT_PATH + UNKNOWN_EVENT)
        .will_respond_with(404)
        .with_body(
            {"code": "EVC100011", "message": match.string("No extraordinary amortization exists.")}, "application/json"
        )
    )
    (
        pact.upon_receiving("a registration of a new account")
        .given(f"account {NEW_ACCOUNT} is not registered", {"account_id": NEW_ACCOUNT})
        .with_request("POST", "/limits/account")
        .with_body(REGISTRATION, "application/json")
        .will_respond_with(201)
        .with_body({"account_id": NEW_ACCOUNT, "event_date": match.string(INSTANT)}, "application/json")
    )
    (
        pact.upon_receiving("a raise of an account's withdraw limit")
        .given(f"account {ACCOUNT} is registered", {"account_id": ACCOUNT})
        .with_request("POST", f"/limits/account/{ACCOUNT}/limit_update_request")
        .with_body(RAISE, "application/json")
        .will_respond_with(201)
        .with_body(
            {
                "limit_update_request_id": match.string("5c2debcd-5a08-4512-9074-0e25e1232f71"),
                "analysis_status": match.string("automatically_approved"),
                "client_notification_status": match.string("awaiting_notification_period"),
                "limit_update_request_status": "applied",
                "event_date": match.string(INSTANT),
            },
            "application/json",
        )
    )
    with pact.serve() as server, httpx.Client(base_url=str(server.url), timeout=10) as client:
        assert client.get(EVENT_PATH + PAID_EVENT).json()["status"] == "paid"
        assert client.get(EVENT_PATH + UNKNOWN_EVENT).status_code == 404
        assert client.post("/limits/account", json=REGISTRATION).status_code == 201
        assert client.post(f"/limits/account/{ACCOUNT}/limit_update_request", json=RAISE).status_code == 201
    directory.mkdir(parents=True, exist_ok=True)
    pact.write_file(directory, overwrite=True)
    return directory / f"{CONSUMER}-{PROVIDER}.json"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else PACTS
    for version in ("V3", "V4"):
        print(write_consumer_pact(target / version.lower(), version))
