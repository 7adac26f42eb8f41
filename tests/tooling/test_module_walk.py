"""How many modules of the package one request passes through (bench/module_walk.py), held: on a real server
(mock_server/server.py, its HTTP protocol, uvicorn's loop) in a thread of this process, no child process."""

from __future__ import annotations

import pytest

from bench.module_walk import walk

# What a warm request enters today (bench/module_walk.py prints the list): a request may not grow its road. Issue
# 41 asks for fewer (bench/module_walk.ISSUE_LIMITS: 12 and 16); lower these as the road gets shorter.
HELD = {"lookup": 18, "limit": 23}


@pytest.fixture(scope="module")
def walks() -> dict[str, object]:
    return walk(tries=3, warm=5)  # type: ignore[return-value]


@pytest.mark.parametrize("request_kind", sorted(HELD))
def test_a_request_enters_no_more_modules_than_it_did(walks, request_kind: str) -> None:
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
