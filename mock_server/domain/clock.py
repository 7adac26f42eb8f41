"""A session's clock: real time, or frozen at an instant a test chose."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

# event_date and the default paid_at are written in Brasília time, as the interface's examples are.
BRASILIA = timezone(timedelta(hours=-3))


class Clock:
    """Real time unless frozen; `reset()` goes back to how the server started (`--clock`)."""

    def __init__(self, start_frozen_at: datetime | None = None) -> None:
        self._start = start_frozen_at
        self.frozen_at = start_frozen_at

    def now(self) -> datetime:
        # Sessions.begin reads this rule in place at every request (state/sessions.py): change both together.
        return self.frozen_at if self.frozen_at is not None else datetime.now(UTC)

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    def freeze(self, at: datetime | None) -> None:
        """Stop time at `at`; None lets it run again."""
        self.frozen_at = at

    def reset(self) -> None:
        self.frozen_at = self._start

    def advance(self, seconds: float) -> datetime:
        """Move a frozen clock forward. ValueError when it is not frozen or would leave SPAN."""
        if self.frozen_at is None:
            raise ValueError("the clock is not frozen: it runs at real time")
        try:
            later = self.frozen_at + timedelta(seconds=seconds)
        except OverflowError:
            later = None
        if later is None or later > LATEST:
            raise ValueError(f"{seconds} seconds would take the clock past the instants this mock holds ({SPAN})")
        self.frozen_at = later
        return later


def timestamp(at: datetime) -> str:
    """RFC 3339 at -03:00 with milliseconds, the layout of every event_date."""
    global _last_written, _last_second
    last = _last_written
    if last[0] is at:
        return last[1]
    seconds = at.timestamp()
    if 0 <= seconds < _EXACT_SECONDS:
        whole = int(seconds)
        second = _last_second
        if second[0] != whole:
            second = _last_second = (whole, at.astimezone(BRASILIA).isoformat(timespec="seconds")[:19])
        text = second[1] + _MILLISECONDS[at.microsecond // 1000]
    else:
        text = at.astimezone(BRASILIA).isoformat(timespec="milliseconds")
    _last_written = (at, text)
    return text


# The instant written last and its text: a frozen clock answers one datetime object to every call, and a journal
# of it writes that instant 1000 times. Compared by identity: an lru_cache hashed every instant (an aware datetime
# hashes through its offset), which cost a call more than writing it did.
_last_written: tuple[datetime | None, str] = (None, "")
# The second written last, to its local date and time: the calls of one second (thousands, under load) write
# only their milliseconds. Up to 2**32 s after the epoch (2106) a float timestamp is exact to well under a
# microsecond, so its whole seconds are the instant's; any other instant is written out whole. Each is one tuple
# swapped whole: safe for the export's worker thread.
_last_second: tuple[int, str] = (-1, "")
_EXACT_SECONDS = 2**32
# `.mmm-03:00` for each millisecond: looked up, not formatted (formatting was a third of a new instant's text).
_MILLISECONDS = tuple(f".{ms:03d}-03:00" for ms in range(1000))


def local_date(at: datetime) -> date:
    return at.astimezone(BRASILIA).date()


# RFC 3339 writes years 0000 to 9999; Python's dates run from year 1 to 9999. An instant is held only
# a day inside that span, so writing it at -03:00 and stepping back a day (the window rule) never overflow.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)
SPAN = "0001-01-02T00:00:00Z to 9999-12-30T23:59:59Z"


def parse_instant(value: str) -> datetime:
    """An RFC 3339 date-time already validated by the spec's `date-time` format -> an aware datetime.

    ValueError (its message says why) when the instant lies outside what the mock can compute with (SPAN)."""
    text = value.replace("z", "Z").replace("t", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    leap = text[17:19] == "60"
    if leap:
        # RFC 3339 allows a leap second (:60); Python does not: the instant is the next second.
        text = text[:17] + "59" + text[19:]
    try:
        at = datetime.fromisoformat(text)
        if leap:
            at += timedelta(seconds=1)
        inside = EARLIEST <= at <= LATEST
    except (ValueError, OverflowError):
        inside = False
    if not inside:
        raise ValueError(f"{value!r} is outside the instants this mock can compute with ({SPAN})")
    return at


def parse_date(value: str) -> date:
    """An RFC 3339 full-date already validated by the spec's `date` format -> a date.

    ValueError for year 0000, which RFC 3339 writes and Python's dates cannot hold."""
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{value!r} is outside the dates this mock can hold (0001-01-01 to 9999-12-31)") from None
