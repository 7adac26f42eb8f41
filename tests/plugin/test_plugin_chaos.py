"""`pix_mock.fault(..., probability=, seed=, jitter_ms=)` and `pix_mock.quota(...)` (issue 45) on the plugin's
in-process server, and the retry test of docs/testing-retries.md run as written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mock_server.pytest_plugin import PixMock
from tests.default_scenario import PENDING_EVENT_PATH

PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing-retries.md"
LOOKUP = PENDING_EVENT_PATH


def page_example() -> tuple[str, str]:
    """The page's retry test (its ```python block) and the WAITS it shows (the ```text block after it)."""
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(r"```python\n(?P<test>[^`]*def test_lookups_[^`]*)```\n[^`]*```text\n(?P<waits>[^`]*)```", text)
    assert found, "docs/testing-retries.md: the retry test (```python, then the ```text of its WAITS) is gone"
    return found["test"], found["waits"]


def test_the_pages_retry_test_passes_as_written_and_its_waits_are_the_ones_shown(pix_mock: PixMock) -> None:
    test, waits = page_example()
    namespace: dict[str, Any] = {}
    exec(compile(waits, str(PAGE), "exec"), namespace)  # WAITS = [...]
    exec(compile(test, str(PAGE), "exec"), namespace)
    namespace["test_lookups_get_through_flaky_and_throttled_backends"](pix_mock)
    letters = {200: ".", 503: "x", 429: "q"}
    assert "".join(letters[e["status"]] for e in pix_mock.requests()) == "x....x.q.x....xxq.."  # as the page says
    assert "`x....x.q.x....xxq..`" in PAGE.read_text(encoding="utf-8")


def test_fault_takes_probability_seed_and_jitter(pix_mock: PixMock) -> None:
    fault = pix_mock.fault("getExtraordinaryEvent", delay_ms=5, probability=0.5, seed=11, jitter_ms=20, times=None)
    assert (fault["probability"], fault["seed"], fault["jitter_ms"]) == (0.5, 11, 20)
    assert all(pix_mock.client.get(LOOKUP).status_code == 200 for _ in range(10))  # only waits: the calls go on
    [listed] = pix_mock.faults()
    assert listed["matches"] == 10 and 0 < listed["firings"] < 10
    delays = [e["faults"][0].get("delay_ms") for e in pix_mock.requests()]
    assert all(5 <= delay <= 25 for delay in delays if delay is not None)
    assert len([delay for delay in delays if delay is not None]) == listed["firings"]


def test_quota_answers_429_with_retry_after_until_the_clock_reaches_the_next_window(pix_mock: PixMock) -> None:
    pix_mock.freeze("2026-11-21T10:00:50Z")
    quota = pix_mock.quota("getExtraordinaryEvent", limit=2, window_s=60)
    assert (quota["kind"], quota["limit"], quota["window_s"], quota["times"]) == ("quota", 2, 60, None)
    assert [pix_mock.client.get(LOOKUP).status_code for _ in range(3)] == [200, 200, 429]
    assert pix_mock.client.get(LOOKUP).headers["Retry-After"] == "10"
    pix_mock.advance(10)
    assert pix_mock.client.get(LOOKUP).status_code == 200
