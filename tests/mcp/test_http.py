"""MCP over Streamable HTTP at /__mock/mcp, driven by the official `mcp` client against a real socket (uvicorn in a
thread, with mock-server's own protocol): the tools, the sessions, the journey, the admin plane's rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.mcp.catalog import compact
from mock_server.mcp.tools import tools_of
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT
from tests.mcp.agent import documented, journey, journey_settings, mcp_client, render
from tests.threaded_server import threaded_server

TOKEN = "s3cret-token"


def handshake_versions() -> tuple[str, ...]:
    """The SDK's protocol revisions that open a session (imported here, not at collection: tests/mcp/agent.py)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    return tuple(HANDSHAKE_PROTOCOL_VERSIONS)


INITIALIZE = "initialize"  # a parameter for initialize()'s body, made when the test runs


def initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": handshake_versions()[-1],
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Any]]:
    """A server whose sessions start with a frozen clock (the journey's): its base URL and its app."""
    app = create_app(journey_settings())
    with threaded_server(app) as port:
        yield f"http://127.0.0.1:{port}", app


def run(coroutine: Any, *args: Any) -> Any:
    return anyio.run(coroutine, *args)


def mcp_sessions(base: str) -> list[str]:
    sessions = httpx.get(f"{base}/__mock/sessions", timeout=10).json()["sessions"]
    return [s["name"] for s in sessions if s["name"].startswith("mcp-")]


def test_the_official_client_lists_the_default_list_within_budget_and_all_with_the_specs_schemas(
    server, specs: Specs
) -> None:
    base, _ = server
    expected = tools_of(specs)

    async def listed(url: str) -> tuple[str | None, list[Any]]:
        async with mcp_client(url) as client:
            return client.session.protocol_version, (await client.list_tools()).tools

    version, default = run(listed, f"{base}/__mock/mcp")
    assert version in handshake_versions()  # the session-based revision: the client fell back to it
    assert len(default) <= 12
    assert len(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in default])) <= 16_000
    _, every = run(listed, f"{base}/__mock/mcp?tools=all")
    by_name = {tool.name: tool for tool in every}
    admin = {op.operation_id for op in specs.admin.operations.values()} - {"mockMcpMessage", "mockMcpEnd"}
    public = {op.operation_id for op in specs.public.operations.values()}
    assert set(by_name) == public | admin - {"mockDashboard", "mockDocs", "mockAsset", "mockAdminSpec"} - {
        "publicSpecYaml",
        "publicSpecJson",
    }
    for name, tool in by_name.items():
        assert tool.input_schema == json.loads(json.dumps(compact(expected[name].input_schema))), name
        assert tool.description == expected[name].description


def test_a_tool_list_the_server_has_not_is_refused_in_the_contracts_body(server) -> None:
    base, _ = server
    answer = httpx.post(f"{base}/__mock/mcp?tools=everything", json=initialize(), headers=MCP_HEADERS, timeout=10)
    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid_request"
    assert answer.json()["details"] == [{"field": "tools", "message": "must be one of default, api, all, once"}]


def test_a_request_of_the_stateless_revision_is_refused_naming_the_session_based_ones(server) -> None:
    base, _ = server
    probe = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}
    answer = httpx.post(
        f"{base}/__mock/mcp", json=probe, headers={**MCP_HEADERS, "MCP-Protocol-Version": "2026-07-28"}, timeout=10
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["supported"] == list(handshake_versions())


def test_a_scripted_agent_registers_raises_advances_and_reads_and_the_journal_shows_it(server) -> None:
    base, _ = server

    async def agent() -> tuple[list[Any], list[str], dict[str, Any]]:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            steps = await journey(client)
            [mine] = mcp_sessions(base)  # seen by any admin client while the agent works
            journal = httpx.get(f"{base}/__mock/requests", headers={"X-Mock-Session": mine}, timeout=10).json()
            return steps, [mine], journal

    steps, [session], journal = run(agent)
    assert len(steps) <= 8  # issue 42: register, propose, pay, read back, from the default list
    assert [(s.tool, s.status) for s in steps][1:6] == [
        ("registerAccountLimit", 201),
        ("createLimitUpdateRequest", 201),
        ("mockAdvanceClock", 200),
        ("mockPayEvent", 200),
        ("mockGetAccount", 200),
    ]
    assert steps[4].body["status"] == "paid"
    account = steps[5].body
    assert account["limit"]["pix"]["transaction_natural_person"][0]["amount"] == 800000
    assert [(r["operation_id"], r["status"]) for r in journal["requests"]] == [
        ("registerAccountLimit", 201),
        ("createLimitUpdateRequest", 201),
    ]
    assert journal["requests"][0]["request_headers"]["x-mock-session"] == session
    assert render(steps) == documented()  # docs/mcp.md shows this very run
    assert session not in mcp_sessions(base)  # ended with the MCP session


def test_the_calls_count_in_the_servers_coverage(server) -> None:
    base, _ = server

    async def agent() -> None:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            lookup = {
                "operation_id": "getExtraordinaryEvent",
                "arguments": {"extraordinary_event_conciliation_key": "x"},
            }
            await client.call_tool("call_operation", lookup)

    httpx.delete(f"{base}/__mock/coverage", headers={"X-Mock-Admin": "1"}, timeout=10)
    run(agent)
    coverage = httpx.get(f"{base}/__mock/coverage", timeout=10).json()
    [lookup] = [op for op in coverage["operations"] if op["operation_id"] == "getExtraordinaryEvent"]
    assert lookup["answered"]["400"] == 1


def test_a_contract_error_is_a_result_not_a_protocol_failure(server) -> None:
    base, _ = server

    async def agent() -> Any:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            return await client.call_tool("mockGetAccount", {"account_id": "9999-999999"})

    result = run(agent)
    assert result.is_error
    assert result.structured_content["status"] == 404
    assert result.structured_content["body"]["code"] == "account_not_found"
    assert json.loads(result.content[0].text) == result.structured_content


def test_a_call_naming_a_session_works_there_and_that_session_outlives_the_mcp_session(server) -> None:
    base, _ = server

    async def agent() -> None:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            clock = {"session": "shared-by-name", "body": {"now": "2026-11-21T10:00:00-03:00"}}
            answer = await client.call_tool("call_operation", {"operation_id": "mockSetClock", "arguments": clock})
            assert answer.structured_content["status"] == 200

    run(agent)
    names = [s["name"] for s in httpx.get(f"{base}/__mock/sessions", timeout=10).json()["sessions"]]
    assert "shared-by-name" in names


def test_sixteen_agents_at_once_each_register_the_same_account_and_see_only_their_own(server) -> None:
    base, _ = server
    agents = 16
    seen: dict[int, tuple[int, int, int]] = {}

    async def agent(index: int) -> None:
        amount = 100000 + index
        window = [{"start_time": "06:00:00-03:00", "amount": amount}]
        registration = {
            "account_id": "0003-000016",
            "registration_date": "2026-11-20T09:00:00-03:00",
            "limit": {"pix": {"withdraw": window}},
        }
        async with mcp_client(f"{base}/__mock/mcp") as client:
            created = await client.call_tool("registerAccountLimit", {"body": registration})
            read = await client.call_tool("mockGetAccount", {"account_id": "0003-000016"})
        body = read.structured_content["body"]
        seen[index] = (
            created.structured_content["status"],
            body["limit"]["pix"]["withdraw"][0]["amount"],
            len(body["limit"]["pix"]["withdraw"]),
        )

    async def all_at_once() -> None:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for index in range(agents):
                    group.start_soon(agent, index)

    run(all_at_once)
    assert seen == {index: (201, 100000 + index, 1) for index in range(agents)}


def test_a_get_opens_no_stream(server) -> None:
    base, _ = server
    answer = httpx.get(f"{base}/__mock/mcp", headers={"Accept": "text/event-stream"}, timeout=10)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "DELETE, POST"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"},
        {"Origin": "http://evil.example"},  # a browser that sends no Sec-Fetch-*
        {"Sec-Fetch-Site": "same-site", "Content-Type": "text/plain"},  # another port of this host, no-cors
    ],
)
def test_a_page_on_another_origin_cannot_call_it(server, headers) -> None:
    base, _ = server
    answer = httpx.post(f"{base}/__mock/mcp", content=json.dumps(initialize()), headers={**MCP_HEADERS, **headers})
    assert answer.status_code == 403
    assert answer.json()["code"] == "cross_origin_request"


@pytest.mark.own_protocol  # the Host rule is the protocol's
def test_the_host_rule_is_the_servers_and_allowed_hosts_is_the_one_list_of_names() -> None:
    with threaded_server(create_app(Settings()), allowed_hosts=["mock.example"]) as port:
        url = f"http://127.0.0.1:{port}/__mock/mcp"
        refused = httpx.post(url, json=initialize(), headers={**MCP_HEADERS, "Host": "rebound.example"}, timeout=10)
        answered = httpx.post(url, json=initialize(), headers={**MCP_HEADERS, "Host": "mock.example"}, timeout=10)
    assert refused.status_code == 403
    assert refused.json()["code"] == "host_not_allowed"
    assert answered.status_code == 200  # the SDK does not refuse a name --allowed-hosts lists
    assert answered.json()["result"]["serverInfo"]["name"] == "mock-server"


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        ("[" * 300 + "]" * 300, "application/json", 400, "malformed_json"),
        ("{not json", "application/json", 400, "malformed_json"),
        (INITIALIZE, "text/plain", 415, "unsupported_media_type"),
    ],
)
def test_a_body_that_is_no_acceptable_json_is_refused_in_the_contracts_body(
    server, content, content_type, status, code
) -> None:
    base, _ = server
    if content == INITIALIZE:
        content = json.dumps(initialize())
    answer = httpx.post(
        f"{base}/__mock/mcp", content=content, headers={**MCP_HEADERS, "Content-Type": content_type}, timeout=10
    )
    assert answer.status_code == status
    assert answer.json()["code"] == code


@pytest.fixture(scope="module")
def guarded() -> Iterator[str]:
    with threaded_server(create_app(Settings(admin_token=TOKEN))) as port:
        yield f"http://127.0.0.1:{port}"


def test_with_an_admin_token_a_client_without_it_is_refused(guarded) -> None:
    from mcp.shared.exceptions import MCPError

    answer = httpx.post(f"{guarded}/__mock/mcp", json=initialize(), headers=MCP_HEADERS, timeout=10)
    assert answer.status_code == 401
    assert answer.json()["code"] == "unauthorized"

    async def without() -> None:
        async with mcp_client(f"{guarded}/__mock/mcp"):
            pass

    with pytest.raises(BaseExceptionGroup) as refused:
        run(without)
    assert refused.value.subgroup(MCPError) is not None


def test_with_an_admin_token_a_client_with_it_works(guarded) -> None:
    from mcp.client.streamable_http import streamable_http_client

    async def with_token() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
            mcp_client(streamable_http_client(f"{guarded}/__mock/mcp", http_client=http)) as client,
        ):
            return await client.call_tool("call_operation", {"operation_id": "mockGetClock"})

    assert run(with_token).structured_content["status"] == 200


def test_the_mcp_sessions_own_session_is_named_after_a_digest_of_its_id() -> None:
    from mock_server.mcp.streamable import own_session

    name = own_session("0123456789abcdef0123456789abcdef")
    assert name.startswith("mcp-") and len(name) == 20 and "0123456789abcdef" not in name


@pytest.mark.e2e  # a fresh interpreter in a child process that starts the app and the CLI
def test_the_server_starts_without_importing_the_sdk() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from mock_server.app import create_app; import mock_server.cli; create_app(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_a_call_an_armed_reset_drops_has_no_status(server) -> None:
    base, _ = server

    async def agent() -> Any:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            fault = {"operation_id": "getExtraordinaryEvent", "kind": "reset"}
            armed = await client.call_tool(
                "call_operation", {"operation_id": "mockCreateFault", "arguments": {"body": fault}}
            )
            assert armed.structured_content["status"] == 201, armed.structured_content
            lookup = {"extraordinary_event_conciliation_key": PENDING_EVENT}
            return await client.call_tool(
                "call_operation", {"operation_id": "getExtraordinaryEvent", "arguments": lookup}
            )

    result = run(agent)
    assert result.structured_content == {"status": None, "body": None}
    assert result.is_error


def test_without_the_admin_plane_there_is_no_mcp_endpoint() -> None:
    client = TestClient(create_app(Settings(admin=False)))
    answer = client.post("/__mock/mcp", json=initialize(), headers=MCP_HEADERS)
    assert answer.status_code == 404
    assert answer.json()["code"] == "not_found"


def test_a_client_pointed_at_a_session_url_works_in_that_session(server) -> None:
    base, _ = server

    async def agent() -> Any:
        async with mcp_client(f"{base}/__session/agent-by-url/__mock/mcp") as client:
            return await client.call_tool("mockReset", {})

    assert run(agent).structured_content["status"] == 200
    session = httpx.get(f"{base}/__mock/sessions/agent-by-url", timeout=10)
    assert session.status_code == 200 and session.json()["explicit"] is True  # a reset made it, and it stays


def test_an_mcp_session_left_idle_ends_and_its_mock_session_with_it(monkeypatch) -> None:
    import mock_server.mcp.streamable as streamable

    # Read when the first call starts the manager; the session is idle only between calls (none is in flight), and
    # its two calls follow each other at once: 1 s ends it while the test waits ~1.3 s (3 s made it wait ~4 s).
    monkeypatch.setattr(streamable, "SESSION_IDLE_SECONDS", 1.0)
    app = create_app(Settings())

    async def idle_agent(base: str) -> tuple[list[str], list[str]]:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            await client.call_tool("mockReset", {})
            listed = await client.call_tool("call_operation", {"operation_id": "mockListSessions"})  # in flight
            working = [s["name"] for s in listed.structured_content["body"]["sessions"] if s["name"].startswith("mcp-")]
            for _ in range(600):  # the manager's idle scope fires 1 s after the last request
                await anyio.sleep(0.1)
                if not mcp_sessions(base):
                    break
            return working, mcp_sessions(base)

    with threaded_server(app) as port:
        working, after = run(idle_agent, f"http://127.0.0.1:{port}")
    assert len(working) == 1
    assert after == []


def test_what_an_agent_did_is_verified_and_exported_as_any_clients_calls(server) -> None:
    base, _ = server
    registration = {
        "account_id": "0004-000001",
        "registration_date": "2026-11-20T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1000}]}},
    }

    async def agent() -> tuple[Any, Any]:
        async with mcp_client(f"{base}/__mock/mcp") as client:
            await client.call_tool("registerAccountLimit", {"body": registration})
            verify = {"body": {"operation_id": "registerAccountLimit", "status": 201, "times": 1}}
            verified = await client.call_tool("call_operation", {"operation_id": "mockVerify", "arguments": verify})
            export = {"consumer": "agent", "provider": "pix-limits"}
            pact = await client.call_tool("call_operation", {"operation_id": "mockGetPact", "arguments": export})
            return verified.structured_content, pact.structured_content

    verified, pact = run(agent)
    assert verified["status"] == 200, verified
    assert pact["status"] == 200
    [interaction] = pact["body"]["interactions"]
    assert interaction["request"]["path"] == "/limits/account"
    assert interaction["response"]["status"] == 201
