"""`mock-server wait`'s polling loop (probe.wait) on a fake clock: it gives up at its timeout, bounds each attempt
by the time left, and stops as soon as the server process is gone. The clock and the health check are the test's,
so these are facts about the loop, not measurements (tests/e2e/test_ci_start.py runs the command for real and reads
which of these ended it from its message)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mock_server import probe
from mock_server.probe import Verdict

URL = "http://127.0.0.1:9"
START = 1000.0


class FakeClock:
    """`time` as probe.wait sees it: only sleeping (or an attempt that waits for an answer) moves it."""

    def __init__(self) -> None:
        self.now = START

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeHealth:
    """probe.check_health: each attempt is noted with the timeout it was given; refused, unanswered or healthy."""

    def __init__(self, clock: FakeClock, healthy_at: int | None = None, hangs: bool = False) -> None:
        self.clock = clock
        self.healthy_at = healthy_at  # the attempt (1-based) that finds the server healthy
        self.hangs = hangs  # a server that accepts and never answers: each attempt uses its whole timeout
        self.timeouts: list[float] = []

    def __call__(self, base_url: str, timeout: float, tls: object = None) -> Verdict:
        self.timeouts.append(timeout)
        if self.healthy_at is not None and len(self.timeouts) >= self.healthy_at:
            return Verdict(True, "ok")
        if self.hangs:
            self.clock.now += timeout
            return Verdict(False, "no answer within the timeout")
        return Verdict(False, "connection refused (nothing listens there)")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(probe, "time", SimpleNamespace(monotonic=fake.monotonic, sleep=fake.sleep))
    return fake


def test_it_gives_up_at_its_timeout(clock, monkeypatch):
    health = FakeHealth(clock)
    monkeypatch.setattr(probe, "check_health", health)
    verdict = probe.wait(URL, timeout=1.0, interval=0.1)
    assert verdict == Verdict(False, "not healthy within 1s: connection refused (nothing listens there)")
    assert 0.9 <= clock.now - START <= 1.0  # it polled until the deadline, never slept past it
    assert len(health.timeouts) == 10  # one attempt every 0.1 s: at 0.0, 0.1, ... 0.9


def test_each_attempt_is_bounded_by_the_time_left(clock, monkeypatch):
    health = FakeHealth(clock, hangs=True)
    monkeypatch.setattr(probe, "check_health", health)
    verdict = probe.wait(URL, timeout=5.0, interval=0.1, attempt_timeout=2.0)
    assert verdict == Verdict(False, "not healthy within 5s: no answer within the timeout")
    assert health.timeouts == pytest.approx([2.0, 2.0, 0.8])  # the last attempt gets only what is left
    assert clock.now - START == pytest.approx(5.0)


def test_it_stops_as_soon_as_the_server_process_is_gone(clock, monkeypatch):
    health = FakeHealth(clock)
    monkeypatch.setattr(probe, "check_health", health)
    checked: list[int] = []

    def gone(pid: int) -> bool:
        checked.append(pid)
        return len(checked) == 3  # the process exits between the second and the third attempt

    monkeypatch.setattr(probe, "_process_gone", gone)
    verdict = probe.wait(URL, timeout=50.0, interval=0.1, pid=4242)
    assert verdict == Verdict(
        False, "the server process 4242 exited before it was healthy (connection refused (nothing listens there))"
    )
    assert len(health.timeouts) == 3 and checked == [4242] * 3  # not one attempt more
    assert clock.now - START == pytest.approx(0.2)  # nowhere near the 50 s timeout


def test_it_answers_the_url_once_healthy(clock, monkeypatch):
    health = FakeHealth(clock, healthy_at=3)
    monkeypatch.setattr(probe, "check_health", health)
    assert probe.wait(URL + "/", timeout=10.0, interval=0.1) == Verdict(True, URL)
    assert len(health.timeouts) == 3
