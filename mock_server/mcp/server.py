"""The MCP server (the official SDK's low-level `Server`) over the tools: list them, call one, read the specs.

Imported only when MCP is used (`mock-server mcp`, or the first call to /__mock/mcp): the SDK is the `mcp` extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from starlette.types import ASGIApp

from mock_server import __version__
from mock_server.domain.errors import InvalidRequest
from mock_server.mcp import inprocess
from mock_server.mcp.inprocess import Caller
from mock_server.mcp.tools import OUTPUT_SCHEMA, Tool

INSTRUCTIONS = (
    "A stateful mock of the PIX limits API. Each tool is one operation of its public API (registerAccountLimit, "
    "createLimitUpdateRequest, ...) or of its test controls (mock*: reset, clock, faults, journal, verify, "
    "coverage, Pact export), named by its operationId. A tool's arguments are the operation's path and query "
    "parameters, its JSON body as `body`, and `session`; it answers {status, body}: the HTTP status and the "
    "answer. Your calls work in a mock session of your own unless you name one with `session`. The two OpenAPI "
    "documents are resources."
)
# The specs as resources: their URI, the tool that serves them, and their words.
RESOURCES = (
    ("mock-server:///openapi.yaml", "publicSpecYaml", "The public API's OpenAPI document"),
    ("mock-server:///__mock/openapi.yaml", "mockAdminSpec", "The test controls' OpenAPI document (/__mock)"),
)


@dataclass(frozen=True)
class Toolbox:
    """The tools and the app that answers them; `context` says, for a request, which mock session its calls work
    in by default and who they come from (the transport knows: stdio's process, or HTTP's MCP session)."""

    app: ASGIApp
    tools: dict[str, Tool]
    context: Callable[[ServerRequestContext[Any]], tuple[str, Caller]]

    def listed(self) -> list[types.Tool]:
        return [
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=tool.input_schema,
                output_schema=OUTPUT_SCHEMA,
                annotations=types.ToolAnnotations(
                    read_only_hint=tool.read_only,
                    destructive_hint=tool.method == "DELETE",
                    idempotent_hint=tool.method in ("GET", "PUT", "DELETE"),
                    open_world_hint=False,
                ),
            )
            for tool in self.tools.values()
        ]

    async def answer(
        self, name: str, arguments: dict[str, Any] | None, session: str, caller: Caller
    ) -> tuple[int | None, Any]:
        """The status and the body the app answers the tool `name` called with `arguments` (a 400 in the contract's
        body for arguments no request can carry); MCPError for a tool that does not exist."""
        tool = self.tools.get(name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}.")
        try:
            request = tool.request(arguments)
        except InvalidRequest as error:
            return error.status, error.body()
        answer = await inprocess.call(self.app, request, request.session or session, caller)
        return answer.status, answer.value()

    async def call(
        self, name: str, arguments: dict[str, Any] | None, session: str, caller: Caller
    ) -> types.CallToolResult:
        """The tool `name` called with `arguments`: the answer's status and body, a contract error included."""
        return _result(*await self.answer(name, arguments, session, caller))


def _result(status: int | None, body: Any) -> types.CallToolResult:
    structured = {"status": status, "body": body}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
        is_error=status is None or status >= 400,
    )


def build_server(toolbox: Toolbox) -> Server[Any]:
    """The SDK's server answering tools/list, tools/call, resources/list and resources/read from `toolbox`."""
    listed = types.ListToolsResult(tools=toolbox.listed())
    resources = types.ListResourcesResult(
        resources=[
            types.Resource(uri=uri, name=uri.rsplit("/", 1)[-1], description=words, mime_type="application/yaml")
            for uri, _, words in RESOURCES
        ]
    )
    served_by = {uri: tool for uri, tool, _ in RESOURCES}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        session, caller = toolbox.context(ctx)
        return await toolbox.call(params.name, params.arguments, session, caller)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return resources

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        tool = served_by.get(uri)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown resource: {uri!r}.")
        session, caller = toolbox.context(ctx)
        status, body = await toolbox.answer(tool, {}, session, caller)
        if status != 200 or not isinstance(body, str):
            raise MCPError(INVALID_PARAMS, f"{uri} cannot be read: the server answered {status}.")
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="application/yaml", text=body)]
        )

    return Server(
        "mock-server",
        version=__version__,
        title="PIX limits mock server",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
