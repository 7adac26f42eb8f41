"""When an MCP session ends, read from the manager's calls alone (mcp/streamable.Lifetimes): pure rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from mock_server.mcp.streamable import Lifetimes


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def opened(idle: float = 10.0) -> tuple[Lifetimes, list[str], Clock]:
    from mock_server.mcp.streamable import Lifetimes  # with the MCP SDK: imported by the worker that runs this

    ended: list[str] = []
    clock = Clock()
    lifetimes = Lifetimes(ended.append, idle, clock)
    lifetimes.began(None)
    lifetimes.answered("POST", None, 200, "abc")  # the opening request, accepted
    return lifetimes, ended, clock


def test_an_accepted_opening_request_opens_a_session_and_a_refused_one_does_not() -> None:
    lifetimes, ended, _ = opened()
    lifetimes.answered("POST", None, 503, "refused")  # too many sessions
    lifetimes.answered("POST", None, 200, None)  # no id answered
    assert lifetimes.open == ["abc"] and ended == []


@pytest.mark.parametrize(("method", "status"), [("DELETE", 200), ("DELETE", 204), ("POST", 404), ("GET", 404)])
def test_an_accepted_delete_or_a_404_ends_the_session_once(method: str, status: int) -> None:
    lifetimes, ended, _ = opened()
    lifetimes.began("abc")
    lifetimes.answered(method, "abc", status, None)
    lifetimes.answered(method, "abc", status, None)  # again: already ended
    assert ended == ["abc"] and lifetimes.open == []


def test_a_refused_delete_or_another_error_keeps_the_session() -> None:
    lifetimes, ended, _ = opened()
    for method, status in (("DELETE", 400), ("POST", 400), ("POST", None)):  # None: no answer started
        lifetimes.began("abc")
        lifetimes.answered(method, "abc", status, None)
    assert ended == [] and lifetimes.open == ["abc"]


def test_a_session_is_idle_from_its_last_calls_end_and_never_while_a_call_is_in_flight() -> None:
    lifetimes, _, clock = opened(idle=10.0)
    clock.now += 9.9
    assert lifetimes.idle() == []
    lifetimes.began("abc")
    clock.now += 60  # a long call
    assert lifetimes.idle() == []
    lifetimes.answered("POST", "abc", 200, None)
    clock.now += 9.9
    assert lifetimes.idle() == []
    clock.now += 0.1
    assert lifetimes.idle() == ["abc"]


def test_ids_it_never_opened_are_not_tracked() -> None:
    lifetimes, ended, _ = opened()
    lifetimes.began("other")
    lifetimes.answered("DELETE", "other", 200, None)
    assert ended == [] and lifetimes.open == ["abc"]


def test_the_session_closed_for_room_is_the_least_recently_used_with_no_call_in_flight() -> None:
    lifetimes, _, clock = opened()
    clock.now += 1
    lifetimes.answered("POST", None, 200, "def")
    clock.now += 1
    lifetimes.answered("POST", None, 200, "ghi")
    assert lifetimes.least_recently_used_idle() == "abc"
    lifetimes.began("abc")  # in a call: not idle
    assert lifetimes.least_recently_used_idle() == "def"
    lifetimes.began("def")
    lifetimes.began("ghi")
    assert lifetimes.least_recently_used_idle() is None
