"""`mock-server mcp`: the MCP server over the process's stdin and stdout, on an app of its own.

The process is the agent's: one MCP session, working in one mock session (`mcp-` and a random suffix) that ends
with the process. stdout carries protocol messages only: the ready line and every log go to stderr.
"""

from __future__ import annotations

import secrets
import sys
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server
from starlette.applications import Starlette

from mock_server.mcp.inprocess import Caller
from mock_server.mcp.server import Toolbox, build_server
from mock_server.mcp.tools import tools_of

if TYPE_CHECKING:
    from mock_server.settings import Settings  # a type only: the porch calls in here, never the other way


def session_name() -> str:
    """The mock session of this process's MCP session."""
    return f"mcp-{secrets.token_hex(8)}"


def serve(app: Starlette, settings: Settings, banner: str) -> int:
    """Serve MCP on stdio until stdin closes; 0."""
    session = session_name()
    caller = Caller(token=settings.admin_token)

    def context(ctx: ServerRequestContext[Any]) -> tuple[str, Caller]:
        return session, caller

    server = build_server(Toolbox(app, tools_of(app.state.specs), context))

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            print(f"mock-server ready on stdio (MCP, session {session}) {banner}", file=sys.stderr, flush=True)
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
    return 0
