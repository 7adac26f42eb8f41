"""limits_from_json: a validated body's windows per mode, as integers, shared between equal calls."""

from __future__ import annotations

from mock_server.domain.conversions import limits_from_json
from mock_server.domain.models import LimitWindow


def test_windows_are_read_in_order_with_integer_amounts():
    pix = {
        "withdraw": [{"start_time": "06:00:00-03:00", "amount": 400000}, {"start_time": "20:00:00-03:00", "amount": 2}],
        "change": [{"start_time": "06:00:00-03:00", "amount": 100.0}],  # JSON Schema's integer: kept as 100
    }
    limits = limits_from_json(pix)
    assert limits == {
        "withdraw": (LimitWindow("06:00:00-03:00", 400000), LimitWindow("20:00:00-03:00", 2)),
        "change": (LimitWindow("06:00:00-03:00", 100),),
    }
    assert type(limits["change"][0].amount) is int


def test_equal_windows_are_one_shared_value_whichever_way_the_amount_was_written():
    first = limits_from_json({"withdraw": [{"start_time": "07:00:00-03:00", "amount": 123.0}]})
    again = limits_from_json({"withdraw": [{"start_time": "07:00:00-03:00", "amount": 123}]})
    assert again["withdraw"] is first["withdraw"]
    assert type(again["withdraw"][0].amount) is int
    other = limits_from_json({"withdraw": [{"start_time": "07:00:00-03:00", "amount": 124}]})
    assert other["withdraw"][0].amount == 124


def test_a_mode_with_no_windows_reads_as_none():
    assert limits_from_json({"withdraw": []}) == {"withdraw": ()}
