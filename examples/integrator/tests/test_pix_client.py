"""The integrator's tests: its client against the mock, one clean session per test (the pix_mock fixture)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pix_client import PixClient, PixError, PixUnavailable

PENDING = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"  # in the default scenario: 1500.00 expected, nothing paid
WINDOWS = [("06:00:00-03:00", 500000), ("20:00:00-03:00", 300000)]


@pytest.fixture
def pix(pix_mock) -> Iterator[PixClient]:
    """The code under test, pointed at this test's own session by its base URL alone."""
    client = PixClient(pix_mock.url)
    yield client
    client.close()


def test_reads_a_pending_event(pix):
    event = pix.event(PENDING)
    assert event is not None
    assert (event.status, event.open_balance) == ("pending_conciliation", 1500)


def test_an_unknown_event_is_none(pix):
    assert pix.event("00000000-0000-4000-8000-000000000000") is None


def test_sees_a_payment_the_backend_made(pix, pix_mock):
    pix_mock.pay(PENDING, amount=500)
    assert pix.event(PENDING).open_balance == 1000
    pix_mock.pay(PENDING)
    assert pix.event(PENDING).status == "paid"


def test_sees_a_cancellation(pix, pix_mock):
    pix_mock.cancel(PENDING)
    assert pix.event(PENDING).status == "canceled"


def test_a_503_is_unavailable_and_the_next_call_works(pix, pix_mock):
    pix_mock.fault("getExtraordinaryEvent", status=503)
    with pytest.raises(PixUnavailable):
        pix.event(PENDING)
    assert pix.event(PENDING) is not None


@pytest.mark.mock_server(scenario="empty", clock="2026-11-21T10:00:00-03:00")
def test_registration_sends_the_contracts_body(pix, pix_mock):
    assert pix.register("0003-777777", "2026-11-21T09:00:00-03:00", WINDOWS) == "2026-11-21T10:00:00.000-03:00"
    pix_mock.verify("registerAccountLimit", status=201, body_contains={"account_id": "0003-777777"}, times=1)
    (call,) = pix_mock.requests()
    assert (call["method"], call["status"]) == ("POST", 201)
    assert call["request_body"]["limit"]["pix"]["withdraw"][1] == {"start_time": "20:00:00-03:00", "amount": 300000}
    assert pix_mock.state()["accounts"][0]["account_id"] == "0003-777777"


@pytest.mark.parametrize("attempt", range(4))
def test_every_test_starts_clean(pix, attempt):
    """The same account in every test: a shared session would answer 409 from the second test on."""
    pix.register("0003-888888", "2026-11-21T09:00:00-03:00", WINDOWS)
    with pytest.raises(PixError) as error:
        pix.register("0003-888888", "2026-11-21T09:00:00-03:00", WINDOWS)
    assert error.value.code == "account_already_registered"


@pytest.mark.mock_server(seed=7)
def test_ids_are_reproducible_with_a_seed(pix, pix_mock):
    first = pix.propose_withdraw("0001-123456", WINDOWS)["limit_update_request_id"]
    pix_mock.reset(seed=7)
    assert pix.propose_withdraw("0001-123456", WINDOWS)["limit_update_request_id"] == first
