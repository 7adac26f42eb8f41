"""mock_server.domain.limits: the window rule of interface 2.3 and what a limit change does."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta, timezone

import pytest

from mock_server.domain.limits import (
    apply_change,
    evaluate,
    goes_up,
    notification_status,
    parse_start_time,
    window_in_force,
)
from mock_server.domain.models import AWAITING_NOTIFICATION, NOT_APPLICABLE, LimitWindow

BRT = timezone(timedelta(hours=-3))
DAY = LimitWindow("06:00:00-03:00", 500000)
NIGHT = LimitWindow("20:00:00-03:00", 300000)
INTERFACE_EXAMPLE = (DAY, NIGHT)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# --- parse_start_time -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("06:00:00-03:00", time(6, 0, 0, tzinfo=BRT)),
        ("20:30:15Z", time(20, 30, 15, tzinfo=UTC)),
        ("00:00:00+05:30", time(0, 0, 0, tzinfo=timezone(timedelta(hours=5, minutes=30)))),
    ],
)
def test_start_time_keeps_its_offset(text: str, expected: time) -> None:
    parsed = parse_start_time(text)

    assert parsed == expected
    assert parsed.utcoffset() == expected.utcoffset()


def test_start_time_without_offset_is_an_error() -> None:
    with pytest.raises(ValueError, match="no UTC offset"):
        parse_start_time("06:00:00")


# --- window_in_force ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instant", "expected"),
    [
        pytest.param("2026-11-21T12:00:00-03:00", DAY, id="noon-is-daytime"),
        pytest.param("2026-11-21T21:30:00-03:00", NIGHT, id="after-20h-is-nighttime"),
        pytest.param("2026-11-22T03:00:00-03:00", NIGHT, id="3h-next-day-is-still-nighttime"),
        pytest.param("2026-11-21T15:00:00+00:00", DAY, id="15h-utc-is-noon-in-brasilia"),
        pytest.param("2026-11-21T06:00:00-03:00", DAY, id="at-the-day-start-the-day-window-applies"),
        pytest.param("2026-11-21T05:59:59.999999-03:00", NIGHT, id="just-before-the-day-start"),
        pytest.param("2026-11-21T20:00:00-03:00", NIGHT, id="at-the-night-start-the-night-window-applies"),
        pytest.param("2026-11-21T19:59:59.999999-03:00", DAY, id="just-before-the-night-start"),
        pytest.param("2026-11-21T23:00:00+00:00", NIGHT, id="23h-utc-is-20h-in-brasilia"),
        pytest.param("2026-11-22T01:00:00+02:00", NIGHT, id="next-day-elsewhere-is-20h-in-brasilia"),
        pytest.param("2026-11-21T17:59:59+09:00", NIGHT, id="tokyo-evening-is-brasilia-early-morning"),
        pytest.param("2026-11-21T18:00:00+09:00", DAY, id="tokyo-18h-is-6h-in-brasilia"),
    ],
)
def test_interface_example(instant: str, expected: LimitWindow) -> None:
    assert window_in_force(INTERFACE_EXAMPLE, at(instant)) == expected


def test_order_of_the_list_does_not_decide_which_window_is_in_force() -> None:
    assert window_in_force((NIGHT, DAY), at("2026-11-21T12:00:00-03:00")) == DAY
    assert window_in_force((NIGHT, DAY), at("2026-11-21T02:00:00-03:00")) == NIGHT


@pytest.mark.parametrize(
    ("instant", "expected_amount"),
    [
        ("2026-11-21T23:00:00-03:00", 1),
        ("2026-11-22T00:00:00-03:00", 1),
        ("2026-11-22T01:59:59-03:00", 1),
        ("2026-11-22T02:00:00-03:00", 2),
        ("2026-11-22T12:00:00-03:00", 2),
        ("2026-11-22T21:59:59-03:00", 2),
        ("2026-11-22T22:00:00-03:00", 1),
    ],
)
def test_a_window_runs_past_midnight_until_the_next_start(instant: str, expected_amount: int) -> None:
    windows = (LimitWindow("22:00:00-03:00", 1), LimitWindow("02:00:00-03:00", 2))

    assert window_in_force(windows, at(instant)).amount == expected_amount


@pytest.mark.parametrize(
    ("instant", "expected_amount"),
    [
        # 06:00-03:00 is 09:00Z; 23:00Z is 20:00-03:00.
        ("2026-11-21T08:59:59+00:00", 2),
        ("2026-11-21T09:00:00+00:00", 1),
        ("2026-11-21T19:59:59-03:00", 1),
        ("2026-11-21T20:00:00-03:00", 2),
        ("2026-11-22T08:00:00+09:00", 2),  # 23:00Z the day before
        ("2026-11-21T10:00:00+01:00", 1),  # 09:00Z
    ],
)
def test_windows_in_different_offsets_compare_as_instants(instant: str, expected_amount: int) -> None:
    windows = (LimitWindow("06:00:00-03:00", 1), LimitWindow("23:00:00Z", 2))

    assert window_in_force(windows, at(instant)).amount == expected_amount


@pytest.mark.parametrize(
    "instant",
    [
        "2026-11-21T11:59:59+00:00",
        "2026-11-21T12:00:00+00:00",
        "2026-11-21T00:00:00-03:00",
        "2026-11-21T23:59:59+14:00",
    ],
)
def test_a_single_window_is_always_in_force(instant: str) -> None:
    only = LimitWindow("12:00:00Z", 7)

    assert window_in_force((only,), at(instant)) is only


@pytest.mark.parametrize(
    "instant", ["2026-11-21T06:00:00-03:00", "2026-11-21T12:00:00-03:00", "2026-11-21T03:00:00-03:00"]
)
def test_two_windows_at_the_same_instant_the_later_in_the_list_wins(instant: str) -> None:
    first, second = LimitWindow("06:00:00-03:00", 1), LimitWindow("06:00:00-03:00", 2)

    assert window_in_force((first, second), at(instant)) is second
    assert window_in_force((second, first), at(instant)) is first


@pytest.mark.parametrize(
    "instant", ["2026-11-21T09:00:00+00:00", "2026-11-21T23:00:00-03:00", "2026-11-22T05:59:59-03:00"]
)
def test_same_instant_written_in_different_offsets_is_a_tie_too(instant: str) -> None:
    brasilia, utc = LimitWindow("06:00:00-03:00", 1), LimitWindow("09:00:00Z", 2)

    assert window_in_force((brasilia, utc), at(instant)) is utc
    assert window_in_force((utc, brasilia), at(instant)) is brasilia


def test_naive_instant_is_an_error() -> None:
    with pytest.raises(ValueError, match="UTC offset"):
        window_in_force(INTERFACE_EXAMPLE, datetime(2026, 11, 21, 12, 0))


def test_no_window_is_an_error() -> None:
    with pytest.raises(ValueError, match="no limit windows"):
        window_in_force((), at("2026-11-21T12:00:00-03:00"))


# --- goes_up / notification_status / apply_change -------------------------------------------------

CURRENT = {"withdraw": (DAY, NIGHT), "change": (LimitWindow("06:00:00-03:00", 100),)}


@pytest.mark.parametrize(
    ("proposed", "expected"),
    [
        pytest.param({"withdraw": (DAY, NIGHT)}, False, id="equal"),
        pytest.param({"withdraw": (LimitWindow("06:00:00-03:00", 499999), NIGHT)}, False, id="day-down"),
        pytest.param({"withdraw": (DAY, LimitWindow("20:00:00-03:00", 300001))}, True, id="night-up"),
        pytest.param(
            {"withdraw": (LimitWindow("09:00:00Z", 500000), LimitWindow("23:00:00Z", 300000))},
            False,
            id="moved-same-amounts",
        ),
        pytest.param({"withdraw": (DAY,)}, False, id="night-dropped"),
        pytest.param(
            {"change": (LimitWindow("06:00:00-03:00", 100), LimitWindow("20:00:00-03:00", 0))},
            True,
            id="new-window-even-of-0",
        ),
        pytest.param({"transaction": (LimitWindow("06:00:00-03:00", 0),)}, True, id="new-mode-even-of-0"),
        pytest.param(
            {
                "withdraw": (LimitWindow("06:00:00-03:00", 1), LimitWindow("20:00:00-03:00", 1)),
                "change": (LimitWindow("06:00:00-03:00", 101),),
            },
            True,
            id="down-in-one-mode-up-in-another",
        ),
        pytest.param({"withdraw": (NIGHT, DAY)}, True, id="swapped-bigger-amount-now-in-position-2"),
        pytest.param({}, False, id="nothing-proposed"),
        pytest.param({"withdraw": CURRENT["withdraw"]}, False, id="the-same-windows-object"),
        pytest.param({"withdraw": CURRENT["withdraw"], "pix_new": (DAY,)}, True, id="same-object-then-new-mode"),
    ],
)
def test_goes_up_compares_windows_by_position(proposed: dict[str, tuple[LimitWindow, ...]], expected: bool) -> None:
    assert goes_up(CURRENT, proposed) is expected
    assert notification_status(CURRENT, proposed) == (AWAITING_NOTIFICATION if expected else NOT_APPLICABLE)


def test_notification_values_are_the_interface_ones() -> None:
    assert AWAITING_NOTIFICATION == "awaiting_notification_period"
    assert NOT_APPLICABLE == "not_applicable"


def test_apply_change_replaces_named_modes_and_keeps_the_others() -> None:
    current = dict(CURRENT)
    proposed: dict[str, tuple[LimitWindow, ...]] = {
        "withdraw": (LimitWindow("06:00:00-03:00", 1),),
        "transaction": (LimitWindow("00:00:00Z", 2),),
    }

    result = apply_change(current, proposed)

    assert result == {
        "withdraw": (LimitWindow("06:00:00-03:00", 1),),
        "change": CURRENT["change"],
        "transaction": (LimitWindow("00:00:00Z", 2),),
    }
    assert current == CURRENT  # the input is not changed


# --- evaluate -------------------------------------------------------------------------------------

ACCOUNT = {"withdraw": INTERFACE_EXAMPLE, "transaction": (LimitWindow("06:00:00-03:00", 1000),)}
RECIPIENT_LIST = {"transaction": (LimitWindow("06:00:00-03:00", 5000), LimitWindow("20:00:00-03:00", 2000))}


@pytest.mark.parametrize(
    ("amount", "allowed"),
    [(300000, True), (300001, False), (0, True)],
)
def test_evaluate_caps_at_the_window_in_force(amount: int, allowed: bool) -> None:
    verdict = evaluate(ACCOUNT, None, "withdraw", amount, at("2026-11-21T21:30:00-03:00"))

    assert verdict is not None
    assert verdict.allowed is allowed
    assert verdict.limit_amount == 300000
    assert verdict.window == NIGHT
    assert verdict.source == "account"


def test_evaluate_uses_the_recipient_list_windows_when_given() -> None:
    verdict = evaluate(ACCOUNT, RECIPIENT_LIST, "transaction", 4000, at("2026-11-21T12:00:00-03:00"))

    assert verdict is not None
    assert (verdict.allowed, verdict.limit_amount, verdict.source) == (True, 5000, "recipient_list")
    assert verdict.window == RECIPIENT_LIST["transaction"][0]


def test_evaluate_falls_back_to_the_account_when_the_list_lacks_the_mode() -> None:
    verdict = evaluate(ACCOUNT, {"transaction": ()}, "transaction", 4000, at("2026-11-21T12:00:00-03:00"))

    assert verdict is not None
    assert (verdict.allowed, verdict.limit_amount, verdict.source) == (False, 1000, "account")


def test_evaluate_list_only_mode_with_no_account_windows() -> None:
    verdict = evaluate({}, RECIPIENT_LIST, "transaction", 2001, at("2026-11-22T01:00:00-03:00"))

    assert verdict is not None
    assert (verdict.allowed, verdict.limit_amount, verdict.source) == (False, 2000, "recipient_list")


@pytest.mark.parametrize(
    ("account", "recipient_list", "mode"),
    [
        (ACCOUNT, None, "change"),
        (ACCOUNT, RECIPIENT_LIST, "change"),
        ({"change": ()}, None, "change"),
        ({}, None, "withdraw"),
    ],
)
def test_evaluate_without_windows_is_none(
    account: dict[str, tuple[LimitWindow, ...]], recipient_list: dict[str, tuple[LimitWindow, ...]] | None, mode: str
) -> None:
    assert evaluate(account, recipient_list, mode, 1, at("2026-11-21T12:00:00-03:00")) is None
