"""Admin events (CONTRACT 4): creation, payment and cancellation, seen through the public lookup."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.builders import event_creation
from tests.default_scenario import CANCELED_EVENT, PAID_EVENT, PARTIALLY_PAID_EVENT, PENDING_EVENT, UNKNOWN_EVENT
from tests.helpers import assert_error


def public(key: str) -> str:
    return f"/event_conciliation/extraordinary_event/{key}"


def lookup(client, key: str) -> dict[str, Any]:
    response = client.get(public(key))
    assert response.status_code == 200
    return response.json()


def new_event(**fields: Any) -> dict[str, Any]:
    """A minimal valid creation body with two fresh instalments."""
    return event_creation(instalments=2, **fields)


# --- creation -------------------------------------------------------------------------------------


def test_create_event_answers_the_public_shape_with_defaults(client):
    key = str(uuid.uuid4())
    body = new_event(extraordinary_event_conciliation_key=key)
    response = client.post("/__mock/events", json=body)
    assert response.status_code == 201
    assert response.json() == {
        "extraordinary_event_conciliation_key": key,
        "security_key": body["security_key"],
        "investment_key": body["investment_key"],
        "amortization_type": "early_amortization",
        "total_expected_amount": 100,
        "total_discount_amount": 0,
        "total_paid_amount": 0,
        "status": "pending_conciliation",
        "reference_date": "2026-11-01",
        "due_date": "2026-11-30",
        "paid_at": None,
        "event_conciliation_list": [
            {**i, "event_conciliation_status": "pending_conciliation", "event_conciliation_type": "extraordinary_event"}
            for i in body["event_conciliation_list"]
        ],
    }
    assert lookup(client, key) == response.json()


def test_create_event_generates_the_key_when_omitted(client):
    response = client.post("/__mock/events", json=new_event())
    assert response.status_code == 201
    key = response.json()["extraordinary_event_conciliation_key"]
    assert uuid.UUID(key).version == 4
    assert lookup(client, key)["status"] == "pending_conciliation"


def test_generated_keys_are_deterministic_with_a_seed(make_client):
    body = new_event()
    first = make_client(seed=7).post("/__mock/events", json=body)
    second = make_client(seed=7).post("/__mock/events", json=body)
    other_seed = make_client(seed=8).post("/__mock/events", json=body)
    assert first.status_code == second.status_code == other_seed.status_code == 201
    key = first.json()["extraordinary_event_conciliation_key"]
    assert second.json()["extraordinary_event_conciliation_key"] == key
    assert other_seed.json()["extraordinary_event_conciliation_key"] != key


def test_create_event_in_any_state(client):
    body = new_event(
        amortization_type="present_amount",
        total_expected_amount=1000.1,
        total_discount_amount=0.1,
        total_paid_amount=1000,
        status="paid",
        paid_at="2026-11-15",
    )
    response = client.post("/__mock/events", json=body)
    assert response.status_code == 201
    event = response.json()
    assert event["status"] == "paid"
    assert event["paid_at"] == "2026-11-15"
    assert event["total_expected_amount"] == 1000.1
    assert event["total_discount_amount"] == 0.1
    assert event["total_paid_amount"] == 1000
    assert {i["event_conciliation_status"] for i in event["event_conciliation_list"]} == {"paid"}


def test_create_event_with_an_existing_key_is_409(client):
    body = new_event(extraordinary_event_conciliation_key=PENDING_EVENT)
    response = client.post("/__mock/events", json=body)
    assert_error(response, 409, "event_already_exists")
    assert PENDING_EVENT in response.json()["message"]
    assert lookup(client, PENDING_EVENT)["total_expected_amount"] == 1500  # the seeded event is untouched


def test_create_event_key_comparison_ignores_case(client):
    response = client.post("/__mock/events", json=new_event(extraordinary_event_conciliation_key=PENDING_EVENT.upper()))
    assert_error(response, 409, "event_already_exists")


def test_create_event_twice_is_409(client):
    body = new_event(extraordinary_event_conciliation_key=str(uuid.uuid4()))
    assert client.post("/__mock/events", json=body).status_code == 201
    assert_error(client.post("/__mock/events", json=body), 409, "event_already_exists")


@pytest.mark.parametrize(
    ("fields", "bad"),
    [
        ({"total_discount_amount": 1}, ["total_discount_amount"]),  # a discount on early_amortization
        ({"status": "paid", "total_paid_amount": 100}, ["paid_at"]),  # paid without paid_at
        ({"status": "paid", "paid_at": None, "total_paid_amount": 100}, ["paid_at"]),
        ({"paid_at": "2026-11-02"}, ["paid_at"]),  # paid_at on a pending event
        ({"status": "canceled", "paid_at": "2026-11-02"}, ["paid_at"]),
        ({"total_paid_amount": 100.01}, ["total_paid_amount"]),  # more than expected
        (
            {"amortization_type": "present_amount", "total_discount_amount": 10, "total_paid_amount": 90.01},
            ["total_paid_amount"],
        ),
        ({"amortization_type": "present_amount", "total_discount_amount": 100.01}, ["total_discount_amount"]),
        ({"total_expected_amount": 10.005}, ["total_expected_amount"]),  # three decimal places
        ({"total_paid_amount": 0.001}, ["total_paid_amount"]),
    ],
)
def test_create_event_cross_check_failures_are_400(client, fields, bad):
    response = client.post("/__mock/events", json=new_event(**fields))
    assert_error(response, 400, "invalid_request", bad)


def test_create_event_instalment_status_must_follow_the_event(client):
    body = new_event(status="paid", paid_at="2026-11-02", total_paid_amount=100)
    body["event_conciliation_list"][1]["event_conciliation_status"] = "canceled"
    response = client.post("/__mock/events", json=body)
    assert_error(response, 400, "invalid_request", ["event_conciliation_list[1].event_conciliation_status"])


def test_create_event_reports_every_cross_check_problem(client):
    body = new_event(total_discount_amount=1, status="paid", total_paid_amount=1)
    response = client.post("/__mock/events", json=body)
    assert_error(response, 400, "invalid_request", ["total_discount_amount", "paid_at"])


def test_create_event_conciliation_keys_must_be_unique_in_the_body(client):
    body = new_event()
    body["event_conciliation_list"][1]["event_conciliation_key"] = body["event_conciliation_list"][0][
        "event_conciliation_key"
    ]
    response = client.post("/__mock/events", json=body)
    assert_error(response, 400, "invalid_request", ["event_conciliation_list[1].event_conciliation_key"])


def test_create_event_conciliation_keys_must_be_unique_in_the_session(client):
    """A scenario file may not repeat an event_conciliation_key; neither may the API (the export must load)."""
    body = new_event()
    body["event_conciliation_list"][0]["event_conciliation_key"] = "0B7E4D2A-9C1F-4A3B-8E5D-6F2A1C9B7D40"  # the seed's
    response = client.post("/__mock/events", json=body)
    error = assert_error(response, 400, "invalid_request", ["event_conciliation_list[0].event_conciliation_key"])
    assert PENDING_EVENT in error["details"][0]["message"]


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"bogus": 1}, ["bogus"]),
        ({"status": "payed"}, ["status"]),
        ({"total_expected_amount": "100"}, ["total_expected_amount"]),
        ({"total_expected_amount": -1}, ["total_expected_amount"]),
        ({"security_key": "not-a-uuid"}, ["security_key"]),
        ({"due_date": "30/11/2026"}, ["due_date"]),
        ({"event_conciliation_list": []}, ["event_conciliation_list"]),
    ],
)
def test_create_event_schema_failures_are_400(client, body, fields):
    response = client.post("/__mock/events", json=new_event(**body))
    assert_error(response, 400, "invalid_request", fields)


def test_create_event_missing_fields_are_listed(client):
    response = client.post("/__mock/events", json={"amortization_type": "early_amortization"})
    body = assert_error(response, 400, "invalid_request")
    assert {d["field"] for d in body["details"]} == {
        "security_key",
        "investment_key",
        "total_expected_amount",
        "reference_date",
        "due_date",
        "event_conciliation_list",
    }


def test_create_event_needs_a_body(client):
    assert_error(client.post("/__mock/events"), 400, "invalid_request", [""])


def test_a_failed_creation_consumes_no_seeded_id(make_client):
    client = make_client(seed=3)
    assert client.post("/__mock/events", json=new_event(total_discount_amount=5)).status_code == 400
    after_failure = client.post("/__mock/events", json=new_event())
    assert after_failure.status_code == 201
    fresh = make_client(seed=3).post("/__mock/events", json=new_event())
    assert (
        after_failure.json()["extraordinary_event_conciliation_key"]
        == fresh.json()["extraordinary_event_conciliation_key"]
    )


# --- payment --------------------------------------------------------------------------------------


def test_pay_without_body_settles_the_open_balance(client):
    assert client.put("/__mock/clock", json={"now": "2026-11-21T01:30:00Z"}).status_code == 200
    response = client.post(f"/__mock/events/{PENDING_EVENT}/pay")
    assert response.status_code == 200
    event = response.json()
    assert event["status"] == "paid"
    assert event["total_paid_amount"] == 1500
    assert event["paid_at"] == "2026-11-20"  # the clock's date at -03:00, not UTC's
    assert [i["event_conciliation_status"] for i in event["event_conciliation_list"]] == ["paid", "paid"]
    assert lookup(client, PENDING_EVENT) == event


def test_pay_without_body_pays_only_what_is_open(client):
    response = client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay")
    assert response.status_code == 200
    assert response.json()["total_paid_amount"] == 2000
    assert response.json()["status"] == "paid"


def test_pay_present_amount_settles_expected_minus_discount(client):
    assert client.post("/__mock/reset", json={"scenario": "payments"}).status_code == 200
    key = "da711448-96c8-4a19-a4b2-d2bc815a47c5"  # 1200.00 with a 48.00 discount
    response = client.post(f"/__mock/events/{key}/pay", json={"amount": 1152})
    assert response.status_code == 200
    event = response.json()
    assert event["status"] == "paid"
    assert event["total_paid_amount"] == 1152
    assert event["total_discount_amount"] == 48


def test_pay_with_an_explicit_paid_at(client):
    response = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"paid_at": "2026-11-25"})
    assert response.status_code == 200
    assert response.json()["paid_at"] == "2026-11-25"
    assert lookup(client, PENDING_EVENT)["paid_at"] == "2026-11-25"


def test_pay_the_exact_balance_as_amount_settles(client):
    body = {"amount": 1249.75, "paid_at": "2026-12-01"}
    response = client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay", json=body)
    assert response.status_code == 200
    event = response.json()
    assert event["status"] == "paid"
    assert event["total_paid_amount"] == 2000
    assert event["paid_at"] == "2026-12-01"


def test_partial_payments_add_up_exactly(client):
    first = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": 0.1})
    assert first.status_code == 200
    assert first.json()["total_paid_amount"] == 0.1
    second = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": 0.2})
    assert second.status_code == 200
    event = second.json()
    assert event["total_paid_amount"] == 0.3  # not 0.30000000000000004
    assert b'"total_paid_amount":0.3,' in second.content
    assert event["status"] == "pending_conciliation"
    assert event["paid_at"] is None
    assert {i["event_conciliation_status"] for i in event["event_conciliation_list"]} == {"pending_conciliation"}
    assert lookup(client, PENDING_EVENT) == event


def test_partial_payments_then_the_rest(client):
    for amount in (0.1, 0.2, 1499.69):
        assert client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": amount}).status_code == 200
    assert lookup(client, PENDING_EVENT)["total_paid_amount"] == 1499.99
    response = client.post(f"/__mock/events/{PENDING_EVENT}/pay")
    assert response.status_code == 200
    assert response.json()["total_paid_amount"] == 1500
    assert response.json()["status"] == "paid"


@pytest.mark.parametrize(
    "amount",
    [
        1500.01,  # more than the balance
        0,
        -5,
        10.123,  # three decimal places
        "10",
        True,
        None,
    ],
)
def test_pay_with_a_bad_amount_is_400_and_changes_nothing(client, amount):
    before = lookup(client, PENDING_EVENT)
    response = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": amount})
    assert_error(response, 400, "invalid_request", ["amount"])
    assert lookup(client, PENDING_EVENT) == before


def test_pay_more_than_a_partial_balance_is_400(client):
    response = client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/pay", json={"amount": 1249.76})
    assert_error(response, 400, "invalid_request", ["amount"])


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"paid_at": "2026-11-21T10:00:00-03:00"}, ["paid_at"]),
        ({"paid_at": "21/11/2026"}, ["paid_at"]),
        ({"amount": 1, "when": "now"}, ["when"]),
        ([], [""]),
    ],
)
def test_pay_with_a_bad_body_is_400(client, body, fields):
    response = client.post(f"/__mock/events/{PENDING_EVENT}/pay", json=body)
    assert_error(response, 400, "invalid_request", fields)


@pytest.mark.parametrize(("key", "status"), [(PAID_EVENT, "paid"), (CANCELED_EVENT, "canceled")])
@pytest.mark.parametrize("body", [None, {"amount": 1}, {"amount": 5000}])
def test_pay_a_terminal_event_is_409_naming_its_status(client, key, status, body):
    before = lookup(client, key)
    response = client.post(f"/__mock/events/{key}/pay", json=body)
    error = assert_error(response, 409, "invalid_transition")
    assert status in error["message"]
    assert lookup(client, key) == before


@pytest.mark.parametrize("action", ["pay", "cancel"])
def test_an_unknown_event_is_404_naming_its_key(client, action):
    response = client.post(f"/__mock/events/{UNKNOWN_EVENT}/{action}")
    assert_error(response, 404, "event_not_found")
    assert UNKNOWN_EVENT in response.json()["message"]


@pytest.mark.parametrize("action", ["pay", "cancel"])
@pytest.mark.parametrize("key", ["not-a-uuid", "123"])
def test_a_non_uuid_key_is_400(client, action, key):
    assert_error(
        client.post(f"/__mock/events/{key}/{action}"), 400, "invalid_request", ["extraordinary_event_conciliation_key"]
    )


def test_pay_accepts_an_upper_case_key(client):
    response = client.post(f"/__mock/events/{PENDING_EVENT.upper()}/pay")
    assert response.status_code == 200
    assert response.json()["extraordinary_event_conciliation_key"] == PENDING_EVENT


# --- cancellation ---------------------------------------------------------------------------------


def test_cancel_a_pending_event(client):
    response = client.post(f"/__mock/events/{PENDING_EVENT}/cancel")
    assert response.status_code == 200
    event = response.json()
    assert event["status"] == "canceled"
    assert event["paid_at"] is None
    assert [i["event_conciliation_status"] for i in event["event_conciliation_list"]] == ["canceled", "canceled"]
    assert lookup(client, PENDING_EVENT) == event


def test_cancel_a_partially_paid_event_keeps_what_was_paid(client):
    response = client.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/cancel")
    assert response.status_code == 200
    assert response.json()["status"] == "canceled"
    assert response.json()["total_paid_amount"] == 750.25
    assert response.json()["paid_at"] is None


@pytest.mark.parametrize(("key", "status"), [(PAID_EVENT, "paid"), (CANCELED_EVENT, "canceled")])
def test_cancel_a_terminal_event_is_409_naming_its_status(client, key, status):
    before = lookup(client, key)
    response = client.post(f"/__mock/events/{key}/cancel")
    error = assert_error(response, 409, "invalid_transition")
    assert status in error["message"]
    assert lookup(client, key) == before


def test_transitions_are_per_session(client):
    other = {"X-Mock-Session": "other"}
    assert client.post(f"/__mock/events/{PENDING_EVENT}/cancel", headers=other).status_code == 200
    assert lookup(client, PENDING_EVENT)["status"] == "pending_conciliation"
    assert client.get(public(PENDING_EVENT), headers=other).json()["status"] == "canceled"


def test_created_events_can_be_paid_and_canceled(client):
    created = client.post("/__mock/events", json=new_event())
    assert created.status_code == 201
    key = created.json()["extraordinary_event_conciliation_key"]
    assert client.post(f"/__mock/events/{key}/pay", json={"amount": 40}).json()["total_paid_amount"] == 40
    canceled = client.post(f"/__mock/events/{key}/cancel")
    assert canceled.status_code == 200
    assert lookup(client, key)["status"] == "canceled"


# --- the transition table -------------------------------------------------------------------------

START = {
    "pending": PENDING_EVENT,
    "partially_paid": PARTIALLY_PAID_EVENT,
    "paid": PAID_EVENT,
    "canceled": CANCELED_EVENT,
}
ACTIONS = {
    "settle": ("pay", None),
    "pay_part": ("pay", {"amount": 100.5}),
    "cancel": ("cancel", None),
}
# (start, action) -> status afterwards, or the 409 a terminal event answers
TABLE = [
    ("pending", "settle", "paid"),
    ("pending", "pay_part", "pending_conciliation"),
    ("pending", "cancel", "canceled"),
    ("partially_paid", "settle", "paid"),
    ("partially_paid", "pay_part", "pending_conciliation"),
    ("partially_paid", "cancel", "canceled"),
    ("paid", "settle", 409),
    ("paid", "pay_part", 409),
    ("paid", "cancel", 409),
    ("canceled", "settle", 409),
    ("canceled", "pay_part", 409),
    ("canceled", "cancel", 409),
]


@pytest.mark.parametrize(("start", "action", "outcome"), TABLE, ids=[f"{s}-{a}" for s, a, _ in TABLE])
def test_transition_table(client, start, action, outcome):
    key = START[start]
    before = lookup(client, key)
    verb, body = ACTIONS[action]
    response = client.post(f"/__mock/events/{key}/{verb}", json=body)
    after = lookup(client, key)
    if outcome == 409:
        error = assert_error(response, 409, "invalid_transition")
        assert before["status"] in error["message"]
        assert after == before
        return
    assert response.status_code == 200
    assert response.json() == after
    assert after["status"] == outcome
    statuses = {i["event_conciliation_status"] for i in after["event_conciliation_list"]}
    if outcome == "pending_conciliation":
        assert after["total_paid_amount"] == pytest.approx(before["total_paid_amount"] + 100.5)
        assert after["paid_at"] is None
        assert statuses == {i["event_conciliation_status"] for i in before["event_conciliation_list"]}
    else:
        assert statuses == {outcome}
        if outcome == "paid":
            assert after["paid_at"] is not None
            assert after["total_paid_amount"] == after["total_expected_amount"] - after["total_discount_amount"]
        else:
            assert after["paid_at"] is None
            assert after["total_paid_amount"] == before["total_paid_amount"]
