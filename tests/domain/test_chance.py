"""The draws of faults that fire by chance, and quota windows on a clock: pure rules (domain/chance.py)."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mock_server.domain import chance

DEFINITION = b'{"kind":"respond","operation_id":"getExtraordinaryEvent","probability":0.3,"status":503}'


def test_a_draw_is_the_same_for_the_same_inputs_and_lies_in_0_1():
    draws = [chance.draw(7, "ci-run", DEFINITION, k) for k in range(1, 501)]
    assert draws == [chance.draw(7, "ci-run", DEFINITION, k) for k in range(1, 501)]
    assert all(0.0 <= d < 1.0 for d in draws)
    assert len(set(draws)) == len(draws)  # 53 bits a draw: no two of 500 alike
    # Spread over [0, 1): each tenth holds some of 500 draws (a stuck or biased draw would leave tenths empty).
    assert {int(d * 10) for d in draws} == set(range(10))


@pytest.mark.parametrize(
    "other",
    [
        (8, "ci-run", DEFINITION, "fires"),  # another seed
        (7, "ci-run-2", DEFINITION, "fires"),  # another session
        (7, "ci-run", DEFINITION.replace(b"503", b"502"), "fires"),  # another fault
        (7, "ci-run", DEFINITION, "jitter"),  # another purpose of the same call
    ],
)
def test_each_input_changes_the_sequence(other):
    seed, session, definition, purpose = other
    ours = [chance.draw(7, "ci-run", DEFINITION, k) for k in range(1, 21)]
    theirs = [chance.draw(seed, session, definition, k, purpose) for k in range(1, 21)]
    assert ours != theirs


def test_a_known_sequence_stays_the_same_across_releases():
    """The draw is part of the contract (a seed in a CI log replays its run on a later mock): pinned here, and
    checked against the rule as the docs state it (`_reference_draw`)."""
    fired = "".join("x" if chance.fires(0.3, 7, "ci-run", DEFINITION, k) else "." for k in range(1, 41))
    assert fired == "x.x......x..xxx..xx.x...x...xx.x.xx.x.x."
    assert chance.draw(7, "ci-run", DEFINITION, 1) == 0.2846690944583925
    for k in range(1, 30):
        assert chance.draw(11, "s", b"d", k) == _reference_draw(11, "s", b"d", k)


def _reference_draw(seed: int, session: str, definition: bytes, k: int) -> float:
    """The rule as the docs state it, written out again: HMAC-SHA256 keyed by the seed's decimal text over
    purpose, session, definition and k joined by NUL bytes; the first 53 bits over 2^53."""
    message = b"\x00".join((b"fires", session.encode(), definition, str(k).encode()))
    digest = hmac.new(str(seed).encode(), message, hashlib.sha256).digest()
    return (int.from_bytes(digest[:8], "big") >> 11) / 2**53


def test_probability_one_always_fires_and_the_share_follows_the_probability():
    assert all(chance.fires(1.0, 3, "s", DEFINITION, k) for k in range(1, 1001))
    fired = sum(chance.fires(0.3, 3, "s", DEFINITION, k) for k in range(1, 2001))
    assert 0.26 < fired / 2000 < 0.34


def test_jitter_is_whole_milliseconds_from_0_to_the_most_and_replays():
    drawn = [chance.jitter(50, 7, "s", DEFINITION, k) for k in range(1, 401)]
    assert drawn == [chance.jitter(50, 7, "s", DEFINITION, k) for k in range(1, 401)]
    assert min(drawn) == 0 and max(drawn) == 50  # both ends reachable in 400 draws of 51 values
    assert chance.jitter(0, 7, "s", DEFINITION, 1) == 0


@pytest.mark.parametrize(
    ("now", "window_s", "left"),
    [
        (datetime(2026, 11, 21, 10, 0, 18, tzinfo=UTC), 60, 42),
        (datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC), 60, 60),  # on the edge: a whole window ahead
        (datetime(2026, 11, 21, 10, 0, 59, 1, tzinfo=UTC), 60, 1),  # a microsecond past 59 s: rounded up to 1
        (datetime(2026, 11, 21, 10, 0, 18, 500000, tzinfo=UTC), 60, 42),  # 41.5 s left: 42
        (datetime(2026, 11, 21, 10, 30, tzinfo=UTC), 3600, 1800),
    ],
)
def test_a_quota_window_is_aligned_to_the_epoch_and_says_the_whole_seconds_left(now, window_s, left):
    index, seconds = chance.quota_window(now, window_s)
    assert seconds == left
    start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=index * window_s)
    assert start <= now < start + timedelta(seconds=window_s)


def test_an_instant_in_another_timezone_falls_in_the_same_window():
    brasilia = datetime(2026, 11, 21, 7, 0, 18, tzinfo=UTC).astimezone(timezone(timedelta(hours=-3)))
    assert chance.quota_window(brasilia, 60) == chance.quota_window(datetime(2026, 11, 21, 7, 0, 18, tzinfo=UTC), 60)
