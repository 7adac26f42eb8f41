"""`/__mock/mcp`: MCP over Streamable HTTP on the admin plane, the SDK imported only when the path is first hit.

A call to the path is judged as every admin call is before the SDK sees it: the Host rule in the connection
(http/connection.py with http/hosts.py, as for every route), the cross-origin rules and the admin token (the
pipeline's authorize step), a body read within the same bounds and refused in the contract's body when it is no
acceptable JSON (wire/decoding.py: too deep, not UTF-8, not JSON). The SDK's own Host and Origin check is off
(mcp/streamable.py): one rule, the server's, holds, and `--allowed-hosts` is the one list of names. The path's
operations are in the admin spec; its route is built here rather than from a handler, for the SDK answers it
(JSON-RPC, not the contract's bodies).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl

from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.domain.errors import ApiError, Detail, InvalidRequest
from mock_server.http.handling import Call, Reply, ServerContext, SessionUse
from mock_server.http.pipeline import Exchange, OperationRunner, PathEndpoint
from mock_server.http.responses import error_response
from mock_server.mcp.jsonrpc import INVALID_REQUEST, error_bytes, invalid_id, is_opening
from mock_server.mcp.names import EXTRA, INSTALL_LINE, MISSING_EXTRA, PRESETS
from mock_server.mcp.tools import MCP_PATH
from mock_server.wire.decoding import parse_json

if TYPE_CHECKING:
    from mock_server.mcp.streamable import Running
    from mock_server.spec.openapi import Operation, Spec


PRESET_PARAMETER = "tools"  # /__mock/mcp?tools=NAME: the tool list of the MCP session
OPENING_KEY = "mock_server.mcp_opening"  # scope: the request is an `initialize` (it opens a session)


class McpNotInstalled(ApiError):
    """The SDK cannot be imported: a plain install, without the extra."""

    status = 501
    code = "mcp_not_installed"

    def __init__(self) -> None:
        super().__init__(MISSING_EXTRA, [Detail((EXTRA,), f"is not installed: {INSTALL_LINE}")])


def preset_of(query_string: bytes) -> str:
    """The preset `?tools=` names (the default without one); InvalidRequest for another name."""
    named = [v for k, v in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True) if k == PRESET_PARAMETER]
    if not named:
        return PRESETS[0]
    if len(named) > 1 or named[0] not in PRESETS:
        raise InvalidRequest(
            "No such tool list.", [Detail((PRESET_PARAMETER,), f"must be one of {', '.join(PRESETS)}, once")]
        )
    return named[0]


def _never(call: Call) -> Reply:
    raise AssertionError("the MCP endpoint answers through the SDK, never a handler")


class McpEndpoint:
    """The MCP server of one app, started on the first call to the path in the event loop serving it (again in a
    new loop: a test client's loop per request)."""

    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self._running: Running | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def transport(self, scope: Scope) -> ASGIApp:
        """The SDK's Streamable HTTP app, running."""
        loop = asyncio.get_running_loop()
        if self._running is None or self._loop is not loop:
            try:
                from mock_server.mcp.streamable import start  # the SDK: only once MCP is used
            except ImportError as missing:
                raise McpNotInstalled() from missing
            self._loop, self._running = loop, start(self.server, scope["app"], self._running)
        return await self._running.ready()


class McpRunner(OperationRunner):
    """One method of /__mock/mcp: the admin plane's rules, then the SDK."""

    def __init__(self, server: ServerContext, operation: Operation, endpoint: McpEndpoint) -> None:
        super().__init__(server, operation, _never, public=False, guarded=True, session_use=SessionUse.NONE)
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        exchange = Exchange(scope, receive, scope["headers"])
        try:
            self._authorize(exchange)
            preset_of(scope.get("query_string", b""))
            if scope["method"] == "POST":
                await self.read_body(exchange)  # at most 1 MiB, within the body timeout (413, 408)
                if exchange.raw_body:
                    message = parse_json(exchange.raw_body, exchange.content_type)
                    if invalid_id(message):
                        refusal = error_bytes(INVALID_REQUEST, "Invalid Request: an id is a string or an integer")
                        await Response(refusal, 400, media_type="application/json")(scope, receive, send)
                        return
                    scope = {**scope, OPENING_KEY: is_opening(message)}
                receive = _replayed(exchange.raw_body, receive)
            transport = await self.endpoint.transport(scope)
        except ApiError as error:
            await error_response(error)(scope, receive, send)
            return
        await transport(scope, receive, send)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands over `body`, read already, then what the server's own hands over (a disconnect)."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def mcp_routes(server: ServerContext, spec: Spec) -> list[Route]:
    """The route of /__mock/mcp, with the methods the admin spec gives it."""
    endpoint = McpEndpoint(server)
    runners: dict[str, OperationRunner] = {
        op.method: McpRunner(server, op, endpoint) for op in spec.operations.values() if op.path == MCP_PATH
    }
    return [Route(MCP_PATH, PathEndpoint(runners))] if runners else []
