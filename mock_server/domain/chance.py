"""Chance that replays: draws that are a pure function of what they are about, and quota windows on a clock.

A fault armed with a `probability` fires on the k-th call it matches when the draw for (seed, session name, the
fault's definition, k) is below the probability. Nothing else goes in (no process state, no wall time, no
generator advanced by other calls), so the same calls in the same order fire the same way on every run, every
server and every replica. The draw is HMAC-SHA256 keyed by the seed over a canonical text of the rest: 53 bits
of it make a float uniform in [0, 1), which is what `random.random()` gives, without its state.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

_FLOAT_BITS = 53  # a double's mantissa: every float of [0, 1) this many bits can make is exact
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_MICROS_PER_SECOND = 1_000_000


def draw(seed: int, session: str, definition: bytes, k: int, purpose: str = "fires") -> float:
    """A float uniform in [0, 1) for the k-th matching call of the fault `definition` (its canonical bytes) in
    `session` under `seed`. `purpose` keeps independent draws of one call apart (whether it fires, its jitter)."""
    key = str(seed).encode()
    message = b"\x00".join((purpose.encode(), session.encode(), definition, str(k).encode()))
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return (int.from_bytes(digest[:8], "big") >> (64 - _FLOAT_BITS)) / (1 << _FLOAT_BITS)


def fires(probability: float, seed: int, session: str, definition: bytes, k: int) -> bool:
    """Whether the k-th matching call fires: always at probability 1 (a draw is below 1), never at 0."""
    return draw(seed, session, definition, k) < probability


def jitter(most_ms: int, seed: int, session: str, definition: bytes, k: int) -> int:
    """The extra delay of the k-th matching call: whole milliseconds from 0 to `most_ms`, each as likely."""
    if most_ms <= 0:
        return 0
    return int(draw(seed, session, definition, k, "jitter") * (most_ms + 1))


def epoch_micros(now: datetime) -> int:
    """`now` as whole microseconds since the Unix epoch (exact: no float rounds a window's edge)."""
    return (now - _EPOCH) // _MICROSECOND


def quota_window(now: datetime, window_s: int) -> tuple[int, int]:
    """The window `now` falls in (windows of `window_s` seconds aligned to multiples of it since the Unix epoch,
    numbered from it) and the whole seconds from `now` to the window's end, rounded up (at least 1: an instant on
    an edge opens a whole window)."""
    micros = epoch_micros(now)
    width = window_s * _MICROS_PER_SECOND
    index = micros // width
    left = (index + 1) * width - micros
    return index, -(-left // _MICROS_PER_SECOND)
