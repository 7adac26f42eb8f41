"""The SDK's Streamable HTTP session manager behind /__mock/mcp: session-based only, one mock session per MCP session.

`mcp` 2.3's client prefers the stateless 2026-07-28 revision, whose requests carry no `Mcp-Session-Id`: nothing
would tie an agent's calls together. A request of that revision is refused with the error that names the
session-based revisions (-32022, `supported`), so the official client falls back to `initialize` and gets a session
id. Each MCP session works in the mock session `mcp-` and a digest of its id (or the one `/__session/{name}/`
names), deleted when the MCP session ends: the client's DELETE, its idle timeout, the server's end.

When a session ends is read at the manager's public edge, its ASGI calls (`Lifetimes`): the id it answers on an
opening request, a DELETE it accepts, a 404 for an id it no longer knows, and the same idle timeout it is given,
counted here from each call's end. The SDK's private methods are left alone: they changed between its releases.

The manager's `run()` context is entered by a task of the serving event loop, started on the first call (the
CLI runs uvicorn with lifespan off), and left when that loop ends.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.http.handling import ServerContext
from mock_server.http.session_url import SESSION_KEY
from mock_server.mcp.endpoint import OPENING_KEY, preset_of
from mock_server.mcp.inprocess import Caller
from mock_server.mcp.jsonrpc import INTERNAL_ERROR, error_bytes
from mock_server.mcp.server import CallerContext, Toolbox, build_server
from mock_server.mcp.tools import MCP_PATH
from mock_server.wire.decoding import MAX_BODY_BYTES

SESSION_IDLE_SECONDS = 30 * 60  # an MCP session nobody used this long ends, and its mock session with it
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("latin-1")
_SESSION_HEADER = MCP_SESSION_ID_HEADER.lower().encode("latin-1")


def own_session(mcp_session_id: str) -> str:
    """The mock session of an MCP session: `mcp-` and 16 hex digits of a digest of its id (the id itself lets
    whoever knows it act as the agent; the session's name is listed to any admin client)."""
    return "mcp-" + hashlib.sha256(mcp_session_id.encode("utf-8", "replace")).hexdigest()[:16]


class Lifetimes:
    """The MCP sessions the manager opened and when each was last used, seen from its calls alone. `ended` is
    told each id once, when the manager accepted its DELETE, answered 404 to it (it let the session go first), or
    when it sat idle `idle_seconds` with no call in flight."""

    def __init__(
        self,
        ended: Callable[[str], None],
        idle_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        opened: Callable[[str], None] = lambda session_id: None,
    ) -> None:
        self._ended = ended
        self._opened = opened
        self.idle_seconds = idle_seconds
        self._clock = clock
        self._last_use: dict[str, float] = {}
        self._in_flight: dict[str, int] = {}

    @property
    def open(self) -> list[str]:
        return list(self._last_use)

    def began(self, session_id: str | None) -> None:
        if session_id is not None and session_id in self._last_use:
            self._in_flight[session_id] = self._in_flight.get(session_id, 0) + 1

    def answered(self, method: str, sent_id: str | None, status: int | None, answered_id: str | None) -> None:
        """One call's end: `sent_id` the id the request named, `answered_id` the one the answer named."""
        if sent_id is not None and sent_id in self._in_flight:
            self._in_flight[sent_id] -= 1
            if not self._in_flight[sent_id]:
                del self._in_flight[sent_id]
        if sent_id is None and answered_id is not None and status is not None and status < 400:
            self._last_use[answered_id] = self._clock()  # an opening request the manager accepted
            self._opened(answered_id)
        elif sent_id is not None and sent_id in self._last_use:
            if status == 404 or (method == "DELETE" and status is not None and status < 300):
                self.end(sent_id)
            else:
                self._last_use[sent_id] = self._clock()

    def least_recently_used_idle(self) -> str | None:
        """The idle session (no call in flight) used longest ago, if any: the one closed to open another."""
        idle = [(used, i) for i, used in self._last_use.items() if i not in self._in_flight]
        return min(idle)[1] if idle else None

    def idle(self) -> list[str]:
        """The sessions with no call in flight whose last call ended `idle_seconds` ago or more."""
        since = self._clock() - self.idle_seconds
        return [i for i, used in self._last_use.items() if used <= since and i not in self._in_flight]

    def end(self, session_id: str) -> None:
        if self._last_use.pop(session_id, None) is not None:
            self._in_flight.pop(session_id, None)
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


def _too_many(bound: int) -> Response:
    """The refusal of an `initialize` while `bound` sessions are open, every one of them in a call."""
    message = f"Too many open MCP sessions: {bound} are open, each in a call (--max-mcp-sessions {bound})"
    body = error_bytes(INTERNAL_ERROR, message, {"max_mcp_sessions": bound})
    return Response(body, 503, media_type="application/json", headers={"Retry-After": "1"})


class Running:
    """The manager, the task that holds its `run()` context open, and the lifetimes of its sessions: at most
    `bound` open, and every id it answers prefixed with `replica` and a dot when it has one (a router routes by
    it; the SDK sees its own ids)."""

    def __init__(
        self, manager: StreamableHTTPSessionManager, lifetimes: Lifetimes, bound: int, replica: str | None = None
    ) -> None:
        self.manager = manager
        self.lifetimes = lifetimes
        self.bound = bound
        self.prefix = None if replica is None else f"{replica}."
        self._opening = 0  # initialize requests admitted, not answered yet
        self.mcp_server: Server[Any] = manager.app
        self._started = asyncio.Event()
        self._failure: BaseException | None = None
        self.task = asyncio.get_running_loop().create_task(self._hold(), name="mock-server MCP sessions")

    async def _hold(self) -> None:
        try:
            async with self.manager.run():
                self._started.set()
                while True:  # until the serving loop ends (its tasks are cancelled)
                    await asyncio.sleep(min(self.lifetimes.idle_seconds / 4, 60.0))
                    for session_id in self.lifetimes.idle():
                        self.lifetimes.end(session_id)
        except BaseException as exc:
            self._failure = exc
            self._started.set()
            raise
        finally:
            for session_id in self.lifetimes.open:  # the server's end ends every session
                self.lifetimes.end(session_id)

    async def ready(self) -> ASGIApp:
        await self._started.wait()
        if self._failure is not None:
            raise RuntimeError("the MCP session manager stopped") from self._failure
        return self.asgi

    async def asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        sent_id = version = None
        for name, value in scope["headers"]:
            if name == _VERSION_HEADER:
                version = value.decode("latin-1")
            elif name == _SESSION_HEADER:
                sent_id = value.decode("latin-1")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            await _unsupported_revision(version)(scope, receive, send)
            return
        if sent_id is not None and self.prefix is not None:
            # Another replica's id, or none of this one's, is no session here: the SDK answers 404.
            sent_id = sent_id.removeprefix(self.prefix) if sent_id.startswith(self.prefix) else "-" + sent_id
            headers = [(k, v) for k, v in scope["headers"] if k != _SESSION_HEADER]
            scope = {**scope, "headers": [*headers, (_SESSION_HEADER, sent_id.encode("latin-1"))]}
        opening = sent_id is None and bool(scope.get(OPENING_KEY))
        if opening and not await self._room():
            await _too_many(self.bound)(scope, receive, send)
            return
        await self._handled(scope, receive, send, sent_id, opening)

    async def _room(self) -> bool:
        """Whether one more session may open: below the bound, or once the least recently used idle one closed."""
        while len(self.lifetimes.open) + self._opening >= self.bound:
            victim = self.lifetimes.least_recently_used_idle()
            if victim is None:
                return False
            await self.close(victim)
        return True

    async def close(self, session_id: str) -> None:
        """End the session `session_id` as its client's DELETE would (the SDK's public edge), its mock session
        with it."""
        scope: Scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "DELETE",
            "scheme": "http",
            "path": MCP_PATH,
            "raw_path": MCP_PATH.encode("ascii"),
            "query_string": b"",
            "root_path": "",
            "headers": [(_SESSION_HEADER, session_id.encode("latin-1")), (b"accept", b"application/json")],
            "client": ("127.0.0.1", 0),
            "server": ("localhost", None),
        }

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            pass

        await self._handled(scope, receive, send, session_id, False)
        self.lifetimes.end(session_id)  # ended even if the SDK had let it go first

    async def _handled(self, scope: Scope, receive: Receive, send: Send, sent_id: str | None, opening: bool) -> None:
        status: int | None = None
        answered_id: str | None = None

        async def watched(message: Message) -> None:
            nonlocal status, answered_id
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", ()))
                answered_id = next((v.decode("latin-1") for k, v in headers if k.lower() == _SESSION_HEADER), None)
                if answered_id is not None and self.prefix is not None:
                    named = (self.prefix + answered_id).encode("latin-1")
                    headers = [(k, named if k.lower() == _SESSION_HEADER else v) for k, v in headers]
                    message = {**message, "headers": headers}
            await send(message)

        self.lifetimes.began(sent_id)
        self._opening += opening
        try:
            await self.manager.handle_request(scope, receive, watched)
        finally:
            self._opening -= opening
            self.lifetimes.answered(scope["method"], sent_id, status, answered_id)


def start(server: ServerContext, app: Starlette, before: Running | None = None) -> Running:
    """The MCP server over `app`'s tools, its session manager starting in the running loop (the SDK's server of
    `before`, started in another loop, reused: its tools are built once)."""
    sessions = server.sessions
    token = server.settings.admin_token

    def context(ctx: ServerRequestContext[Any]) -> CallerContext:
        request = ctx.request
        assert isinstance(request, Request), "a Streamable HTTP request carries its HTTP request"
        named = request.scope.get(SESSION_KEY)  # /__session/{name}/__mock/mcp: checked by the pipeline
        session = named or own_session(request.headers.get(MCP_SESSION_ID_HEADER, ""))
        caller = Caller(host=request.headers.get("host", "localhost"), scheme=request.url.scheme, token=token)
        return CallerContext(session, caller, preset_of(request.scope.get("query_string", b"")))  # checked: endpoint.py

    unsaved = server.state_file.unsaved if server.state_file is not None else set()

    def opened(mcp_session_id: str) -> None:
        unsaved.add(own_session(mcp_session_id))  # its mock session goes with it: never in --state-file

    def ended(mcp_session_id: str) -> None:
        sessions.delete(own_session(mcp_session_id))
        unsaved.discard(own_session(mcp_session_id))

    mcp_server = before.mcp_server if before is not None else build_server(Toolbox.of(app, server.specs, context))
    bound = server.settings.max_mcp_sessions
    manager = StreamableHTTPSessionManager(
        mcp_server,
        json_response=True,  # one JSON answer a request: nothing is pushed to a client between its calls
        # The server's own Host rule and cross-origin rules judged the request already (mcp/endpoint.py).
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=SESSION_IDLE_SECONDS,
        max_request_body_size=MAX_BODY_BYTES,
        max_sessions=bound + 1,  # ours is the bound (Running): the SDK's only answers a race past it
    )
    lifetimes = Lifetimes(ended, SESSION_IDLE_SECONDS, opened=opened)
    return Running(manager, lifetimes, bound, server.settings.mcp_replica)
