"""The SDK's Streamable HTTP session manager behind /__mock/mcp: session-based only, one mock session per MCP session.

`mcp` 2.3's client prefers the stateless 2026-07-28 revision, whose requests carry no `Mcp-Session-Id`: nothing
would tie an agent's calls together. A request of that revision is refused with the error that names the
session-based revisions (-32022, `supported`), so the official client falls back to `initialize` and gets a session
id. Each MCP session works in the mock session `mcp-` and a digest of its id (or the one `/__session/{name}/`
names), deleted when the MCP session ends: the client's DELETE, its idle timeout, the server's end.

The manager's `run()` context is entered by a task of the serving event loop, started on the first call (the
CLI runs uvicorn with lifespan off), and left when that loop ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.http.handling import ServerContext
from mock_server.http.session_url import SESSION_KEY
from mock_server.mcp.inprocess import Caller
from mock_server.mcp.server import Toolbox, build_server
from mock_server.mcp.tools import tools_of
from mock_server.wire.decoding import MAX_BODY_BYTES

SESSION_IDLE_SECONDS = 30 * 60  # an MCP session nobody used this long ends, and its mock session with it
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")


def own_session(mcp_session_id: str) -> str:
    """The mock session of an MCP session: `mcp-` and 16 hex digits of a digest of its id (the id itself lets
    whoever knows it act as the agent; the session's name is listed to any admin client)."""
    return "mcp-" + hashlib.sha256(mcp_session_id.encode("utf-8", "replace")).hexdigest()[:16]


class _Manager(StreamableHTTPSessionManager):
    """The SDK's manager, telling `ended` the id of every session it lets go."""

    def __init__(self, *args: Any, ended: Callable[[str], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ended = ended

    async def _discard_session(self, session_id: str, transport: StreamableHTTPServerTransport) -> None:
        try:
            await super()._discard_session(session_id, transport)
        finally:
            self._ended(session_id)


def _unsupported_revision(version: str) -> Response:
    """The refusal of a request of a revision without sessions (the JSON-RPC error the client falls back on)."""
    error = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": UNSUPPORTED_PROTOCOL_VERSION,
            "message": "Unsupported protocol version: this server speaks the session-based revisions only",
            "data": {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": version[:40]},
        },
    }
    return Response(json.dumps(error), 400, media_type="application/json")


class Running:
    """The manager and the task that holds its `run()` context open."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self._started = asyncio.Event()
        self._failure: BaseException | None = None
        self.task = asyncio.get_running_loop().create_task(self._hold(), name="mock-server MCP sessions")

    async def _hold(self) -> None:
        try:
            async with self.manager.run():
                self._started.set()
                await asyncio.Event().wait()  # until the serving loop ends (its tasks are cancelled)
        except BaseException as exc:
            self._failure = exc
            self._started.set()
            raise

    async def ready(self) -> ASGIApp:
        await self._started.wait()
        if self._failure is not None:
            raise RuntimeError("the MCP session manager stopped") from self._failure
        return self.asgi

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = next((v.decode("latin-1") for k, v in scope["headers"] if k == _VERSION_HEADER), None)
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await _unsupported_revision(version)(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def start(server: ServerContext, app: Starlette) -> Running:
    """The MCP server over `app`'s tools, its session manager starting in the running loop."""
    sessions = server.sessions
    token = server.settings.admin_token

    def context(ctx: ServerRequestContext[Any]) -> tuple[str, Caller]:
        request = ctx.request
        assert isinstance(request, Request), "a Streamable HTTP request carries its HTTP request"
        named = request.scope.get(SESSION_KEY)  # /__session/{name}/__mock/mcp: checked by the pipeline
        session = named or own_session(request.headers.get(MCP_SESSION_ID_HEADER, ""))
        caller = Caller(host=request.headers.get("host", "localhost"), scheme=request.url.scheme, token=token)
        return session, caller

    def ended(mcp_session_id: str) -> None:
        sessions.delete(own_session(mcp_session_id))

    toolbox = Toolbox(app, tools_of(server.specs), context)
    manager = _Manager(
        build_server(toolbox),
        json_response=True,  # one JSON answer a request: nothing is pushed to a client between its calls
        # The server's own Host rule and cross-origin rules judged the request already (mcp/endpoint.py).
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=SESSION_IDLE_SECONDS,
        max_request_body_size=MAX_BODY_BYTES,
        ended=ended,
    )
    return Running(manager)
