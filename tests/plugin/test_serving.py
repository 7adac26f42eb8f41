"""The servers and sessions the pytest plugin is fixtures over, used without pytest's plugin (issue 41):
mock_server/serving.py (InProcessServer, SharedServer as a thread) and mock_server/session_supply.py, checked over
HTTP the way an integrator sees them; and docs/from-tests.md's recipe of them, run as written."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mock_server.client import MockServerError
from mock_server.domain.errors import ApiError, SessionAlreadyExists
from mock_server.serving import InProcessServer, SharedServer
from mock_server.session_supply import SessionSupply

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "from-tests.md"
HEADERS = {"X-Mock-Admin": "1"}


@pytest.fixture(scope="module")
def server() -> Iterator[InProcessServer]:
    with InProcessServer() as started:
        yield started


def names(url: str) -> list[str]:
    answer = httpx.get(f"{url}/__mock/sessions", timeout=10)
    assert answer.status_code == 200
    return [session["name"] for session in answer.json()["sessions"]]


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
def test_a_session_made_through_the_door_in_the_servers_loop_is_the_one_http_sees(server):
    made = server.with_sessions(lambda door: door.create("door-made", "payments", 5).name)
    assert made == "door-made"
    answer = httpx.get(f"{server.url}/__mock/sessions/door-made", timeout=10)
    assert (answer.status_code, answer.json()["scenario"], answer.json()["explicit"]) == (200, "payments", True)
    server.with_sessions(lambda door: door.delete("door-made"))
    assert httpx.get(f"{server.url}/__mock/sessions/door-made", timeout=10).status_code == 404


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
def test_the_doors_refusal_reaches_the_caller_as_the_one_error_type(server):
    server.with_sessions(lambda door: door.create("taken"))
    with pytest.raises(ApiError) as refused:
        server.with_sessions(lambda door: door.create("taken"))
    assert isinstance(refused.value, SessionAlreadyExists)
    over_http = httpx.post(f"{server.url}/__mock/sessions", json={"name": "taken"}, timeout=10)
    assert (over_http.status_code, over_http.json()["code"]) == (refused.value.status, refused.value.code)
    server.with_sessions(lambda door: door.delete("taken"))


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
def test_a_stopped_server_refuses_connections():
    with InProcessServer(admin_token="s3cret") as own:
        port = int(own.url.rsplit(":", 1)[1])
        assert httpx.get(f"{own.url}/__mock/sessions", timeout=10).status_code == 401  # its options: the token
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def test_tls_is_one_of_https_or_mutual():
    with pytest.raises(ValueError, match="give one of https, mutual"):
        InProcessServer(tls="tls1.3")


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
def test_a_shared_server_binds_at_once_and_serves_from_the_first_call():
    shared = SharedServer({}, child_process=False)
    try:
        assert shared.url.startswith("http://127.0.0.1:")
        assert not shared.started and shared.sessions_left() is None  # no call yet: nothing started
        assert httpx.post(f"{shared.url}/__mock/sessions", json={"name": "first"}, timeout=30).status_code == 201
        assert shared.started and shared.problem is None
        assert shared.sessions_left() == ["first"]
    finally:
        shared.stop()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(shared.url.rsplit(":", 1)[1])), 2):
        pass


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
def test_a_shared_server_that_answered_is_kept_though_its_start_has_not_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first call is answered while InProcessServer's constructor is still returning in the start thread (a
    busy machine's scheduling, made certain here): what the server holds is read from it all the same."""
    answered = threading.Event()
    constructor = InProcessServer.__init__

    def slow_to_return(self: InProcessServer, *args: Any, **kwargs: Any) -> None:
        constructor(self, *args, **kwargs)
        answered.wait(30)  # serving already; kept by the start thread only once the test has seen its answer

    monkeypatch.setattr(InProcessServer, "__init__", slow_to_return)
    shared = SharedServer({}, child_process=False)
    try:
        assert httpx.post(f"{shared.url}/__mock/sessions", json={"name": "early"}, timeout=30).status_code == 201
        assert shared.server is None  # answered, not kept yet
        answered.set()
        assert shared.sessions_left() == ["early"]
    finally:
        shared.stop()


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
@pytest.mark.parametrize("local", [True, False], ids=["in-process", "over-http"])
def test_a_supply_makes_a_session_a_test_and_the_next_one_as_it_deletes_the_last(server, local):
    supply = SessionSupply(server.url, scenario="payments", local=server if local else None)
    before = set(names(server.url))
    first = supply.open("payments")
    assert set(names(server.url)) - before == {first.name}
    assert first.state()["events"]  # the payments scenario's
    supply.finish(first)
    upcoming = set(names(server.url)) - before
    assert first.name not in upcoming and len(upcoming) == 1  # deleted, and the next test's made in its step
    second = supply.open("payments")
    assert {second.name} == upcoming
    supply.finish(second, keep=True)
    assert second.kept and second.name in names(server.url)
    supply.close()
    assert set(names(server.url)) - before == {second.name}  # only the kept one is left
    server.with_sessions(lambda door: door.delete(second.name))


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
@pytest.mark.parametrize("local", [True, False], ids=["in-process", "over-http"])
def test_a_session_the_server_refuses_is_its_own_answer(server, local):
    supply = SessionSupply(server.url, local=server if local else None)
    before = names(server.url)
    with pytest.raises(MockServerError) as refused:
        supply.open("nope")
    assert refused.value.status == 404
    assert refused.value.body["code"] == "scenario_not_found"
    assert str(refused.value).startswith(f"POST {server.url}/__mock/sessions answered 404 scenario_not_found: ")
    with pytest.raises(MockServerError) as negative:
        supply.open(None, -1)
    assert negative.value.status == 400
    assert "seed: must be at least 0 (got -1)" in str(negative.value)
    supply.close()
    assert names(server.url) == before


def recipe() -> str:
    text = RECIPES.read_text(encoding="utf-8")
    match = re.search(
        r"^#+ A server on a socket, without pytest[^\n]*\n.*?```python\n(?P<code>.*?)```", text, re.DOTALL | re.M
    )
    assert match, "docs/from-tests.md: the serving block is gone"
    return match["code"]


@pytest.mark.e2e  # a real server (in a thread): a new feature's slow test
def test_the_docs_serving_recipe_runs_as_written(capsys):
    namespace: dict[str, Any] = {}
    exec(compile(recipe(), "docs/from-tests.md", "exec"), namespace)
    assert capsys.readouterr().out == "200 3\n"  # what the page says it prints
    port = int(namespace["server"].url.rsplit(":", 1)[1])
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass  # the server stopped with the block
