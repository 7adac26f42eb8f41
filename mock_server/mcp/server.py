"""The MCP server (the official SDK's low-level `Server`): the preset's tools, the resources, the prompts.

Imported only when MCP is used (`mock-server mcp`, or the first call to /__mock/mcp): the SDK is the `mcp` extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from starlette.types import ASGIApp

from mock_server import __version__
from mock_server.domain.errors import Detail, InvalidRequest
from mock_server.mcp import catalog, inprocess
from mock_server.mcp.inprocess import Caller
from mock_server.mcp.prompts import PROMPTS, rendered
from mock_server.mcp.tools import Tool, tools_of
from mock_server.spec.openapi import Specs

INSTRUCTIONS = (
    "A stateful mock of the PIX limits API and of its test controls (reset, clock, faults, journal, verify, Pact "
    "export). Every operation of both OpenAPI documents is reachable: search_operations finds one by words, "
    "describe_operation gives its arguments, call_operation calls it by its operationId; the operations used "
    "most are tools of their own. A tool's arguments are the operation's path and query parameters, its JSON "
    "body as `body`, and `session`; it answers {status, body}: the HTTP status and the answer. Your calls work "
    "in a mock session of your own unless you name one with `session`. The specs, the scenarios, your "
    "session's journal and state are resources; the prompts are guided tasks."
)
# The resources: their URI, the operation that answers them (read live, in the caller's session), their words.
RESOURCES = (
    ("mock-server:///openapi.yaml", "publicSpecYaml", "The public API's OpenAPI document", "application/yaml"),
    ("mock-server:///__mock/openapi.yaml", "mockAdminSpec", "The test controls' OpenAPI document", "application/yaml"),
    ("mock-server:///__mock/scenarios", "mockListScenarios", "The scenarios the server knows", "application/json"),
    ("mock-server:///__mock/requests", "mockListRequests", "Your session's journal, read live", "application/json"),
    ("mock-server:///__mock/state", "mockGetState", "Your session's state, read live", "application/json"),
)


class CallerContext(NamedTuple):
    """Who calls, as the transport knows: the mock session calls work in by default, the caller, the preset."""

    session: str
    caller: Caller
    preset: str = catalog.DEFAULT


_ARGUMENTS = {
    catalog.DESCRIBE: (catalog.OPERATION_ID,),
    catalog.CALL: (catalog.OPERATION_ID, catalog.ARGUMENTS),
}


@dataclass(frozen=True)
class Toolbox:
    """The tools and the app that answers them; `context` says, for a request, which mock session its calls work
    in by default, who they come from and the preset it lists (the transport knows: stdio's process, or HTTP's
    MCP session and URL). `operations` are every operation call_operation reaches; a preset's tools are made
    when it is first asked for (`all` compacts 46 schemas: no cost to a server whose agents never ask)."""

    app: ASGIApp
    operations: dict[str, Tool]
    context: Callable[[ServerRequestContext[Any]], CallerContext]
    public: frozenset[str]
    _presets: dict[str, tuple[catalog.Listed, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, app: ASGIApp, specs: Specs, context: Callable[[ServerRequestContext[Any]], CallerContext]) -> Toolbox:
        """The toolbox over every operation of `specs`."""
        public = frozenset(op.operation_id for op in specs.public.operations.values())
        return cls(app, tools_of(specs), context, public)

    def preset(self, name: str) -> tuple[catalog.Listed, ...]:
        """The tools of preset `name`."""
        if name not in self._presets:
            self._presets[name] = tuple(catalog.preset(name, self.operations, self.public))
        return self._presets[name]

    def listed(self, preset: str = catalog.DEFAULT) -> list[types.Tool]:
        listed = []
        for tool in self.preset(preset):
            operation = tool.operation
            annotations = types.ToolAnnotations(read_only_hint=tool.name != catalog.CALL, open_world_hint=False)
            if operation is not None:
                annotations = types.ToolAnnotations(
                    read_only_hint=operation.read_only,
                    destructive_hint=operation.method == "DELETE",
                    idempotent_hint=operation.method in ("GET", "PUT", "DELETE"),
                    open_world_hint=False,
                )
            listed.append(
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    output_schema=tool.output_schema,
                    annotations=annotations,
                )
            )
        return listed

    async def answer(
        self, name: str, arguments: dict[str, Any] | None, calling: CallerContext
    ) -> tuple[int | None, Any]:
        """The status and the body the tool `name` answers for `arguments` (a 400 in the contract's body for
        arguments no request can carry); MCPError for a tool that the caller's preset does not list."""
        given = dict(arguments or {})
        session, caller, preset = calling
        listed = next((tool for tool in self.preset(preset) if tool.name == name), None)
        if listed is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}.")
        try:
            if listed.operation is not None:
                return await self.call_operation(listed.operation, given, session, caller)
            if name == catalog.SEARCH:
                return 200, {"operations": catalog.search(self.operations, given)}
            operation = catalog.operation_of(self.operations, given, _ARGUMENTS[name])
            if name == catalog.DESCRIBE:
                return 200, catalog.described(operation)
            inner = given.get(catalog.ARGUMENTS, {})
            if not isinstance(inner, dict):
                raise InvalidRequest(
                    "The tool's arguments cannot make a request.", [Detail((catalog.ARGUMENTS,), "must be an object")]
                )
            return await self.call_operation(operation, inner, session, caller)
        except InvalidRequest as error:
            return error.status, error.body()

    async def call_operation(
        self, operation: Tool, arguments: dict[str, Any], session: str, caller: Caller
    ) -> tuple[int | None, Any]:
        """`operation` called with its own `arguments`, answered by the app in process."""
        request = operation.request(arguments)
        answer = await inprocess.call(self.app, request, request.session or session, caller)
        return answer.status, answer.value()

    async def read(self, operation_id: str, calling: CallerContext) -> tuple[int | None, Any]:
        """An operation without arguments (a resource's), answered in the caller's session."""
        session, caller, _ = calling
        try:
            return await self.call_operation(self.operations[operation_id], {}, session, caller)
        except InvalidRequest as error:
            return error.status, error.body()

    async def call(self, name: str, arguments: dict[str, Any] | None, calling: CallerContext) -> types.CallToolResult:
        """The tool `name` called with `arguments`: the answer's status and body, a contract error included."""
        return _result(*await self.answer(name, arguments, calling))


def _result(status: int | None, body: Any) -> types.CallToolResult:
    structured = {"status": status, "body": body}
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(structured, ensure_ascii=False))],
        structured_content=structured,
        is_error=status is None or status >= 400,
    )


def build_server(toolbox: Toolbox) -> Server[Any]:
    """The SDK's server answering tools, resources and prompts from `toolbox`."""
    listed: dict[str, types.ListToolsResult] = {}  # by preset, made on first use
    resources = types.ListResourcesResult(
        resources=[
            types.Resource(uri=uri, name=uri.rsplit("/", 1)[-1], description=words, mime_type=media_type)
            for uri, _, words, media_type in RESOURCES
        ]
    )
    served_by = {uri: (operation_id, media_type) for uri, operation_id, _, media_type in RESOURCES}
    prompts = types.ListPromptsResult(
        prompts=[
            types.Prompt(
                name=prompt.name,
                description=f"{prompt.description} Tools: {', '.join(prompt.tools)}.",
                arguments=[types.PromptArgument(name=n, description=d, required=False) for n, d in prompt.arguments],
            )
            for prompt in PROMPTS
        ]
    )
    prompt_by_name = {prompt.name: prompt for prompt in PROMPTS}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        preset = toolbox.context(ctx).preset
        if preset not in listed:
            listed[preset] = types.ListToolsResult(tools=toolbox.listed(preset))
        return listed[preset]

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return await toolbox.call(params.name, params.arguments, toolbox.context(ctx))

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return resources

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in served_by:
            raise MCPError(INVALID_PARAMS, f"Unknown resource: {uri[:200]!r}.")
        operation_id, media_type = served_by[uri]
        status, body = await toolbox.read(operation_id, toolbox.context(ctx))
        if status != 200:
            raise MCPError(INVALID_PARAMS, f"{uri} cannot be read: the server answered {status}.")
        text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, indent=1)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=media_type, text=text)])

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return prompts

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
        prompt = prompt_by_name.get(params.name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name[:200]!r}.")
        return types.GetPromptResult(
            description=prompt.description,
            messages=[
                types.PromptMessage(role="user", content=types.TextContent(text=rendered(prompt, params.arguments)))
            ],
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
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
