"""Account limits: registerAccountLimit (POST /limits/account) and createLimitUpdateRequest
(POST /limits/account/{account_id}/limit_update_request).

The scenario is fixtures/default.yaml: account 0001-123456 has every mode at 06:00/20:00 (-03:00),
account 0002-654321 has a single `withdraw` window and two `transaction_natural_person` windows.
"""

from __future__ import annotations

import copy
import itertools
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
from tests.default_scenario import FULL_ACCOUNT, SMALL_ACCOUNT

REGISTER = "/limits/account"
UPDATE = "/limits/account/{account_id}/limit_update_request"
MODES = ("withdraw", "change", "transaction", "transaction_natural_person", "transaction_legal_person")
EVENT_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}-03:00$")
FROZEN_AT = datetime(2026, 11, 21, 13, 0, 0, 123000, tzinfo=UTC)  # 10:00:00.123 at -03:00


def registration(account_id: str = "new-0001", **pix: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": pix or {"withdraw": day_night(500000, 300000)}},
    }


def account_state(client: httpx.Client, account_id: str) -> httpx.Response:
    return client.get(f"/__mock/accounts/{account_id}")


def account_pix(client: httpx.Client, account_id: str) -> dict[str, Any]:
    response = account_state(client, account_id)
    assert response.status_code == 200
    return response.json()["limit"]["pix"]


def fields(response: httpx.Response) -> list[str]:
    return sorted(d["field"] for d in response.json()["details"])


def update(client: httpx.Client, account_id: str, **pix: list[dict[str, Any]]) -> httpx.Response:
    return client.post(UPDATE.format(account_id=account_id), json={"pix": pix})


# --- registerAccountLimit: success ---------------------------------------------------------------


def test_register_answers_account_id_and_event_date(make_client: Callable[..., Any]) -> None:
    client = make_client(clock=FROZEN_AT)

    response = client.post(REGISTER, json=registration("new-0001"))

    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"account_id": "new-0001", "event_date": "2026-11-21T10:00:00.123-03:00"}


def test_register_event_date_is_rfc3339_at_brasilia_offset_with_milliseconds(client: httpx.Client) -> None:
    response = client.post(REGISTER, json=registration())

    assert response.status_code == 201
    assert EVENT_DATE.match(response.json()["event_date"])


def test_registered_account_keeps_the_limits_sent(client: httpx.Client) -> None:
    body = registration("new-0001", withdraw=day_night(500000, 300000), change=[window("08:00:00Z", 0)])

    response = client.post(REGISTER, json=body)

    assert response.status_code == 201
    stored = account_state(client, "new-0001").json()
    assert stored["registration_date"] == "2026-11-21T09:00:00-03:00"
    assert stored["event_date"] == response.json()["event_date"]
    assert stored["limit"] == body["limit"]


def test_interface_registration_example_is_accepted(client: httpx.Client) -> None:
    body = registration(
        "new-0001",
        withdraw=day_night(500000, 300000),
        change=day_night(500000, 300000),
        transaction_natural_person=day_night(1000000, 100000),
        transaction_legal_person=day_night(5000000, 1000000),
    )

    response = client.post(REGISTER, json=body)

    assert response.status_code == 201
    assert account_pix(client, "new-0001") == body["limit"]["pix"]


@pytest.mark.parametrize(
    "modes", [c for n in range(1, len(MODES) + 1) for c in itertools.combinations(MODES, n)], ids="+".join
)
def test_any_non_empty_set_of_modes_is_accepted(client: httpx.Client, modes: tuple[str, ...]) -> None:
    pix = {mode: [window("06:00:00-03:00", 1000 + i)] for i, mode in enumerate(modes)}

    response = client.post(REGISTER, json=registration("new-0001", **pix))

    assert response.status_code == 201
    assert account_pix(client, "new-0001") == pix


def test_integral_float_amount_is_taken_as_the_integer(client: httpx.Client) -> None:
    response = client.post(REGISTER, json=registration("new-0001", withdraw=[window("06:00:00-03:00", 100.0)]))

    assert response.status_code == 201
    stored = account_pix(client, "new-0001")["withdraw"][0]["amount"]
    assert stored == 100
    assert type(stored) is int


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("amount zero", window("06:00:00-03:00", 0)),
        ("amount at the int64 maximum", window("06:00:00-03:00", 9223372036854775807)),
        ("offset Z", window("06:00:00Z", 1)),
        ("positive half-hour offset", window("23:59:59+05:30", 1)),
        ("midnight", window("00:00:00-03:00", 1)),
    ],
)
def test_window_values_on_the_edge_of_the_rules_are_accepted(client: httpx.Client, name: str, value: Any) -> None:
    response = client.post(REGISTER, json=registration("new-0001", withdraw=[value]))

    assert response.status_code == 201, name
    assert account_pix(client, "new-0001")["withdraw"] == [value]


@pytest.mark.parametrize("account_id", ["a", "a" * 64, "conta com espaço e ç"])
def test_account_id_of_1_to_64_characters_is_accepted(client: httpx.Client, account_id: str) -> None:
    response = client.post(REGISTER, json=registration(account_id))

    assert response.status_code == 201
    assert response.json()["account_id"] == account_id


@pytest.mark.parametrize(
    "registration_date", ["2026-11-21T09:00:00Z", "2026-11-21T12:00:00.5+00:00", "2026-11-21t09:00:00z"]
)
def test_rfc3339_registration_dates_are_accepted(client: httpx.Client, registration_date: str) -> None:
    body = registration("new-0001") | {"registration_date": registration_date}

    response = client.post(REGISTER, json=body)

    assert response.status_code == 201
    assert account_state(client, "new-0001").json()["registration_date"] == registration_date


# --- registerAccountLimit: conflicts --------------------------------------------------------------


def test_second_registration_of_an_account_is_a_conflict(client: httpx.Client) -> None:
    first = client.post(REGISTER, json=registration("new-0001", withdraw=[window("06:00:00-03:00", 1)]))
    assert first.status_code == 201

    second = client.post(REGISTER, json=registration("new-0001", withdraw=[window("06:00:00-03:00", 2)]))

    assert second.status_code == 409
    body = second.json()
    assert body["code"] == "account_already_registered"
    assert "new-0001" in body["message"]
    assert account_pix(client, "new-0001") == {"withdraw": [window("06:00:00-03:00", 1)]}


def test_registering_an_account_of_the_scenario_is_a_conflict(client: httpx.Client) -> None:
    before = account_state(client, FULL_ACCOUNT).json()

    response = client.post(REGISTER, json=registration(FULL_ACCOUNT))

    assert response.status_code == 409
    assert response.json()["code"] == "account_already_registered"
    assert account_state(client, FULL_ACCOUNT).json() == before


# --- registerAccountLimit: rejections -------------------------------------------------------------


def _without(path: tuple[str | int, ...]) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        *parents, last = path
        node: Any = body
        for part in parents:
            node = node[part]
        del node[last]

    return change


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        *parents, last = path
        node: Any = body
        for part in parents:
            node = node[part]
        node[last] = value

    return change


W0 = ("limit", "pix", "withdraw", 0)

INVALID_REGISTRATIONS: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    ("missing account_id", _without(("account_id",)), ["account_id"]),
    ("missing registration_date", _without(("registration_date",)), ["registration_date"]),
    ("missing limit", _without(("limit",)), ["limit"]),
    ("missing pix", _without(("limit", "pix")), ["limit.pix"]),
    ("window without start_time", _without((*W0, "start_time")), ["limit.pix.withdraw[0].start_time"]),
    ("window without amount", _without((*W0, "amount")), ["limit.pix.withdraw[0].amount"]),
    ("typo in a mode name", _set(("limit", "pix", "withdrawal"), day_night(1, 1)), ["limit.pix.withdrawal"]),
    ("extra key in a window", _set((*W0, "end_time"), "20:00:00-03:00"), ["limit.pix.withdraw[0].end_time"]),
    ("extra key beside pix", _set(("limit", "ted"), {}), ["limit.ted"]),
    ("extra top-level key", _set(("account_type",), "checking"), ["account_type"]),
    ("empty pix", _set(("limit", "pix"), {}), ["limit.pix"]),
    (
        "three windows",
        _set(("limit", "pix", "withdraw"), [*day_night(3, 2), window("23:00:00-03:00", 1)]),
        ["limit.pix.withdraw"],
    ),
    ("no window", _set(("limit", "pix", "withdraw"), []), ["limit.pix.withdraw"]),
    ("windows not a list", _set(("limit", "pix", "withdraw"), window("06:00:00-03:00", 1)), ["limit.pix.withdraw"]),
    ("pix not an object", _set(("limit", "pix"), []), ["limit.pix"]),
    ("negative amount", _set((*W0, "amount"), -1), ["limit.pix.withdraw[0].amount"]),
    ("amount true", _set((*W0, "amount"), True), ["limit.pix.withdraw[0].amount"]),
    ("amount 100.5", _set((*W0, "amount"), 100.5), ["limit.pix.withdraw[0].amount"]),
    ("amount as a string", _set((*W0, "amount"), "100"), ["limit.pix.withdraw[0].amount"]),
    ("amount null", _set((*W0, "amount"), None), ["limit.pix.withdraw[0].amount"]),
    ("amount above int64", _set((*W0, "amount"), 9223372036854775808), ["limit.pix.withdraw[0].amount"]),
    ("start_time without offset", _set((*W0, "start_time"), "06:00:00"), ["limit.pix.withdraw[0].start_time"]),
    ("start_time 24:00:00", _set((*W0, "start_time"), "24:00:00-03:00"), ["limit.pix.withdraw[0].start_time"]),
    ("start_time without seconds", _set((*W0, "start_time"), "06:00-03:00"), ["limit.pix.withdraw[0].start_time"]),
    ("start_time one-digit hour", _set((*W0, "start_time"), "6:00:00-03:00"), ["limit.pix.withdraw[0].start_time"]),
    ("start_time short offset", _set((*W0, "start_time"), "06:00:00-3"), ["limit.pix.withdraw[0].start_time"]),
    ("start_time offset +24:00", _set((*W0, "start_time"), "06:00:00+24:00"), ["limit.pix.withdraw[0].start_time"]),
    (
        "start_time with a date",
        _set((*W0, "start_time"), "2026-11-21T06:00:00-03:00"),
        ["limit.pix.withdraw[0].start_time"],
    ),
    (
        "start_time with fractions",
        _set((*W0, "start_time"), "06:00:00.000-03:00"),
        ["limit.pix.withdraw[0].start_time"],
    ),
    ("registration_date without offset", _set(("registration_date",), "2026-11-21T09:00:00"), ["registration_date"]),
    ("registration_date only a date", _set(("registration_date",), "2026-11-21"), ["registration_date"]),
    ("registration_date not a date", _set(("registration_date",), "yesterday"), ["registration_date"]),
    ("registration_date month 13", _set(("registration_date",), "2026-13-21T09:00:00-03:00"), ["registration_date"]),
    ("registration_date a number", _set(("registration_date",), 1763726400), ["registration_date"]),
    ("empty account_id", _set(("account_id",), ""), ["account_id"]),
    ("account_id of 65 characters", _set(("account_id",), "a" * 65), ["account_id"]),
    ("account_id a number", _set(("account_id",), 123456), ["account_id"]),
]


@pytest.mark.parametrize(
    ("change", "expected_fields"),
    [pytest.param(change, expected, id=name) for name, change, expected in INVALID_REGISTRATIONS],
)
def test_invalid_registration_is_rejected_with_the_field(
    client: httpx.Client, change: Callable[[dict[str, Any]], None], expected_fields: list[str]
) -> None:
    body = copy.deepcopy(registration("new-0001"))
    change(body)

    response = client.post(REGISTER, json=body)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert sorted(set(fields(response))) == expected_fields
    assert account_state(client, "new-0001").status_code == 404  # nothing half-registered


def test_every_problem_of_a_registration_is_listed(client: httpx.Client) -> None:
    body = {
        "account_id": "",
        "registration_date": "2026-11-21T09:00:00",
        "limit": {"pix": {"withdraw": [window("24:00:00-03:00", -5)], "saque": []}},
        "note": "x",
    }

    response = client.post(REGISTER, json=body)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert fields(response) == [
        "account_id",
        "limit.pix.saque",
        "limit.pix.withdraw[0].amount",
        "limit.pix.withdraw[0].start_time",
        "note",
        "registration_date",
    ]


# --- createLimitUpdateRequest ---------------------------------------------------------------------


def test_limit_update_request_answers_the_proposal(make_client: Callable[..., Any]) -> None:
    client = make_client(clock=FROZEN_AT)

    response = update(client, FULL_ACCOUNT, withdraw=day_night(400000, 200000))

    assert response.status_code == 201
    body = response.json()
    assert uuid.UUID(body.pop("limit_update_request_id"))
    assert body == {
        "analysis_status": "automatically_approved",
        "client_notification_status": "not_applicable",
        "limit_update_request_status": "applied",
        "event_date": "2026-11-21T10:00:00.123-03:00",
    }


def test_each_proposal_gets_its_own_id(client: httpx.Client) -> None:
    first = update(client, FULL_ACCOUNT, withdraw=day_night(1, 1))
    second = update(client, FULL_ACCOUNT, withdraw=day_night(1, 1))

    assert first.status_code == second.status_code == 201
    assert first.json()["limit_update_request_id"] != second.json()["limit_update_request_id"]


def test_interface_limit_update_example_raises_one_amount(client: httpx.Client) -> None:
    """The interface's example lowers withdraw and change but raises transaction_natural_person's day window."""
    response = update(
        client,
        FULL_ACCOUNT,
        withdraw=day_night(400000, 200000),
        change=[window("06:00:00-03:00", 400000)],
        transaction_natural_person=day_night(1200000, 100000),
    )

    assert response.status_code == 201
    assert response.json()["client_notification_status"] == "awaiting_notification_period"


@pytest.mark.parametrize(
    ("account_id", "pix", "expected"),
    [
        pytest.param(FULL_ACCOUNT, {"withdraw": day_night(500000, 300000)}, "not_applicable", id="equal"),
        pytest.param(FULL_ACCOUNT, {"withdraw": day_night(400000, 200000)}, "not_applicable", id="both-down"),
        pytest.param(
            FULL_ACCOUNT,
            {"withdraw": day_night(500000, 300001)},
            "awaiting_notification_period",
            id="night-up-by-one-cent",
        ),
        pytest.param(
            FULL_ACCOUNT,
            {"withdraw": day_night(600000, 100000)},
            "awaiting_notification_period",
            id="day-up-night-down",
        ),
        pytest.param(
            FULL_ACCOUNT,
            {"withdraw": day_night(400000, 200000), "change": day_night(500001, 300000)},
            "awaiting_notification_period",
            id="one-mode-down-another-up",
        ),
        pytest.param(
            FULL_ACCOUNT,
            {"withdraw": [window("08:00:00-03:00", 500000), window("22:00:00-03:00", 300000)]},
            "not_applicable",
            id="only-start-times-moved",
        ),
        pytest.param(
            FULL_ACCOUNT, {"withdraw": [window("06:00:00-03:00", 500000)]}, "not_applicable", id="night-window-dropped"
        ),
        pytest.param(
            SMALL_ACCOUNT,
            {"withdraw": [window("06:00:00-03:00", 200000), window("20:00:00-03:00", 1)]},
            "awaiting_notification_period",
            id="new-window",
        ),
        pytest.param(
            SMALL_ACCOUNT, {"change": [window("06:00:00-03:00", 0)]}, "awaiting_notification_period", id="new-mode"
        ),
        pytest.param(
            SMALL_ACCOUNT,
            {"transaction_natural_person": day_night(400000, 50000)},
            "not_applicable",
            id="equal-amounts-other-start-time",
        ),
    ],
)
def test_notification_status_follows_whether_any_amount_goes_up(
    client: httpx.Client, account_id: str, pix: dict[str, Any], expected: str
) -> None:
    response = update(client, account_id, **pix)

    assert response.status_code == 201
    body = response.json()
    assert body["client_notification_status"] == expected
    assert body["analysis_status"] == "automatically_approved"
    assert body["limit_update_request_status"] == "applied"


def test_named_modes_are_replaced_and_the_others_kept(client: httpx.Client) -> None:
    response = update(client, SMALL_ACCOUNT, withdraw=day_night(150000, 10000), change=[window("07:00:00Z", 5)])

    assert response.status_code == 201
    assert account_pix(client, SMALL_ACCOUNT) == {
        "withdraw": day_night(150000, 10000),
        "transaction_natural_person": [window("06:00:00-03:00", 400000), window("22:00:00-03:00", 50000)],
        "change": [window("07:00:00Z", 5)],
    }


def test_the_next_proposal_compares_with_the_applied_limits(client: httpx.Client) -> None:
    lowered = update(client, FULL_ACCOUNT, withdraw=day_night(100000, 100000))
    raised_back = update(client, FULL_ACCOUNT, withdraw=day_night(200000, 100000))

    assert lowered.json()["client_notification_status"] == "not_applicable"
    assert raised_back.json()["client_notification_status"] == "awaiting_notification_period"
    assert account_pix(client, FULL_ACCOUNT)["withdraw"] == day_night(200000, 100000)


def test_proposal_is_kept_in_the_account_state(client: httpx.Client) -> None:
    response = update(client, FULL_ACCOUNT, withdraw=day_night(1, 1))

    assert response.status_code == 201
    proposals = account_state(client, FULL_ACCOUNT).json()["limit_update_requests"]
    assert proposals == [
        {
            "limit_update_request_id": response.json()["limit_update_request_id"],
            "target": "account",
            "pix": {"withdraw": day_night(1, 1)},
            "analysis_status": "automatically_approved",
            "client_notification_status": "not_applicable",
            "limit_update_request_status": "applied",
            "event_date": response.json()["event_date"],
        }
    ]


def test_limit_update_of_an_account_registered_through_the_api(client: httpx.Client) -> None:
    client.post(REGISTER, json=registration("new-0001", withdraw=[window("06:00:00-03:00", 100)]))

    response = update(client, "new-0001", withdraw=[window("06:00:00-03:00", 101)])

    assert response.status_code == 201
    assert response.json()["client_notification_status"] == "awaiting_notification_period"
    assert account_pix(client, "new-0001") == {"withdraw": [window("06:00:00-03:00", 101)]}


def test_limit_update_of_an_unknown_account_is_account_not_found(client: httpx.Client) -> None:
    response = update(client, "0009-000000", withdraw=day_night(1, 1))

    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "account_not_found"
    assert "0009-000000" in body["message"]
    assert account_state(client, "0009-000000").status_code == 404


@pytest.mark.parametrize(
    ("body", "expected_fields"),
    [
        pytest.param({"limit": {"pix": {"withdraw": day_night(1, 1)}}}, ["limit", "pix"], id="limit-wrapper-not-taken"),
        pytest.param({"pix": {}}, ["pix"], id="empty-pix"),
        pytest.param({"pix": {"saque": day_night(1, 1)}}, ["pix.saque"], id="unknown-mode"),
        pytest.param({"pix": {"withdraw": [window("06:00:00-03:00", 1.5)]}}, ["pix.withdraw[0].amount"], id="fraction"),
        pytest.param(
            {"pix": {"withdraw": [*day_night(1, 1), window("12:00:00Z", 1)]}}, ["pix.withdraw"], id="three-windows"
        ),
        pytest.param({"pix": {"withdraw": day_night(1, 1)}, "reason": "x"}, ["reason"], id="extra-top-level-key"),
    ],
)
def test_invalid_limit_update_is_rejected_and_changes_nothing(
    client: httpx.Client, body: dict[str, Any], expected_fields: list[str]
) -> None:
    before = account_state(client, FULL_ACCOUNT).json()

    response = client.post(UPDATE.format(account_id=FULL_ACCOUNT), json=body)

    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert fields(response) == expected_fields
    assert account_state(client, FULL_ACCOUNT).json() == before


def test_an_unknown_account_id_of_any_length_in_the_path_is_not_found(client: httpx.Client) -> None:
    """Only registration bounds account_id (1-64, CONTRACT 2): in a path any id is looked up, and one never
    registered is the contract's 404, not a 400."""
    for account_id in ("a" * 65, "a" * 2000):
        response = update(client, account_id, withdraw=day_night(1, 1))

        assert response.status_code == 404
        assert response.json()["code"] == "account_not_found"


# --- outcomes: a scenario overrides the status values ---------------------------------------------

OUTCOMES_SCENARIO = """\
description: accounts whose proposals are not applied at once
accounts:
  - account_id: "manual-1"
    registration_date: 2026-01-10T09:00:00-03:00
    limit: {pix: {withdraw: [{start_time: "06:00:00-03:00", amount: 500000}]}}
    outcomes:
      limit_update_request:
        analysis_status: manual_analysis
        client_notification_status: awaiting_client
        limit_update_request_status: pending
  - account_id: "approved-late"
    registration_date: 2026-01-10T09:00:00-03:00
    limit: {pix: {withdraw: [{start_time: "06:00:00-03:00", amount: 500000}]}}
    outcomes:
      limit_update_request: {analysis_status: manual_analysis}
"""


@pytest.fixture
def outcomes_client(make_client: Callable[..., Any], tmp_path: Path) -> Any:
    (tmp_path / "outcomes.yaml").write_text(textwrap.dedent(OUTCOMES_SCENARIO), encoding="utf-8")
    return make_client(fixtures=tmp_path, scenario="outcomes")


def test_outcomes_override_the_answer_and_a_pending_proposal_changes_no_limit(outcomes_client: Any) -> None:
    response = update(outcomes_client, "manual-1", withdraw=[window("06:00:00-03:00", 900000)])

    assert response.status_code == 201
    body = response.json()
    assert body["analysis_status"] == "manual_analysis"
    assert body["client_notification_status"] == "awaiting_client"
    assert body["limit_update_request_status"] == "pending"
    assert account_pix(outcomes_client, "manual-1") == {"withdraw": [window("06:00:00-03:00", 500000)]}
    proposals = account_state(outcomes_client, "manual-1").json()["limit_update_requests"]
    assert [p["limit_update_request_status"] for p in proposals] == ["pending"]


def test_outcome_without_a_status_keeps_applied_and_the_computed_notification(outcomes_client: Any) -> None:
    response = update(outcomes_client, "approved-late", withdraw=[window("06:00:00-03:00", 900000)])

    assert response.status_code == 201
    body = response.json()
    assert body["analysis_status"] == "manual_analysis"
    assert body["client_notification_status"] == "awaiting_notification_period"
    assert body["limit_update_request_status"] == "applied"
    assert account_pix(outcomes_client, "approved-late") == {"withdraw": [window("06:00:00-03:00", 900000)]}
