"""Admin accounts (CONTRACT 4): one account's state, and the limit window rule of interface 2.3."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import recipient_path
from tests.default_scenario import (
    CNPJ_IN_LIST,
    CPF_IN_LIST,
    CPF_NOT_IN_LIST,
    CPF_RECIPIENT,
    FULL_ACCOUNT,
    SMALL_ACCOUNT,
)
from tests.helpers import assert_error


def evaluate(client, account_id: str = FULL_ACCOUNT, **body: Any):
    return client.post(f"/__mock/accounts/{account_id}/limits/evaluate", json=body)


# --- GET /__mock/accounts/{id} --------------------------------------------------------------------


def test_get_a_seeded_account(client):
    response = client.get(f"/__mock/accounts/{SMALL_ACCOUNT}")
    assert response.status_code == 200
    assert response.json() == {
        "account_id": SMALL_ACCOUNT,
        "registration_date": "2026-03-05T14:30:00-03:00",
        "limit": {
            "pix": {
                "withdraw": [{"start_time": "06:00:00-03:00", "amount": 200000}],
                "transaction_natural_person": [
                    {"start_time": "06:00:00-03:00", "amount": 400000},
                    {"start_time": "22:00:00-03:00", "amount": 50000},
                ],
            }
        },
    }


def test_get_an_account_with_its_recipient_list(client):
    response = client.get(f"/__mock/accounts/{FULL_ACCOUNT}")
    assert response.status_code == 200
    recipients = response.json()["recipient_list"]["recipients"]
    assert [r["document_number"] for r in recipients] == [CPF_IN_LIST, CNPJ_IN_LIST]
    assert all(r["recipient_status"] == "created" for r in recipients)


def test_get_an_account_registered_through_the_api(client):
    client.put("/__mock/clock", json={"now": "2026-11-21T12:00:00-03:00"})
    body = {
        "account_id": "acc with spaces?",
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"change": [{"start_time": "10:00:00Z", "amount": 7}]}},
    }
    assert client.post("/limits/account", json=body).status_code == 201
    response = client.get("/__mock/accounts/acc%20with%20spaces%3F")
    assert response.status_code == 200
    assert response.json() == {**body, "event_date": "2026-11-21T12:00:00.000-03:00"}


def test_get_an_account_shows_the_proposals_made(client):
    pix = {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}
    proposal = client.post(f"/limits/account/{SMALL_ACCOUNT}/limit_update_request", json={"pix": pix})
    assert proposal.status_code == 201
    account = client.get(f"/__mock/accounts/{SMALL_ACCOUNT}").json()
    assert account["limit"]["pix"]["withdraw"] == pix["withdraw"]
    assert [p["limit_update_request_id"] for p in account["limit_update_requests"]] == [
        proposal.json()["limit_update_request_id"]
    ]


def test_get_an_unknown_account_is_404(client):
    body = assert_error(client.get("/__mock/accounts/nope"), 404, "account_not_found")
    assert "nope" in body["message"]


def test_get_an_account_of_another_session_is_404(client):
    body = {
        "account_id": "mine",
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"change": [{"start_time": "10:00:00Z", "amount": 7}]}},
    }
    assert client.post("/limits/account", json=body).status_code == 201
    assert client.get("/__mock/accounts/mine").status_code == 200
    assert_error(client.get("/__mock/accounts/mine", headers={"X-Mock-Session": "other"}), 404, "account_not_found")


def test_get_an_account_with_an_id_over_64_characters_is_404(client):
    """A path id is looked up whatever its length: never registered is account_not_found (issue 12 item 6)."""
    assert_error(client.get(f"/__mock/accounts/{'a' * 65}"), 404, "account_not_found")


# --- the window rule (the interface's own example) ------------------------------------------------


@pytest.mark.parametrize(
    ("at", "limit", "start"),
    [
        ("2026-11-21T12:00:00-03:00", 500000, "06:00:00-03:00"),
        ("2026-11-21T21:30:00-03:00", 300000, "20:00:00-03:00"),
        ("2026-11-22T03:00:00-03:00", 300000, "20:00:00-03:00"),  # before 06:00: yesterday's night window
        ("2026-11-21T15:00:00Z", 500000, "06:00:00-03:00"),  # 12:00 -03:00
        ("2026-11-21T06:00:00-03:00", 500000, "06:00:00-03:00"),  # a window starts at its start_time
        ("2026-11-21T05:59:59-03:00", 300000, "20:00:00-03:00"),
        ("2026-11-21T19:59:59-03:00", 500000, "06:00:00-03:00"),
        ("2026-11-21T20:00:00-03:00", 300000, "20:00:00-03:00"),
        ("2026-11-21T23:00:00Z", 300000, "20:00:00-03:00"),  # 20:00 -03:00
        ("2026-11-22T02:00:00+00:00", 300000, "20:00:00-03:00"),  # 23:00 -03:00
    ],
)
def test_the_interface_example(client, at, limit, start):
    response = evaluate(client, mode="withdraw", amount=350000, at=at)
    assert response.status_code == 200
    assert response.json() == {
        "allowed": limit >= 350000,
        "limit_amount": limit,
        "window": {"start_time": start, "amount": limit},
        "source": "account",
    }


@pytest.mark.parametrize(("amount", "allowed"), [(299999, True), (300000, True), (300001, False), (0, True)])
def test_allowed_at_the_boundary_amount(client, amount, allowed):
    response = evaluate(client, mode="withdraw", amount=amount, at="2026-11-21T21:30:00-03:00")
    assert response.status_code == 200
    assert response.json()["allowed"] is allowed
    assert response.json()["limit_amount"] == 300000


def test_at_defaults_to_the_session_clock(client):
    assert client.put("/__mock/clock", json={"now": "2026-11-21T21:30:00-03:00"}).status_code == 200
    night = evaluate(client, mode="withdraw", amount=350000)
    assert night.status_code == 200
    assert night.json()["limit_amount"] == 300000
    assert night.json()["allowed"] is False
    assert client.put("/__mock/clock", json={"now": "2026-11-21T15:00:00Z"}).status_code == 200
    day = evaluate(client, mode="withdraw", amount=350000)
    assert day.status_code == 200
    assert day.json()["limit_amount"] == 500000
    assert day.json()["allowed"] is True


def test_a_single_window_applies_all_day(client):
    for at in ("2026-11-21T05:00:00-03:00", "2026-11-21T12:00:00-03:00", "2026-11-21T23:59:59-03:00"):
        response = evaluate(client, SMALL_ACCOUNT, mode="withdraw", amount=200001, at=at)
        assert response.status_code == 200
        assert response.json() == {
            "allowed": False,
            "limit_amount": 200000,
            "window": {"start_time": "06:00:00-03:00", "amount": 200000},
            "source": "account",
        }


def test_evaluation_follows_a_limit_change(client):
    pix = {
        "withdraw": [{"start_time": "08:00:00-03:00", "amount": 100}, {"start_time": "18:00:00-03:00", "amount": 50}]
    }
    assert client.post(f"/limits/account/{FULL_ACCOUNT}/limit_update_request", json={"pix": pix}).status_code == 201
    response = evaluate(client, mode="withdraw", amount=60, at="2026-11-21T07:00:00-03:00")
    assert response.status_code == 200
    assert response.json()["window"] == {"start_time": "18:00:00-03:00", "amount": 50}
    assert response.json()["allowed"] is False


# --- recipient list -------------------------------------------------------------------------------


@pytest.mark.parametrize("document", [CPF_IN_LIST, "12345678909", CNPJ_IN_LIST, "12ABC34501DE35"])
def test_a_document_in_the_recipient_list_gets_the_list_windows(client, document):
    response = evaluate(
        client, mode="transaction", amount=1500000, at="2026-11-21T12:00:00-03:00", document_number=document
    )
    assert response.status_code == 200
    assert response.json() == {
        "allowed": True,
        "limit_amount": 2000000,
        "window": {"start_time": "06:00:00-03:00", "amount": 2000000},
        "source": "recipient_list",
    }


def test_the_list_windows_at_night(client):
    response = evaluate(
        client, mode="transaction", amount=500001, at="2026-11-22T01:00:00-03:00", document_number=CPF_IN_LIST
    )
    assert response.status_code == 200
    assert response.json() == {
        "allowed": False,
        "limit_amount": 500000,
        "window": {"start_time": "20:00:00-03:00", "amount": 500000},
        "source": "recipient_list",
    }


def test_a_document_not_in_the_list_gets_the_account_windows(client):
    response = evaluate(
        client, mode="transaction", amount=1500000, at="2026-11-21T12:00:00-03:00", document_number=CPF_NOT_IN_LIST
    )
    assert response.status_code == 200
    assert response.json() == {
        "allowed": False,
        "limit_amount": 1000000,
        "window": {"start_time": "06:00:00-03:00", "amount": 1000000},
        "source": "account",
    }


def test_transaction_without_a_document_gets_the_account_windows(client):
    response = evaluate(client, mode="transaction", amount=1, at="2026-11-21T12:00:00-03:00")
    assert response.status_code == 200
    assert response.json()["source"] == "account"


def test_the_list_applies_only_to_transaction(client):
    response = evaluate(client, mode="withdraw", amount=1, at="2026-11-21T12:00:00-03:00", document_number=CPF_IN_LIST)
    assert response.status_code == 200
    assert response.json()["source"] == "account"
    assert response.json()["limit_amount"] == 500000


def test_a_removed_recipient_falls_back_to_the_account(client):
    removed = client.delete(recipient_path(FULL_ACCOUNT, CPF_RECIPIENT))
    assert removed.status_code == 204
    response = evaluate(
        client, mode="transaction", amount=1, at="2026-11-21T12:00:00-03:00", document_number=CPF_IN_LIST
    )
    assert response.status_code == 200
    assert response.json()["source"] == "account"


def test_an_added_recipient_gets_the_list_windows_in_either_layout(client):
    added = client.post(
        f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient", json={"document_number": "11222333000181"}
    )
    assert added.status_code == 201
    response = evaluate(
        client, mode="transaction", amount=1, at="2026-11-21T12:00:00-03:00", document_number="11.222.333/0001-81"
    )
    assert response.status_code == 200
    assert response.json()["source"] == "recipient_list"


def test_a_document_with_a_list_but_no_account_transaction_windows(client):
    """The list's windows for its recipients; limit_not_found for anyone else (no account windows)."""
    assert (
        client.post(
            f"/limits/account/{SMALL_ACCOUNT}/recipient_list",
            json={"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 700}]}}},
        ).status_code
        == 201
    )
    assert (
        client.post(
            f"/limits/account/{SMALL_ACCOUNT}/recipient_list/recipient", json={"document_number": CPF_NOT_IN_LIST}
        ).status_code
        == 201
    )
    inside = evaluate(
        client,
        SMALL_ACCOUNT,
        mode="transaction",
        amount=700,
        at="2026-11-21T12:00:00-03:00",
        document_number=CPF_NOT_IN_LIST,
    )
    assert inside.status_code == 200
    assert inside.json() == {
        "allowed": True,
        "limit_amount": 700,
        "window": {"start_time": "06:00:00-03:00", "amount": 700},
        "source": "recipient_list",
    }
    outside = evaluate(
        client, SMALL_ACCOUNT, mode="transaction", amount=1, at="2026-11-21T12:00:00-03:00", document_number=CPF_IN_LIST
    )
    assert_error(outside, 404, "limit_not_found")


# --- errors ---------------------------------------------------------------------------------------


def test_evaluate_on_an_unknown_account_is_404(client):
    assert_error(evaluate(client, "nope", mode="withdraw", amount=1), 404, "account_not_found")


@pytest.mark.parametrize("mode", ["change", "transaction", "transaction_legal_person"])
def test_evaluate_a_mode_without_windows_is_404(client, mode):
    body = assert_error(evaluate(client, SMALL_ACCOUNT, mode=mode, amount=1), 404, "limit_not_found")
    assert mode in body["message"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"amount": 1}, ["mode"]),
        ({"mode": "withdraw"}, ["amount"]),
        ({"mode": "pix", "amount": 1}, ["mode"]),
        ({"mode": "withdraw", "amount": -1}, ["amount"]),
        ({"mode": "withdraw", "amount": 1.5}, ["amount"]),
        ({"mode": "withdraw", "amount": "1"}, ["amount"]),
        ({"mode": "withdraw", "amount": True}, ["amount"]),
        ({"mode": "withdraw", "amount": 1, "at": "2026-11-21T21:30:00"}, ["at"]),  # no offset
        ({"mode": "withdraw", "amount": 1, "at": "21:30:00-03:00"}, ["at"]),
        ({"mode": "transaction", "amount": 1, "document_number": "123.456.789-00"}, ["document_number"]),
        ({"mode": "transaction", "amount": 1, "document_number": "000.000.000-00"}, ["document_number"]),
        ({"mode": "withdraw", "amount": 1, "when": "now"}, ["when"]),
        ({}, ["amount", "mode"]),
    ],
)
def test_evaluate_rejects_a_bad_body(client, body, fields):
    assert_error(evaluate(client, **body), 400, "invalid_request", fields)


def test_evaluate_needs_a_body(client):
    response = client.post(f"/__mock/accounts/{FULL_ACCOUNT}/limits/evaluate")
    assert_error(response, 400, "invalid_request", [""])


def test_evaluate_accepts_an_integral_float_amount(client):
    response = evaluate(client, mode="withdraw", amount=300000.0, at="2026-11-21T21:30:00-03:00")
    assert response.status_code == 200
    assert response.json()["allowed"] is True
