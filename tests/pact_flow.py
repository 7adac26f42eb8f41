"""A client's flow through the seven public operations, for the Pact tests: what the exported pact is drawn from.

Three lookups (a pending event, a canceled one, and a key no event has: 404 EVC100011), then an account's whole
life: registered (and once more: 409), a limit raised, a recipient list made (and once more: 409), a recipient
added (and once more in the bare layout: 409), removed (and once more: 404), the list's limit changed. Thirteen
calls, thirteen interactions: `flow_descriptions` in the flow's order (a pact sorts them by description).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.builders import day_night, limit_update_path, recipient_list_path, registration
from tests.default_scenario import CANCELED_EVENT, PENDING_EVENT, UNKNOWN_EVENT

CONSUMER, PROVIDER = "ci-consumer", "pix-limits"
ACCOUNT = "0003-777777"  # an account the default scenario does not have
DOCUMENT, DOCUMENT_BARE = "529.982.247-25", "52998224725"
EVENT_PATH = "/event_conciliation/extraordinary_event/"
SCHEMA = Path(__file__).resolve().parent / "pact_v4_subset.schema.json"


def _expect(response: Any, status: int) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response


def run_flow(client: Any) -> str:
    """The flow (through Starlette's TestClient or an httpx.Client), each call checked for the status it is meant
    to get; the id the added recipient got."""
    _expect(client.get(EVENT_PATH + PENDING_EVENT), 200)
    _expect(client.get(EVENT_PATH + CANCELED_EVENT), 200)
    _expect(client.get(EVENT_PATH + UNKNOWN_EVENT), 404)
    account = registration(ACCOUNT, withdraw=day_night(500000, 300000))
    _expect(client.post("/limits/account", json=account), 201)
    _expect(client.post("/limits/account", json=account), 409)
    raised = {"pix": {"withdraw": day_night(600000, 300000)}}
    _expect(client.post(limit_update_path(ACCOUNT), json=raised), 201)
    recipient_list = {"limit": {"pix": {"transaction": day_night(100000, 50000)}}}
    _expect(client.post(recipient_list_path(ACCOUNT), json=recipient_list), 201)
    _expect(client.post(recipient_list_path(ACCOUNT), json=recipient_list), 409)
    recipients = recipient_list_path(ACCOUNT) + "/recipient"
    added = _expect(client.post(recipients, json={"document_number": DOCUMENT}), 201).json()
    _expect(client.post(recipients, json={"document_number": DOCUMENT_BARE}), 409)
    _expect(client.delete(f"{recipients}/{added['recipient_id']}"), 204)
    _expect(client.delete(f"{recipients}/{added['recipient_id']}"), 404)
    lowered = {"pix": {"transaction": day_night(80000, 40000)}}
    _expect(client.post(recipient_list_path(ACCOUNT) + "/limit_update_request", json=lowered), 201)
    recipient_id: str = added["recipient_id"]
    return recipient_id


def pact_recipient_id(document: dict[str, Any]) -> str:
    """The id the pact gives the recipient the flow added (a stable one, drawn from the call that added it)."""
    (added,) = [
        i
        for i in document["interactions"]
        if i["request"]["path"].endswith("/recipient") and i["response"]["status"] == 201
    ]
    recipient_id: str = added["response"]["body"]["content"]["recipient_id"]
    return recipient_id


def in_flow_order(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The pact's interactions in the order the flow made their calls."""
    by_description = {i["description"]: i for i in document["interactions"]}
    return [by_description[d] for d in flow_descriptions(pact_recipient_id(document))]


def flow_descriptions(recipient_id: str) -> list[str]:
    """The interactions' descriptions the flow's pact has, in the flow's order."""
    on = f"account {ACCOUNT}"
    return [
        f"a lookup of event {PENDING_EVENT} (pending_conciliation), answered 200",
        f"a lookup of event {CANCELED_EVENT} (canceled), answered 200",
        f"a lookup of event {UNKNOWN_EVENT}, answered 404 EVC100011",
        f"a registration of {on}, answered 201",
        f"a registration of {on}, answered 409 account_already_registered",
        f"a limit change for {on}, answered 201",
        f"a recipient list for {on}, answered 201",
        f"a recipient list for {on}, answered 409 recipient_list_already_exists",
        f"an addition of document {DOCUMENT} to the recipient list of {on}, answered 201",
        f"an addition of document {DOCUMENT_BARE} to the recipient list of {on}, answered 409 "
        "recipient_already_in_list",
        f"a removal of recipient {recipient_id} from the recipient list of {on}, answered 204",
        f"a removal of recipient {recipient_id} from the recipient list of {on}, answered 404 recipient_not_found",
        f"a limit change for the recipient list of {on}, answered 201",
    ]


def pact_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA.read_text(encoding="utf-8"))
    return schema
