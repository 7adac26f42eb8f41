"""Pure rules of PIX limits: which window is in force at an instant, and what a limit change does."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta, timezone

from mock_server.domain.models import AWAITING_NOTIFICATION, NOT_APPLICABLE, Limits, LimitWindow


def parse_start_time(value: str) -> time:
    """`HH:MM:SS` plus `Z` or `±HH:MM` -> an aware time (the offset is the window's time zone)."""
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    parsed = time.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"start_time {value!r} has no UTC offset")
    return parsed


def _latest_start_not_after(start: time, at: datetime) -> datetime:
    """The latest occurrence of the daily `start` (in its own offset) that is not after `at`."""
    tz = start.tzinfo
    assert isinstance(tz, timezone)
    local_day = at.astimezone(tz).date()
    candidate = datetime.combine(local_day, start.replace(tzinfo=None), tzinfo=tz)
    if candidate > at:
        candidate -= timedelta(days=1)
    return candidate


def window_in_force(windows: Sequence[LimitWindow], at: datetime) -> LimitWindow:
    """The window that caps an operation at `at` (interface 2.3).

    Each window starts daily at its start_time and lasts until the next start of any window, so
    the one whose latest start not after `at` is the latest governs; before the day's first window
    the previous day's last one still applies. Two windows starting at the same instant: the later
    one in the list wins.
    """
    if not windows:
        raise ValueError("no limit windows")
    if at.tzinfo is None:
        raise ValueError("the instant must carry a UTC offset")
    best: LimitWindow = windows[0]
    best_start: datetime | None = None
    for window in windows:
        started = _latest_start_not_after(parse_start_time(window.start_time), at)
        if best_start is None or started >= best_start:
            best, best_start = window, started
    return best


def goes_up(current: Mapping[str, Sequence[LimitWindow]], proposed: Limits) -> bool:
    """True when any proposed amount exceeds the current one at the same position.

    A mode or window that did not exist before counts as going up: it raises the cap from nothing.
    """
    for mode, windows in proposed.items():
        before = current.get(mode, ())
        if windows is before:  # the same windows (shared when sent alike: domain/conversions.py): nothing goes up
            continue
        for position, window in enumerate(windows):
            if position >= len(before) or window.amount > before[position].amount:
                return True
    return False


def notification_status(current: Mapping[str, Sequence[LimitWindow]], proposed: Limits) -> str:
    """A raise waits for the notification period; a cut or an equal limit needs no notice."""
    return AWAITING_NOTIFICATION if goes_up(current, proposed) else NOT_APPLICABLE


def apply_change(current: Limits, proposed: Limits) -> Limits:
    """The modes a proposal names replace the current windows of those modes; the others stay. A proposal that
    names every current mode is the new limits itself, not a copy: limits are never changed in place."""
    if current.keys() <= proposed.keys():
        return proposed
    return {**current, **proposed}


@dataclass(frozen=True, slots=True)
class LimitVerdict:
    """The evaluation of one operation against the windows in force."""

    allowed: bool
    limit_amount: int
    window: LimitWindow
    source: str  # "account" or "recipient_list"


def evaluate(
    account_limits: Mapping[str, Sequence[LimitWindow]],
    list_limits: Mapping[str, Sequence[LimitWindow]] | None,
    mode: str,
    amount: int,
    at: datetime,
) -> LimitVerdict | None:
    """Check `amount` of `mode` at `at`; `list_limits` are the recipient list's, given when the recipient
    is in it and they govern. None: there are no windows for the mode."""
    source, windows = "account", account_limits.get(mode, ())
    if list_limits is not None and list_limits.get(mode):
        source, windows = "recipient_list", list_limits[mode]
    if not windows:
        return None
    window = window_in_force(windows, at)
    return LimitVerdict(amount <= window.amount, window.amount, window, source)
