"""GET /event_conciliation/extraordinary_event/{key} (getExtraordinaryEvent) over fixtures/default.yaml.

The lookup is read-only (interface 1.1, 3.1): it reports the current state and never changes it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from tests.builders import event_creation
from tests.default_scenario import (
    CANCELED_EVENT,
    PAID_EVENT,
    PARTIALLY_PAID_EVENT,
    PENDING_EVENT,
    PENDING_EVENT_BODY,
    UNKNOWN_EVENT,
)

PATH = "/event_conciliation/extraordinary_event/{key}"


PUBLIC_FIELDS = {
    "extraordinary_event_conciliation_key",
    "security_key",
    "investment_key",
    "amortization_type",
    "total_expected_amount",
    "total_discount_amount",
    "total_paid_amount",
    "status",
    "reference_date",
    "due_date",
    "paid_at",
    "event_conciliation_list",
}
INSTALMENT_FIELDS = {
    "event_conciliation_key",
    "installment_key",
    "event_conciliation_status",
    "event_conciliation_type",
}
# At most two decimals, as written in the JSON text (not as Python re-reads it).
MONEY_TEXT = re.compile(r"^(0|[1-9][0-9]*)(\.[0-9]{1,2})?$")


def lookup(client: httpx.Client, key: str) -> httpx.Response:
    return client.get(PATH.format(key=key))


def state(client: httpx.Client) -> Any:
    response = client.get("/__mock/state")
    assert response.status_code == 200
    return response.json()


def raw_money_fields(text: str) -> dict[str, str]:
    """The money fields of a response body exactly as the server wrote them."""
    captured: dict[str, str] = {}

    def keep(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        for name, value in pairs:
            if name.startswith("total_"):
                captured[name] = value
        return dict(pairs)

    json.loads(text, object_pairs_hook=keep, parse_float=str, parse_int=str)
    return captured


def test_pending_event_exact_body(client: httpx.Client) -> None:
    response = lookup(client, PENDING_EVENT)

    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == PENDING_EVENT_BODY


def test_partially_paid_event_stays_pending_with_amount_paid(client: httpx.Client) -> None:
    response = lookup(client, PARTIALLY_PAID_EVENT)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == PUBLIC_FIELDS
    assert body["status"] == "pending_conciliation"
    assert body["total_expected_amount"] == 2000
    assert body["total_paid_amount"] == 750.25
    assert body["total_discount_amount"] == 0
    assert body["paid_at"] is None
    assert [i["event_conciliation_status"] for i in body["event_conciliation_list"]] == ["pending_conciliation"]


def test_paid_present_amount_event_with_discount(client: httpx.Client) -> None:
    response = lookup(client, PAID_EVENT)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == PUBLIC_FIELDS
    assert body["amortization_type"] == "present_amount"
    assert body["status"] == "paid"
    assert body["paid_at"] == "2026-09-28"
    assert body["total_expected_amount"] == 1000
    assert body["total_discount_amount"] == 25.5
    assert body["total_paid_amount"] == 974.5
    assert [i["event_conciliation_status"] for i in body["event_conciliation_list"]] == ["paid", "paid"]


def test_canceled_event(client: httpx.Client) -> None:
    response = lookup(client, CANCELED_EVENT)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == PUBLIC_FIELDS
    assert body["status"] == "canceled"
    assert body["paid_at"] is None
    assert body["total_expected_amount"] == 300
    assert body["total_paid_amount"] == 0
    assert body["event_conciliation_list"] == [
        {
            "event_conciliation_key": "7e2b9a5c-4d6f-4a8b-8c3e-9f1d5a7b3c99",
            "installment_key": "9b3f7d1e-6a8c-4e0f-9b4d-5c7a9e1f3b66",
            "event_conciliation_status": "canceled",
            "event_conciliation_type": "extraordinary_event",
        }
    ]


@pytest.mark.parametrize("key", [PENDING_EVENT, PARTIALLY_PAID_EVENT, PAID_EVENT, CANCELED_EVENT])
def test_every_event_has_the_public_shape_and_no_other_field(client: httpx.Client, key: str) -> None:
    response = lookup(client, key)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == PUBLIC_FIELDS
    assert body["extraordinary_event_conciliation_key"] == key
    assert body["event_conciliation_list"]
    for instalment in body["event_conciliation_list"]:
        assert set(instalment) == INSTALMENT_FIELDS
        assert instalment["event_conciliation_type"] == "extraordinary_event"


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            PARTIALLY_PAID_EVENT,
            {"total_expected_amount": "2000", "total_discount_amount": "0", "total_paid_amount": "750.25"},
        ),
        (PAID_EVENT, {"total_expected_amount": "1000", "total_discount_amount": "25.5", "total_paid_amount": "974.5"}),
    ],
)
def test_money_is_a_json_number_with_at_most_two_decimals(
    client: httpx.Client, key: str, expected: dict[str, str]
) -> None:
    response = lookup(client, key)

    assert response.status_code == 200
    written = raw_money_fields(response.text)
    assert written == expected
    for text in written.values():
        assert MONEY_TEXT.match(text), text


def test_uppercase_key_finds_the_event(client: httpx.Client) -> None:
    response = lookup(client, PAID_EVENT.upper())

    assert response.status_code == 200
    assert response.json() == lookup(client, PAID_EVENT).json()


def test_unknown_key_is_evc100011(client: httpx.Client) -> None:
    response = lookup(client, UNKNOWN_EVENT)

    assert response.status_code == 404
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"code", "message"}
    assert body["code"] == "EVC100011"
    assert UNKNOWN_EVENT in body["message"]


@pytest.mark.parametrize("key", ["abc", "9f1c6f0e-3c8e-4a55-9d47", "9f1c6f0e3c8e4a559d470a4c2b8f6d1x"])
def test_non_uuid_key_is_invalid_request(client: httpx.Client, key: str) -> None:
    response = lookup(client, key)

    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_request"
    assert [d["field"] for d in body["details"]] == ["extraordinary_event_conciliation_key"]


def test_lookup_never_changes_state(client: httpx.Client) -> None:
    before = state(client)

    first = lookup(client, PARTIALLY_PAID_EVENT)
    second = lookup(client, PARTIALLY_PAID_EVENT)
    lookup(client, UNKNOWN_EVENT)

    assert first.status_code == second.status_code == 200
    assert first.json() == second.json()
    assert state(client) == before


def test_lookup_reports_a_payment_made_by_the_orchestration(client: httpx.Client) -> None:
    """The lookup reports the current state: after the admin API pays the rest, it answers paid."""
    paid = client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay", json={"paid_at": "2026-11-21"})
    assert paid.status_code == 200

    response = lookup(client, PARTIALLY_PAID_EVENT)

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "paid"
    assert body["paid_at"] == "2026-11-21"
    assert body["total_paid_amount"] == 2000
    assert [i["event_conciliation_status"] for i in body["event_conciliation_list"]] == ["paid"]


def test_a_lookup_answered_before_a_payment_answers_the_payment_after_it(client: httpx.Client) -> None:
    """The answer is encoded once per version of the event: a payment, a cancellation and a snapshot's restore each
    answer their own version, never the bytes of an earlier lookup."""
    assert lookup(client, PARTIALLY_PAID_EVENT).json()["status"] == "pending_conciliation"
    assert client.post("/__mock/snapshots/before").status_code == 201
    client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay", json={"paid_at": "2026-11-21"}).raise_for_status()

    assert lookup(client, PARTIALLY_PAID_EVENT).json()["status"] == "paid"
    assert client.post("/__mock/snapshots/before/restore").status_code == 200
    assert lookup(client, PARTIALLY_PAID_EVENT).json()["status"] == "pending_conciliation"


def test_money_stays_exact_through_payments(client: httpx.Client) -> None:
    """0.10 + 0.20 paid is written 0.3, and the largest amount keeps its cents (no binary-float drift)."""
    key = "11111111-1111-4111-8111-111111111111"
    created = client.post(
        "/__mock/events",
        json=event_creation(
            key=key,
            amortization_type="present_amount",
            total_expected_amount=9999999999999.99,
            total_discount_amount=0.01,
        ),
    )
    assert created.status_code == 201
    for amount in (0.1, 0.2):
        assert client.post(f"/__mock/events/{key}/pay", json={"amount": amount}).status_code == 200

    response = lookup(client, key)

    assert response.status_code == 200
    assert response.json()["status"] == "pending_conciliation"
    assert raw_money_fields(response.text) == {
        "total_expected_amount": "9999999999999.99",
        "total_discount_amount": "0.01",
        "total_paid_amount": "0.3",
    }
