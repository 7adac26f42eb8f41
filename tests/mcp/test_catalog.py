"""The tool lists (mcp/catalog.py): the default list within the budget, the presets, the three tools that reach
every operation, the compact schemas; the lists measured as the official client dumps them, over the server
`mock-server mcp` builds, connected in process (no socket, no child process)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator

from mock_server.app import create_app
from mock_server.mcp.catalog import DESCRIBE, DIRECT, NOT_TOOLS, SEARCH, compact, preset
from mock_server.mcp.names import PRESETS
from mock_server.mcp.tools import MCP_PATH, tools_of
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT
from tests.mcp.agent import mcp_client

MAX_TOOLS, MAX_BYTES = 12, 16_000  # issue 42's budget of the default list
EVENT_KEY = "extraordinary_event_conciliation_key"


def in_process(preset_name: str = "default") -> Any:
    """The SDK's server of `mock-server mcp --tools preset_name` over a fresh app, for the client to connect to."""
    from mock_server.mcp.inprocess import Caller
    from mock_server.mcp.server import CallerContext, Toolbox, build_server

    app = create_app(Settings())
    calling = CallerContext("mcp-test", Caller(), preset_name)
    return build_server(Toolbox.of(app, app.state.specs, lambda ctx: calling))


def listed(preset_name: str) -> list[Any]:
    async def main() -> list[Any]:
        async with mcp_client(in_process(preset_name)) as client:
            return (await client.list_tools()).tools

    return anyio.run(main)


def dumped_bytes(tools: list[Any]) -> int:
    """The list's size as issue 42 counts it: the official client's dump of each tool."""
    return len(json.dumps([tool.model_dump(by_alias=True, exclude_none=True) for tool in tools]).encode("utf-8"))


def operation_ids(specs: Specs) -> set[str]:
    return {op.operation_id for spec in (specs.public, specs.admin) for op in spec.operations.values()} - {
        op.operation_id for op in specs.admin.operations.values() if op.path == MCP_PATH
    }


def test_the_default_list_holds_the_budget_as_the_official_client_counts_it() -> None:
    tools = listed("default")
    assert len(tools) <= MAX_TOOLS
    assert dumped_bytes(tools) <= MAX_BYTES
    names = [tool.name for tool in tools]
    assert names[:3] == ["search_operations", "describe_operation", "call_operation"]
    assert names[3:] == list(DIRECT)


def test_all_lists_one_tool_per_operation_and_none_answers_a_page_an_asset_or_a_spec(specs: Specs) -> None:
    names = {tool.name for tool in listed("all")}
    pages = {"mockDashboard", "mockDocs", "mockAsset", "mockAdminSpec", "publicSpecYaml", "publicSpecJson"}
    assert names == operation_ids(specs) - pages
    api = {tool.name for tool in listed("api")}
    assert api == {op.operation_id for op in specs.public.operations.values()}


def test_no_preset_lists_an_operation_tagged_as_a_page_or_a_spec(specs: Specs) -> None:
    tools = tools_of(specs)
    public = frozenset(op.operation_id for op in specs.public.operations.values())
    for name in PRESETS:
        for tool in preset(name, tools, public):
            assert tool.operation is None or not NOT_TOOLS & set(tool.operation.tags), (name, tool.name)
    with pytest.raises(ValueError, match="default, api, all"):
        preset("everything", tools, public)


def test_every_argument_of_every_tool_has_a_description_and_the_event_key_one_name(specs: Specs) -> None:
    for tool in [*listed("all"), *listed("default")]:
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), (tool.name, name)
            assert name != "key", tool.name
    keyed = {t.name for t in listed("all") if EVENT_KEY in t.input_schema["properties"]}
    assert {"getExtraordinaryEvent", "mockPayEvent", "mockCancelEvent", "mockScheduleTransition"} <= keyed


def test_a_compact_schema_accepts_and_refuses_what_the_specs_schema_does(specs: Specs) -> None:
    tools = tools_of(specs)
    window = {"start_time": "06:00:00-03:00", "amount": 1000}
    registration = {
        "account_id": "0001-000001",
        "registration_date": "2026-11-20T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [window], "change": [window, window]}},
    }
    cases = [
        {"body": registration},
        {"body": {**registration, "limit": {"pix": {"withdraw": [{**window, "amount": -1}]}}}},
        {"body": {**registration, "limit": {"pix": {"change": [window, window, window]}}}},
        {"body": {**registration, "extra": 1}},
        {},
    ]
    full = tools["registerAccountLimit"].input_schema
    small = compact(full)
    assert "$defs" in small and len(json.dumps(small)) < len(json.dumps(full)) / 1.5
    Draft202012Validator.check_schema(small)
    for case in cases:
        assert Draft202012Validator(small).is_valid(case) == Draft202012Validator(full).is_valid(case), case
    for tool in tools.values():  # every schema, compacted, still a schema
        Draft202012Validator.check_schema(compact(tool.input_schema))


def test_search_describe_and_call_reach_every_operation_from_the_default_list(specs: Specs) -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with mcp_client(in_process()) as client:
            found = await client.call_tool(SEARCH, {"query": ""})
            schemas = {}
            for operation_id in sorted(operation_ids(specs)):
                described = await client.call_tool(DESCRIBE, {"operation_id": operation_id})
                schemas[operation_id] = described.structured_content["body"]["input_schema"]
            paid = await client.call_tool(
                "call_operation",
                {"operation_id": "mockPayEvent", "arguments": {EVENT_KEY: PENDING_EVENT, "body": {"amount": 100}}},
            )
            return found.structured_content, schemas, paid.structured_content

    found, schemas, paid = anyio.run(main)
    assert found["status"] == 200
    assert {op["operation_id"] for op in found["body"]["operations"]} == operation_ids(specs)
    expected = tools_of(specs)
    assert schemas == {name: json.loads(json.dumps(expected[name].input_schema)) for name in schemas}
    assert paid["status"] == 200 and paid["body"]["total_paid_amount"] == 100


def test_every_operation_is_callable_through_call_operation(specs: Specs) -> None:
    """Each operation id answers through call_operation: an HTTP status from the app, never a protocol error."""

    async def main() -> dict[str, Any]:
        statuses = {}
        async with mcp_client(in_process()) as client:
            for operation_id in sorted(operation_ids(specs)):
                result = await client.call_tool("call_operation", {"operation_id": operation_id, "arguments": {}})
                statuses[operation_id] = result.structured_content["status"]
        return statuses

    statuses = anyio.run(main)
    assert set(statuses) == operation_ids(specs)
    assert all(isinstance(status, int) and status < 500 for status in statuses.values()), statuses
    assert statuses["mockHealth"] == 200 and statuses["mockAdminSpec"] == 200


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        (SEARCH, {}, "query"),
        (SEARCH, {"query": "x" * 201}, "query"),
        (DESCRIBE, {"operation_id": "nope"}, "operation_id"),
        (DESCRIBE, {"operation_id": "mockHealth", "extra": 1}, "extra"),
        ("call_operation", {"operation_id": "mockHealth", "arguments": []}, "arguments"),
        ("call_operation", {"operation_id": "mockGetAccount", "arguments": {}}, "account_id"),
    ],
)
def test_arguments_no_request_can_carry_are_a_400_in_the_contracts_body(tool, arguments, field) -> None:
    async def main() -> Any:
        async with mcp_client(in_process()) as client:
            return (await client.call_tool(tool, arguments)).structured_content

    answer = anyio.run(main)
    assert answer["status"] == 400
    assert answer["body"]["code"] == "invalid_request"
    assert field in [d["field"] for d in answer["body"]["details"]]


def test_a_tool_the_preset_does_not_list_is_unknown() -> None:
    from mcp.shared.exceptions import MCPError

    async def main() -> Any:
        async with mcp_client(in_process()) as client:
            return await client.call_tool("mockCreateFault", {"body": {}})

    with pytest.raises(BaseExceptionGroup) as raised:  # in process, the server's error reaches the client as it is
        anyio.run(main)
    refused = raised.value.subgroup(lambda e: isinstance(e, MCPError) and "Unknown tool: 'mockCreateFault'" in str(e))
    assert refused is not None


def test_resources_are_the_specs_the_scenarios_and_the_sessions_journal_and_state_read_live() -> None:
    async def main() -> tuple[list[str], dict[str, str]]:
        async with mcp_client(in_process()) as client:
            lookup = {"operation_id": "getExtraordinaryEvent", "arguments": {EVENT_KEY: PENDING_EVENT}}
            await client.call_tool("call_operation", lookup)
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            read = {uri: (await client.read_resource(uri)).contents[0].text for uri in uris}  # type: ignore[union-attr]
            return uris, read

    uris, read = anyio.run(main)
    assert len(uris) >= 4
    assert read["mock-server:///openapi.yaml"].startswith("openapi: 3.1.0")
    assert "/__mock/mcp:" in read["mock-server:///__mock/openapi.yaml"]
    assert "default" in [s["name"] for s in json.loads(read["mock-server:///__mock/scenarios"])["scenarios"]]
    journal = json.loads(read["mock-server:///__mock/requests"])["requests"]
    assert [r["operation_id"] for r in journal] == ["getExtraordinaryEvent"]  # this session's, as it is now
    assert PENDING_EVENT in read["mock-server:///__mock/state"]


def test_at_least_three_prompts_each_naming_tools_of_the_default_list() -> None:
    async def main() -> tuple[list[Any], Any]:
        async with mcp_client(in_process()) as client:
            prompts = (await client.list_prompts()).prompts
            got = await client.get_prompt("fail-the-next-limit-change", {"status": "502"})
            return prompts, got

    prompts, got = anyio.run(main)
    assert len(prompts) >= 3
    default = {tool.name for tool in listed("default")}
    for prompt in prompts:
        named = prompt.description.rsplit("Tools: ", 1)[1].rstrip(".").split(", ")
        assert named and set(named) <= default, prompt.name
    text = got.messages[0].content.text
    assert '"status": 502' in text and "mockCreateFault" in text
