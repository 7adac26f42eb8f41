"""`mock-server mcp`: MCP over stdio, driven by the official client, which starts it as an agent does."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from mock_server.domain.operations import OPERATIONS
from mock_server.mcp.catalog import compact
from mock_server.mcp.tools import tools_of
from mock_server.spec.openapi import Specs
from tests.mcp.agent import START, journey, mcp_client

if TYPE_CHECKING:
    from mcp import StdioServerParameters

pytestmark = pytest.mark.e2e
COMMAND = [sys.executable, "-m", "mock_server", "mcp"]
# What a client sends first on stdio: initialize (id 1), then initialized.
OPENING = (
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
)


def stdio(*args: str) -> StdioServerParameters:
    from mcp import StdioServerParameters  # not at collection: every worker of the default tier collects this module

    return StdioServerParameters(command=COMMAND[0], args=[*COMMAND[1:], *args])


def test_the_official_client_lists_the_default_list_within_budget_and_all_with_tools_all(specs: Specs) -> None:
    expected = tools_of(specs)

    async def listed(*args: str) -> list[Any]:
        with anyio.fail_after(120):
            async with mcp_client(stdio(*args)) as client:
                return (await client.list_tools()).tools

    default = anyio.run(listed)
    assert len(default) <= 12
    assert len(json.dumps([t.model_dump(by_alias=True, exclude_none=True) for t in default])) <= 16_000
    tools = {tool.name: tool for tool in anyio.run(listed, "--tools", "all")}
    public = {op.operation_id for op in specs.public.operations.values()}
    assert public == set(OPERATIONS) and public <= set(tools)
    assert not {"mockDashboard", "mockDocs", "mockAsset", "mockAdminSpec", "publicSpecYaml"} & set(tools)
    for name, tool in tools.items():
        assert tool.input_schema == json.loads(json.dumps(compact(expected[name].input_schema))), name


def test_the_journey_over_stdio_with_the_token_the_server_was_given() -> None:
    async def agent() -> list[Any]:
        with anyio.fail_after(120):
            async with mcp_client(stdio("--clock", START.isoformat(), "--admin-token", "t0ken")) as client:
                return await journey(client)

    steps = anyio.run(agent)
    assert len(steps) <= 8
    assert [s.status for s in steps] == [200, 201, 201, 200, 200, 200, 200]
    journal = steps[-1].body["requests"]
    assert [(r["operation_id"], r["status"]) for r in journal] == [
        ("registerAccountLimit", 201),
        ("createLimitUpdateRequest", 201),
    ]
    assert journal[0]["request_headers"]["x-mock-session"].startswith("mcp-")


def test_stdout_carries_protocol_messages_only() -> None:
    messages = [
        *OPENING,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "call_operation", "arguments": {"operation_id": "mockHealth"}},
        },
    ]
    # stdin stays open until the last answer is read, as an agent's does: a server that reads EOF may end before
    # it answers what is in flight, which is no protocol of stdio's.
    process = subprocess.Popen(
        [*COMMAND, "--log-level", "debug"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        lines = [process.stdout.readline(), process.stdout.readline()]
        rest, stderr = process.communicate(timeout=120)  # closes stdin: the end of the agent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    lines += rest.splitlines()
    answers = [json.loads(line) for line in lines if line]  # every line a JSON-RPC message, nothing else
    assert [a.get("id") for a in answers] == [1, 2]
    assert answers[1]["result"]["structuredContent"]["status"] == 200
    assert "mock-server ready on stdio" in stderr


def test_a_line_too_long_no_json_or_an_object_id_is_answered_with_an_error_and_the_session_goes_on() -> None:
    messages = [
        *map(json.dumps, OPENING),
        "x" * (1024 * 1024 + 10),
        "{not json",
        json.dumps({"jsonrpc": "2.0", "id": {"an": "object"}, "method": "ping"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    ]
    process = subprocess.Popen(
        COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write("".join(m + "\n" for m in messages))
        process.stdin.flush()
        answers = [json.loads(process.stdout.readline()) for _ in range(5)]
        process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert answers[0]["id"] == 1
    assert [(a["id"], a["error"]["code"]) for a in answers[1:4]] == [(None, -32700), (None, -32700), (None, -32600)]
    assert "longer than 1048576 bytes" in answers[1]["error"]["message"]
    assert answers[4] == {"jsonrpc": "2.0", "id": 2, "result": {}}
