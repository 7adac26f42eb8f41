"""`/__mock/mcp`: MCP over Streamable HTTP on the admin plane, the SDK imported only when the path is first hit.

A call to the path is judged as every admin call is (the Host rule of http/hosts.py, then the cross-origin rules and
the admin token of the pipeline's authorize step) before the SDK sees it; the SDK's own Host and Origin check is
off (mcp/streamable.py), so one rule, the server's, holds. The path's operations are in the admin spec; its route
is built here rather than from a handler, for the SDK answers it (JSON-RPC, not the contract's bodies).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.domain.errors import ApiError
from mock_server.http.hosts import HostPolicy
from mock_server.http.pipeline import Call, Exchange, OperationRunner, PathEndpoint, Reply, ServerContext, SessionUse
from mock_server.http.responses import error_response
from mock_server.mcp.tools import MCP_PATH

if TYPE_CHECKING:
    from mock_server.mcp.streamable import Running
    from mock_server.spec.openapi import Operation, Spec


def _never(call: Call) -> Reply:
    raise AssertionError("the MCP endpoint answers through the SDK, never a handler")


class McpEndpoint:
    """The MCP server of one app, started on the first call to the path in the event loop serving it (again in a
    new loop: a test client's loop per request)."""

    def __init__(self, server: ServerContext) -> None:
        self.server = server
        self.hosts = HostPolicy.build(server.settings.allowed_hosts, server.settings.host)
        self._running: Running | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def transport(self, scope: Scope) -> ASGIApp:
        """The SDK's Streamable HTTP app, running."""
        loop = asyncio.get_running_loop()
        if self._running is None or self._loop is not loop:
            from mock_server.mcp.streamable import start  # the SDK: only once MCP is used

            self._loop, self._running = loop, start(self.server, scope["app"])
        return await self._running.ready()


class McpRunner(OperationRunner):
    """One method of /__mock/mcp: the admin plane's rules, then the SDK."""

    def __init__(self, server: ServerContext, operation: Operation, endpoint: McpEndpoint) -> None:
        super().__init__(server, operation, _never, public=False, guarded=True, session_use=SessionUse.NONE)
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            hosts = [value for name, value in scope["headers"] if name == b"host"]
            refusal = self.endpoint.hosts.refusal(hosts, scope.get("http_version", "1.1"))
            if refusal is not None:
                raise refusal
            self._authorize(Exchange(scope, receive, scope["headers"]))
        except ApiError as error:
            await error_response(error)(scope, receive, send)
            return
        transport = await self.endpoint.transport(scope)
        await transport(scope, receive, send)


def mcp_routes(server: ServerContext, spec: Spec) -> list[Route]:
    """The route of /__mock/mcp, with the methods the admin spec gives it."""
    endpoint = McpEndpoint(server)
    runners: dict[str, Any] = {
        op.method: McpRunner(server, op, endpoint) for op in spec.operations.values() if op.path == MCP_PATH
    }
    return [Route(MCP_PATH, PathEndpoint(runners))] if runners else []
