"""How many modules of the package one request passes through (bench/module_walk.py), held: on a real server
(mock_server/server.py, its HTTP protocol, uvicorn's loop) in a thread of this process, no child process."""

from __future__ import annotations

import pytest

from bench.module_walk import ISSUE_LIMITS, walk

# Issue 41's limits (bench/module_walk.ISSUE_LIMITS: a lookup 12, a limit change 16), reached and held: a request
# may not grow its road past them (bench/module_walk.py prints the list).
HELD = ISSUE_LIMITS


@pytest.fixture(scope="module")
def walks() -> dict[str, object]:
    return walk(tries=3, warm=5)  # type: ignore[return-value]


@pytest.mark.parametrize("request_kind", sorted(HELD))
def test_a_request_enters_no_more_modules_than_issue_41_allows(walks, request_kind: str) -> None:
    found = walks[request_kind]
    assert len(found.modules) <= HELD[request_kind], found.modules


@pytest.mark.parametrize("request_kind", sorted(HELD))
def test_a_request_goes_through_one_turn_and_never_back_into_the_server(walks, request_kind: str) -> None:
    found = walks[request_kind]
    assert not found.server_after_app
    assert "mock_server/server.py" not in found.modules
    # The session is entered through the turn's two doors: the pipeline, the registry's begin, the turn's finish.
    assert {"mock_server/http/pipeline.py", "mock_server/state/sessions.py", "mock_server/state/turn.py"} <= set(
        found.modules
    )


def test_the_walk_sees_what_a_request_enters(walks) -> None:
    """The walk can fail: a limit change reads and decodes a body, a lookup does not."""
    assert "mock_server/http/request_body.py" in walks["limit"].modules
    assert "mock_server/http/request_body.py" not in walks["lookup"].modules
