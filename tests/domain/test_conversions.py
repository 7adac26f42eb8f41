"""Records <-> JSON shapes (domain/conversions.py): limit windows shared between the calls that send them, and
the instants written out (domain/clock.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mock_server.domain import conversions
from mock_server.domain.clock import BRASILIA, timestamp
from mock_server.domain.conversions import limits_from_json, limits_to_json
from mock_server.domain.models import LimitWindow

PIX = {
    "withdraw": [{"start_time": "06:00:00-03:00", "amount": 400000}, {"start_time": "20:00:00-03:00", "amount": 100.0}],
    "change": [{"start_time": "06:00:00-03:00", "amount": 400000}],
}


def test_windows_read_from_json_keep_their_order_and_integer_amounts():
    limits = limits_from_json(PIX)
    assert limits == {
        "withdraw": (LimitWindow("06:00:00-03:00", 400000), LimitWindow("20:00:00-03:00", 100)),
        "change": (LimitWindow("06:00:00-03:00", 400000),),
    }
    assert type(limits["withdraw"][1].amount) is int
    assert limits_to_json(limits) == {
        "withdraw": [
            {"start_time": "06:00:00-03:00", "amount": 400000},
            {"start_time": "20:00:00-03:00", "amount": 100},
        ],
        "change": [{"start_time": "06:00:00-03:00", "amount": 400000}],
    }


def test_the_same_windows_sent_again_are_the_same_objects_and_each_call_its_own_mapping():
    first, second = limits_from_json(PIX), limits_from_json(PIX)
    assert first is not second  # a Limits mapping is the caller's
    assert first["withdraw"] is second["withdraw"]  # the windows, immutable, are shared
    assert (
        limits_from_json({"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]})["withdraw"] != first["withdraw"]
    )


def test_the_shared_windows_are_bounded(monkeypatch):
    monkeypatch.setattr(conversions, "MAX_SHARED_WINDOWS", 5)
    monkeypatch.setattr(conversions, "_WINDOWS", {})
    for amount in range(20):
        limits_from_json({"withdraw": [{"start_time": "06:00:00-03:00", "amount": amount}]})
    assert len(conversions._WINDOWS) <= 5


def test_an_instant_is_written_in_brasilia_time_with_milliseconds_each_time_asked():
    one = datetime(2026, 11, 21, 13, 55, 48, 130999, tzinfo=UTC)
    other = datetime(2026, 11, 21, 13, 55, 49, tzinfo=UTC)
    assert timestamp(one) == "2026-11-21T10:55:48.130-03:00"
    assert timestamp(one) == "2026-11-21T10:55:48.130-03:00"
    assert timestamp(other) == "2026-11-21T10:55:49.000-03:00"
    assert timestamp(datetime(2026, 11, 21, 13, 55, 48, 130999, tzinfo=UTC)) == timestamp(one)


@pytest.mark.parametrize(
    "at",
    [
        datetime(2026, 11, 21, 13, 55, 59, 999999, tzinfo=UTC),
        datetime(2026, 11, 21, 13, 56, 0, 0, tzinfo=UTC),
        datetime(2026, 11, 21, 13, 56, 0, 999, tzinfo=UTC),
        datetime(2026, 11, 21, 13, 56, 0, 1000, tzinfo=UTC),
        datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2027, 1, 1, 2, 59, 59, 500000, tzinfo=UTC),  # the local date changes at 03:00 UTC
        datetime(2106, 2, 7, 6, 28, 15, 999999, tzinfo=UTC),  # the last second of the exact span
        datetime(2106, 2, 7, 6, 28, 16, 1, tzinfo=UTC),
        datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1, 1, 2, 0, 0, 0, 1000, tzinfo=UTC),
        datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 11, 21, 10, 55, 48, 130000, tzinfo=timezone(timedelta(hours=-3))),
    ],
)
def test_an_instant_is_written_as_isoformat_writes_it(at: datetime):
    """The second's local date and time are kept for the calls that follow: every instant still reads as
    `isoformat` writes it, before and after the second it shares (or not) with the one written before."""
    expected = at.astimezone(BRASILIA).isoformat(timespec="milliseconds")
    for neighbour in (at - timedelta(microseconds=1), at + timedelta(microseconds=1), at):
        timestamp(neighbour)
        assert timestamp(datetime.fromisoformat(at.isoformat())) == expected
