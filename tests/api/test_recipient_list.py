"""The recipient list: createRecipientList, addRecipient, removeRecipient and
createRecipientListLimitUpdateRequest.

fixtures/default.yaml: account 0001-123456 has a list (transaction 2000000/500000) with recipients
123.456.789-09 and 12.ABC.345/01DE-35; account 0002-654321 has no list yet.
"""

from __future__ import annotations

import re
import textwrap
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.builders import day_night, window
from tests.default_scenario import CPF_RECIPIENT, FULL_ACCOUNT, SMALL_ACCOUNT, UNKNOWN_ACCOUNT
from tests.helpers import assert_error

EVENT_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}-03:00$")
FROZEN_AT = datetime(2026, 11, 21, 13, 0, 0, 123000, tzinfo=UTC)  # 10:00:00.123 at -03:00
FROZEN_EVENT_DATE = "2026-11-21T10:00:00.123-03:00"


def create_list(client: httpx.Client, account_id: str, body: Any = None) -> httpx.Response:
    if body is None:
        body = {"limit": {"pix": {"transaction": day_night(100000, 50000)}}}
    return client.post(f"/limits/account/{account_id}/recipient_list", json=body)


def add(client: httpx.Client, account_id: str, document_number: Any) -> httpx.Response:
    return client.post(
        f"/limits/account/{account_id}/recipient_list/recipient", json={"document_number": document_number}
    )


def remove(client: httpx.Client, account_id: str, recipient_id: str) -> httpx.Response:
    return client.delete(f"/limits/account/{account_id}/recipient_list/recipient/{recipient_id}")


def change_list_limits(client: httpx.Client, account_id: str, body: Any) -> httpx.Response:
    return client.post(f"/limits/account/{account_id}/recipient_list/limit_update_request", json=body)


def account_state(client: httpx.Client, account_id: str) -> dict[str, Any]:
    response = client.get(f"/__mock/accounts/{account_id}")
    assert response.status_code == 200
    return response.json()


def recipient_documents(client: httpx.Client, account_id: str) -> list[str]:
    return [r["document_number"] for r in account_state(client, account_id)["recipient_list"]["recipients"]]


def fields(response: httpx.Response) -> list[str]:
    return sorted({d["field"] for d in response.json()["details"]})


# --- createRecipientList --------------------------------------------------------------------------


def test_create_list_answers_only_event_date(make_client: Callable[..., Any]) -> None:
    client = make_client(clock=FROZEN_AT)

    response = create_list(client, SMALL_ACCOUNT)

    assert response.status_code == 201
    assert response.json() == {"event_date": FROZEN_EVENT_DATE}


def test_created_list_holds_its_windows_and_no_recipient(client: httpx.Client) -> None:
    response = create_list(client, SMALL_ACCOUNT, {"limit": {"pix": {"transaction": [window("07:00:00Z", 123)]}}})

    assert response.status_code == 201
    assert EVENT_DATE.match(response.json()["event_date"])
    assert account_state(client, SMALL_ACCOUNT)["recipient_list"] == {
        "limit": {"pix": {"transaction": [window("07:00:00Z", 123)]}},
        "event_date": response.json()["event_date"],
        "recipients": [],
    }


def test_creating_the_list_leaves_the_account_limits_alone(client: httpx.Client) -> None:
    before = account_state(client, SMALL_ACCOUNT)["limit"]

    create_list(client, SMALL_ACCOUNT)

    assert account_state(client, SMALL_ACCOUNT)["limit"] == before


def test_second_list_is_a_conflict(client: httpx.Client) -> None:
    assert create_list(client, SMALL_ACCOUNT).status_code == 201
    first = account_state(client, SMALL_ACCOUNT)["recipient_list"]

    response = create_list(client, SMALL_ACCOUNT, {"limit": {"pix": {"transaction": [window("00:00:00Z", 1)]}}})

    assert_error(response, 409, "recipient_list_already_exists")
    assert account_state(client, SMALL_ACCOUNT)["recipient_list"] == first


def test_list_of_the_scenario_cannot_be_created_again(client: httpx.Client) -> None:
    response = create_list(client, FULL_ACCOUNT)

    assert_error(response, 409, "recipient_list_already_exists")
    assert len(recipient_documents(client, FULL_ACCOUNT)) == 2


def test_list_for_an_unknown_account_is_account_not_found(client: httpx.Client) -> None:
    response = create_list(client, UNKNOWN_ACCOUNT)

    assert_error(response, 404, "account_not_found")


@pytest.mark.parametrize(
    ("body", "expected_fields"),
    [
        pytest.param(
            {"limit": {"pix": {"withdraw": day_night(1, 1)}}},
            ["limit.pix.transaction", "limit.pix.withdraw"],
            id="withdraw",
        ),
        pytest.param(
            {"limit": {"pix": {"transaction": day_night(1, 1), "withdraw": day_night(1, 1)}}},
            ["limit.pix.withdraw"],
            id="transaction-and-withdraw",
        ),
        pytest.param(
            {"limit": {"pix": {"transaction_natural_person": day_night(1, 1)}}},
            ["limit.pix.transaction", "limit.pix.transaction_natural_person"],
            id="transaction-natural-person",
        ),
        pytest.param({"limit": {"pix": {}}}, ["limit.pix.transaction"], id="empty-pix"),
        pytest.param({"pix": {"transaction": day_night(1, 1)}}, ["limit", "pix"], id="no-limit-wrapper"),
        pytest.param({"limit": {"pix": {"transaction": []}}}, ["limit.pix.transaction"], id="no-window"),
        pytest.param(
            {"limit": {"pix": {"transaction": [*day_night(1, 1), window("12:00:00Z", 1)]}}},
            ["limit.pix.transaction"],
            id="three-windows",
        ),
        pytest.param(
            {"limit": {"pix": {"transaction": [window("06:00:00", 1)]}}},
            ["limit.pix.transaction[0].start_time"],
            id="start-time-without-offset",
        ),
        pytest.param(
            {"limit": {"pix": {"transaction": [window("06:00:00Z", -1)]}}},
            ["limit.pix.transaction[0].amount"],
            id="negative-amount",
        ),
    ],
)
def test_invalid_list_is_rejected_and_not_created(
    client: httpx.Client, body: dict[str, Any], expected_fields: list[str]
) -> None:
    response = create_list(client, SMALL_ACCOUNT, body)

    assert_error(response, 400, "invalid_request")
    assert fields(response) == expected_fields
    assert "recipient_list" not in account_state(client, SMALL_ACCOUNT)


# --- addRecipient ---------------------------------------------------------------------------------


def test_add_recipient_answers_the_recipient(make_client: Callable[..., Any]) -> None:
    client = make_client(clock=FROZEN_AT)

    response = add(client, FULL_ACCOUNT, "529.982.247-25")

    assert response.status_code == 201
    body = response.json()
    assert uuid.UUID(body.pop("recipient_id"))
    assert body == {
        "analysis_status": "automatically_approved",
        "client_notification_status": "not_applicable",
        "recipient_status": "created",
        "event_date": FROZEN_EVENT_DATE,
    }


@pytest.mark.parametrize(
    "document_number",
    [
        pytest.param("529.982.247-25", id="cpf-punctuated"),
        pytest.param("52998224725", id="cpf-bare"),
        pytest.param("11.222.333/0001-81", id="cnpj-punctuated"),
        pytest.param("11222333000181", id="cnpj-bare"),
        pytest.param("12.ABC.345/01DE-35", id="cnpj-alphanumeric-punctuated"),
        pytest.param("12ABC34501DE35", id="cnpj-alphanumeric-bare"),
    ],
)
def test_valid_documents_are_added_as_written(client: httpx.Client, document_number: str) -> None:
    assert create_list(client, SMALL_ACCOUNT).status_code == 201

    response = add(client, SMALL_ACCOUNT, document_number)

    assert response.status_code == 201
    assert response.json()["recipient_status"] == "created"
    recipients = account_state(client, SMALL_ACCOUNT)["recipient_list"]["recipients"]
    assert [(r["recipient_id"], r["document_number"]) for r in recipients] == [
        (response.json()["recipient_id"], document_number)
    ]


@pytest.mark.parametrize(
    "document_number",
    [
        pytest.param("529.982.247-26", id="cpf-wrong-second-check-digit"),
        pytest.param("529.982.247-15", id="cpf-wrong-first-check-digit"),
        pytest.param("52998224726", id="cpf-bare-wrong-check-digit"),
        pytest.param("11.222.333/0001-82", id="cnpj-wrong-check-digit"),
        pytest.param("12.ABC.345/01DE-36", id="cnpj-alphanumeric-wrong-check-digit"),
        pytest.param("000.000.000-00", id="cpf-repeated-zeros"),
        pytest.param("11111111111", id="cpf-repeated-ones"),
        pytest.param("00.000.000/0000-00", id="cnpj-repeated-zeros"),
        pytest.param("12.abc.345/01de-35", id="cnpj-lowercase-letters"),
        pytest.param("12ABC34501DEAB", id="cnpj-letters-in-check-digits"),
        pytest.param("529.982.24725", id="cpf-half-punctuated"),
        pytest.param("529 982 247 25", id="cpf-spaces"),
        pytest.param("5299822472", id="ten-digits"),
        pytest.param("", id="empty"),
        pytest.param(52998224725, id="a-number"),
        pytest.param(None, id="null"),
    ],
)
def test_invalid_document_number_is_rejected(client: httpx.Client, document_number: Any) -> None:
    response = add(client, FULL_ACCOUNT, document_number)

    assert_error(response, 400, "invalid_request")
    assert fields(response) == ["document_number"]
    assert len(recipient_documents(client, FULL_ACCOUNT)) == 2


def test_missing_or_extra_fields_are_rejected(client: httpx.Client) -> None:
    missing = client.post(f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient", json={})
    extra = client.post(
        f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient",
        json={"document_number": "529.982.247-25", "name": "Maria"},
    )

    assert_error(missing, 400, "invalid_request")
    assert fields(missing) == ["document_number"]
    assert_error(extra, 400, "invalid_request")
    assert fields(extra) == ["name"]


@pytest.mark.parametrize(
    "document_number",
    [
        pytest.param("123.456.789-09", id="same-layout"),
        pytest.param("12345678909", id="cpf-bare-of-a-punctuated-recipient"),
        pytest.param("12ABC34501DE35", id="cnpj-bare-of-a-punctuated-recipient"),
    ],
)
def test_same_number_in_any_layout_is_already_in_the_list(client: httpx.Client, document_number: str) -> None:
    response = add(client, FULL_ACCOUNT, document_number)

    assert_error(response, 409, "recipient_already_in_list")
    assert recipient_documents(client, FULL_ACCOUNT) == ["123.456.789-09", "12.ABC.345/01DE-35"]


def test_recipient_added_punctuated_conflicts_with_its_bare_layout(client: httpx.Client) -> None:
    assert add(client, FULL_ACCOUNT, "11.222.333/0001-81").status_code == 201

    response = add(client, FULL_ACCOUNT, "11222333000181")

    assert_error(response, 409, "recipient_already_in_list")


def test_add_before_the_list_exists_is_recipient_list_not_found(client: httpx.Client) -> None:
    response = add(client, SMALL_ACCOUNT, "529.982.247-25")

    assert_error(response, 404, "recipient_list_not_found")
    assert "recipient_list" not in account_state(client, SMALL_ACCOUNT)


def test_add_to_an_unknown_account_is_account_not_found(client: httpx.Client) -> None:
    response = add(client, UNKNOWN_ACCOUNT, "529.982.247-25")

    assert_error(response, 404, "account_not_found")


# --- removeRecipient ------------------------------------------------------------------------------


def test_remove_recipient_answers_204_without_a_body(client: httpx.Client) -> None:
    response = remove(client, FULL_ACCOUNT, CPF_RECIPIENT)

    assert response.status_code == 204
    assert response.content == b""
    assert "content-type" not in response.headers
    assert recipient_documents(client, FULL_ACCOUNT) == ["12.ABC.345/01DE-35"]


def test_removing_twice_is_recipient_not_found(client: httpx.Client) -> None:
    assert remove(client, FULL_ACCOUNT, CPF_RECIPIENT).status_code == 204

    response = remove(client, FULL_ACCOUNT, CPF_RECIPIENT)

    assert_error(response, 404, "recipient_not_found")
    assert CPF_RECIPIENT in response.json()["message"]


def test_removed_document_can_be_added_again(client: httpx.Client) -> None:
    assert remove(client, FULL_ACCOUNT, CPF_RECIPIENT).status_code == 204

    response = add(client, FULL_ACCOUNT, "12345678909")

    assert response.status_code == 201
    assert response.json()["recipient_id"] != CPF_RECIPIENT


def test_recipient_added_through_the_api_can_be_removed(client: httpx.Client) -> None:
    recipient_id = add(client, FULL_ACCOUNT, "529.982.247-25").json()["recipient_id"]

    response = remove(client, FULL_ACCOUNT, recipient_id)

    assert response.status_code == 204
    assert recipient_documents(client, FULL_ACCOUNT) == ["123.456.789-09", "12.ABC.345/01DE-35"]


def test_remove_unknown_recipient_is_recipient_not_found(client: httpx.Client) -> None:
    response = remove(client, FULL_ACCOUNT, "00000000-0000-4000-8000-000000000000")

    assert_error(response, 404, "recipient_not_found")
    assert len(recipient_documents(client, FULL_ACCOUNT)) == 2


@pytest.mark.parametrize(
    ("account_id", "code"),
    [(UNKNOWN_ACCOUNT, "account_not_found"), (SMALL_ACCOUNT, "recipient_list_not_found")],
    ids=["unknown-account", "account-without-a-list"],
)
def test_remove_where_there_is_no_list_is_404(client: httpx.Client, account_id: str, code: str) -> None:
    response = remove(client, account_id, CPF_RECIPIENT)

    assert_error(response, 404, code)


def test_recipient_of_another_account_is_not_found(client: httpx.Client) -> None:
    assert create_list(client, SMALL_ACCOUNT).status_code == 201

    response = remove(client, SMALL_ACCOUNT, CPF_RECIPIENT)

    assert_error(response, 404, "recipient_not_found")
    assert len(recipient_documents(client, FULL_ACCOUNT)) == 2


def test_an_unknown_recipient_id_of_any_length_is_not_found(client: httpx.Client) -> None:
    """The interface states no bound on recipient_id: a long one is unknown (404), not malformed (400)."""
    for recipient_id in ("r", "r" * 65, "r" * 2000):
        response = remove(client, FULL_ACCOUNT, recipient_id)

        assert_error(response, 404, "recipient_not_found")
    assert len(recipient_documents(client, FULL_ACCOUNT)) == 2


# --- createRecipientListLimitUpdateRequest --------------------------------------------------------


def test_list_limit_change_answers_the_proposal(make_client: Callable[..., Any]) -> None:
    client = make_client(clock=FROZEN_AT)

    response = change_list_limits(client, FULL_ACCOUNT, {"pix": {"transaction": day_night(1000000, 100000)}})

    assert response.status_code == 201
    body = response.json()
    assert uuid.UUID(body.pop("limit_update_request_id"))
    assert body == {
        "analysis_status": "automatically_approved",
        "client_notification_status": "not_applicable",
        "recipient_status": "created",
        "event_date": FROZEN_EVENT_DATE,
    }


@pytest.mark.parametrize(
    ("transaction", "expected"),
    [
        pytest.param(day_night(2000000, 500000), "not_applicable", id="equal"),
        pytest.param(day_night(1999999, 499999), "not_applicable", id="down"),
        pytest.param(day_night(2000001, 500000), "awaiting_notification_period", id="day-up"),
        pytest.param(day_night(100, 500001), "awaiting_notification_period", id="night-up"),
        pytest.param([window("06:00:00-03:00", 2000000)], "not_applicable", id="night-window-dropped"),
    ],
)
def test_list_limit_change_notification_rule(
    client: httpx.Client, transaction: list[dict[str, Any]], expected: str
) -> None:
    response = change_list_limits(client, FULL_ACCOUNT, {"pix": {"transaction": transaction}})

    assert response.status_code == 201
    assert response.json()["client_notification_status"] == expected


def test_new_window_on_a_list_counts_as_going_up(client: httpx.Client) -> None:
    create_list(client, SMALL_ACCOUNT, {"limit": {"pix": {"transaction": [window("06:00:00-03:00", 100000)]}}})

    response = change_list_limits(client, SMALL_ACCOUNT, {"pix": {"transaction": day_night(100000, 1)}})

    assert response.status_code == 201
    assert response.json()["client_notification_status"] == "awaiting_notification_period"


def test_list_windows_are_replaced_and_the_account_windows_kept(client: httpx.Client) -> None:
    before = account_state(client, FULL_ACCOUNT)

    response = change_list_limits(client, FULL_ACCOUNT, {"pix": {"transaction": [window("08:00:00Z", 7)]}})

    assert response.status_code == 201
    after = account_state(client, FULL_ACCOUNT)
    assert after["recipient_list"]["limit"] == {"pix": {"transaction": [window("08:00:00Z", 7)]}}
    assert after["recipient_list"]["recipients"] == before["recipient_list"]["recipients"]
    assert after["limit"] == before["limit"]


def test_list_proposal_is_kept_in_the_account_state(client: httpx.Client) -> None:
    response = change_list_limits(client, FULL_ACCOUNT, {"pix": {"transaction": day_night(1, 1)}})

    proposals = account_state(client, FULL_ACCOUNT)["limit_update_requests"]
    assert proposals == [
        {
            "limit_update_request_id": response.json()["limit_update_request_id"],
            "target": "recipient_list",
            "pix": {"transaction": day_night(1, 1)},
            "analysis_status": "automatically_approved",
            "client_notification_status": "not_applicable",
            "recipient_status": "created",
            "event_date": response.json()["event_date"],
        }
    ]


@pytest.mark.parametrize(
    ("account_id", "code"),
    [(SMALL_ACCOUNT, "recipient_list_not_found"), (UNKNOWN_ACCOUNT, "account_not_found")],
    ids=["account-without-a-list", "unknown-account"],
)
def test_list_limit_change_where_there_is_no_list_is_404(client: httpx.Client, account_id: str, code: str) -> None:
    response = change_list_limits(client, account_id, {"pix": {"transaction": day_night(1, 1)}})

    assert_error(response, 404, code)
    if account_id == SMALL_ACCOUNT:
        assert "limit_update_requests" not in account_state(client, SMALL_ACCOUNT)


@pytest.mark.parametrize(
    ("body", "expected_fields"),
    [
        pytest.param({"pix": {"withdraw": day_night(1, 1)}}, ["pix.transaction", "pix.withdraw"], id="withdraw-only"),
        pytest.param(
            {"pix": {"transaction": day_night(1, 1), "change": day_night(1, 1)}}, ["pix.change"], id="extra-mode"
        ),
        pytest.param({"limit": {"pix": {"transaction": day_night(1, 1)}}}, ["limit", "pix"], id="limit-wrapper"),
        pytest.param(
            {"pix": {"transaction": [window("06:00:00-03:00", 10.5)]}}, ["pix.transaction[0].amount"], id="fraction"
        ),
    ],
)
def test_invalid_list_limit_change_is_rejected_and_changes_nothing(
    client: httpx.Client, body: dict[str, Any], expected_fields: list[str]
) -> None:
    before = account_state(client, FULL_ACCOUNT)

    response = change_list_limits(client, FULL_ACCOUNT, body)

    assert_error(response, 400, "invalid_request")
    assert fields(response) == expected_fields
    assert account_state(client, FULL_ACCOUNT) == before


# --- outcomes of a scenario -----------------------------------------------------------------------

OUTCOMES_SCENARIO = """\
description: a recipient list whose changes wait for an analyst
accounts:
  - account_id: "manual-1"
    registration_date: 2026-01-10T09:00:00-03:00
    limit: {pix: {transaction: [{start_time: "06:00:00-03:00", amount: 100}]}}
    recipient_list:
      limit: {pix: {transaction: [{start_time: "06:00:00-03:00", amount: 1000}]}}
      recipients: []
    outcomes:
      recipient: {recipient_status: pending_analysis, analysis_status: manual_analysis}
      recipient_list_limit_update_request: {analysis_status: manual_analysis, recipient_status: pending_analysis}
"""


@pytest.fixture
def outcomes_client(make_client: Callable[..., Any], tmp_path: Path) -> Any:
    (tmp_path / "outcomes.yaml").write_text(textwrap.dedent(OUTCOMES_SCENARIO), encoding="utf-8")
    return make_client(fixtures=tmp_path, scenario="outcomes")


def test_recipient_outcome_overrides_the_answer(outcomes_client: Any) -> None:
    response = add(outcomes_client, "manual-1", "529.982.247-25")

    assert response.status_code == 201
    body = response.json()
    assert body["recipient_status"] == "pending_analysis"
    assert body["analysis_status"] == "manual_analysis"
    assert body["client_notification_status"] == "not_applicable"


def test_list_limit_change_not_approved_leaves_the_windows(outcomes_client: Any) -> None:
    response = change_list_limits(
        outcomes_client, "manual-1", {"pix": {"transaction": [window("06:00:00-03:00", 5000)]}}
    )

    assert response.status_code == 201
    body = response.json()
    assert body["analysis_status"] == "manual_analysis"
    assert body["recipient_status"] == "pending_analysis"
    assert body["client_notification_status"] == "awaiting_notification_period"
    assert account_state(outcomes_client, "manual-1")["recipient_list"]["limit"] == {
        "pix": {"transaction": [window("06:00:00-03:00", 1000)]}
    }
