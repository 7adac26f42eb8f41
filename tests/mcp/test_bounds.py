"""What an agent cannot do to the server over /__mock/mcp (issue 43), and the endpoint without the SDK (issue 42):
MCP sessions bounded, an id no request carries refused, MCP-owned sessions never written to the state file, ids
naming their replica, and a plain install's 501."""

from __future__ import annotations

import importlib.abc
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.http import fault_replies
from mock_server.mcp.names import INSTALL_LINE
from mock_server.settings import Settings
from tests.default_scenario import PENDING_EVENT
from tests.held_pauses import SAFETY, HeldPauses
from tests.mcp.agent import mcp_client
from tests.mcp.test_http import MCP_HEADERS, initialize
from tests.threaded_server import threaded_server


def opened(base: str) -> str:
    """A new MCP session's id (initialize, then initialized), left open and idle."""
    answer = httpx.post(f"{base}/__mock/mcp", json=initialize(), headers=MCP_HEADERS, timeout=10)
    assert answer.status_code == 200, answer.text
    session_id = answer.headers["mcp-session-id"]
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    headers = {**MCP_HEADERS, "Mcp-Session-Id": session_id}
    assert httpx.post(f"{base}/__mock/mcp", json=done, headers=headers, timeout=10).status_code == 202
    return session_id


def tool_call(base: str, session_id: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    headers = {**MCP_HEADERS, "Mcp-Session-Id": session_id}
    return httpx.post(f"{base}/__mock/mcp", json=message, headers=headers, timeout=30)


def mock_sessions(base: str) -> list[str]:
    return [s["name"] for s in httpx.get(f"{base}/__mock/sessions", timeout=10).json()["sessions"]]


@pytest.fixture
def bounded() -> Iterator[str]:
    with threaded_server(create_app(Settings(max_mcp_sessions=2))) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.e2e  # a real server (in a thread) and MCP sessions over HTTP: a new feature's slow test
def test_past_the_bound_the_least_recently_used_idle_session_closes_with_its_mock_session(bounded) -> None:
    from mock_server.mcp.streamable import own_session

    first, second = opened(bounded), opened(bounded)
    for session_id in (first, second):
        assert tool_call(bounded, session_id, "mockReset", {}).json()["result"]["structuredContent"]["status"] == 200
    tool_call(bounded, first, "mockReset", {})  # first used last: second is the least recently used
    assert {own_session(first), own_session(second)} <= set(mock_sessions(bounded))
    third = opened(bounded)
    assert tool_call(bounded, second, "mockReset", {}).status_code == 404  # closed
    assert own_session(second) not in mock_sessions(bounded)
    for session_id in (first, third):
        assert tool_call(bounded, session_id, "mockReset", {}).status_code == 200


@pytest.mark.e2e  # a real server (in a thread) and MCP sessions over HTTP: a new feature's slow test
def test_with_every_session_in_a_call_an_initialize_is_refused_503_naming_the_bound(monkeypatch) -> None:
    """The call is held in its fault's pause (tests/held_pauses.py) while the initialize comes: a pause of 1.5 s
    and a sleep of 0.5 s that hoped the call was in it by then took 2 s."""
    pauses = HeldPauses()
    monkeypatch.setattr(fault_replies, "sleep", pauses.sleep)
    with threaded_server(create_app(Settings(max_mcp_sessions=1))) as port:
        base = f"http://127.0.0.1:{port}"
        busy = opened(base)
        fault = {"operation_id": "getExtraordinaryEvent", "delay_ms": 1500}
        armed = tool_call(
            base, busy, "call_operation", {"operation_id": "mockCreateFault", "arguments": {"body": fault}}
        )
        assert armed.json()["result"]["structuredContent"]["status"] == 201
        lookup = {
            "operation_id": "getExtraordinaryEvent",
            "arguments": {"extraordinary_event_conciliation_key": PENDING_EVENT},
        }
        slow = threading.Thread(target=tool_call, args=(base, busy, "call_operation", lookup))
        slow.start()
        try:
            pauses.wait_for_pause()  # the lookup is in its delay: the one session is in a call
            refused = httpx.post(f"{base}/__mock/mcp", json=initialize(), headers=MCP_HEADERS, timeout=10)
        finally:
            pauses.end_pause()
            slow.join(SAFETY)
        assert pauses.asked == [1.5]
        assert opened(base)  # the call over, the idle session makes room
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert error["code"] == -32603 and "--max-mcp-sessions 1" in error["message"]
    assert error["data"] == {"max_mcp_sessions": 1}


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with threaded_server(create_app(Settings())) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.e2e  # a real server (in a thread) and MCP sessions over HTTP: a new feature's slow test
@pytest.mark.parametrize("bad_id", [{"an": "object"}, [1], True, 1.5])
def test_a_request_whose_id_is_no_string_or_integer_is_an_invalid_request(served, bad_id) -> None:
    session_id = opened(served)
    message = {"jsonrpc": "2.0", "id": bad_id, "method": "tools/list"}
    headers = {**MCP_HEADERS, "Mcp-Session-Id": session_id}
    answer = httpx.post(f"{served}/__mock/mcp", json=message, headers=headers, timeout=10)
    assert answer.status_code == 400  # not 202: the SDK took it for a notification and never answered
    assert answer.json()["error"]["code"] == -32600
    assert answer.json()["id"] is None


@pytest.mark.e2e  # a real server (in a thread) and MCP sessions over HTTP: a new feature's slow test
def test_mcp_owned_sessions_are_never_written_to_the_state_file(tmp_path: Path) -> None:
    from mock_server.mcp.streamable import own_session

    state = tmp_path / "state.jsonl"
    app = create_app(Settings(state_file=state))
    with threaded_server(app) as port:
        base = f"http://127.0.0.1:{port}"
        session_id = opened(base)
        tool_call(base, session_id, "mockReset", {})
        named = {"session": "kept-by-name", "body": {"now": "2026-11-21T10:00:00-03:00"}}
        tool_call(base, session_id, "call_operation", {"operation_id": "mockSetClock", "arguments": named})
        assert own_session(session_id) in mock_sessions(base)
        app.state.state_file.save()
    written = [s["name"] for s in json.loads(state.read_text())["sessions"]]
    assert "kept-by-name" in written  # a session a call names is the user's: kept
    assert own_session(session_id) not in written


@pytest.mark.e2e  # a real server (in a thread) and MCP sessions over HTTP: a new feature's slow test
def test_with_a_replica_name_every_session_id_names_it_and_another_is_no_session() -> None:
    app = create_app(Settings(mcp_replica="r1"))

    async def agent(base: str) -> Any:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            return (await client.call_tool("mockReset", {})).structured_content

    with threaded_server(app) as port:
        base = f"http://127.0.0.1:{port}"
        session_id = opened(base)
        assert session_id.startswith("r1.")
        assert tool_call(base, session_id, "mockReset", {}).status_code == 200
        assert tool_call(base, session_id.removeprefix("r1."), "mockReset", {}).status_code == 404
        assert tool_call(base, "r2." + session_id.removeprefix("r1."), "mockReset", {}).status_code == 404
        assert anyio.run(agent, base)["status"] == 200  # the official client takes the id as it is


class _RefuseMcp(importlib.abc.MetaPathFinder):
    """A plain install: the SDK (`mcp`, `mcp_types`) cannot be imported."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.split(".")[0] in ("mcp", "mcp_types"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@pytest.fixture
def without_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name.split(".")[0] in ("mcp", "mcp_types") or name in (
            "mock_server.mcp.streamable",
            "mock_server.mcp.server",
            "mock_server.mcp.stdio",
        ):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_RefuseMcp(), *sys.meta_path])


def test_without_the_extra_the_endpoint_answers_501_with_the_install_line(without_the_sdk) -> None:
    client = TestClient(create_app(Settings()))
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}  # no SDK here to name a version
    answer = client.post("/__mock/mcp", json=message, headers=MCP_HEADERS)
    assert answer.status_code == 501
    body = answer.json()
    assert body["code"] == "mcp_not_installed"
    assert "mcp extra" in body["message"] and INSTALL_LINE in body["message"]
    assert body["details"] == [{"field": "mcp", "message": f"is not installed: {INSTALL_LINE}"}]


def test_without_the_extra_mock_server_mcp_exits_2_with_the_install_line(without_the_sdk, capsys) -> None:
    from mock_server.cli import main

    assert main(["mcp"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"mock-server mcp: MCP needs the mcp extra (the official MCP SDK), which is not installed: {INSTALL_LINE}"
    ]
