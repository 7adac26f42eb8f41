"""A session's clock: real time, or frozen at an instant a test chose."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from functools import lru_cache

# event_date and the default paid_at are written in Brasília time, as the interface's examples are.
BRASILIA = timezone(timedelta(hours=-3))


class Clock:
    """Real time unless frozen; `reset()` goes back to how the server started (`--clock`)."""

    def __init__(self, start_frozen_at: datetime | None = None) -> None:
        self._start = start_frozen_at
        self.frozen_at = start_frozen_at

    def now(self) -> datetime:
        return self.frozen_at if self.frozen_at is not None else datetime.now(UTC)

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    def freeze(self, at: datetime | None) -> None:
        """Stop time at `at`; None lets it run again."""
        self.frozen_at = at

    def reset(self) -> None:
        self.frozen_at = self._start


@lru_cache(maxsize=4)  # a request writes the same instant up to three times (journal, event_date, ...)
def timestamp(at: datetime) -> str:
    """RFC 3339 at -03:00 with milliseconds, the layout of every event_date."""
    return at.astimezone(BRASILIA).isoformat(timespec="milliseconds")


def local_date(at: datetime) -> date:
    return at.astimezone(BRASILIA).date()


def parse_instant(value: str) -> datetime:
    """An RFC 3339 date-time already validated by the spec's `date-time` format -> an aware datetime."""
    text = value.replace("z", "Z").replace("t", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    if text[17:19] == "60":
        # RFC 3339 allows a leap second (:60); Python does not: the instant is the next second.
        text = text[:17] + "59" + text[19:]
        return datetime.fromisoformat(text) + timedelta(seconds=1)
    return datetime.fromisoformat(text)
