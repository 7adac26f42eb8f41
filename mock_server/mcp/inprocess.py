"""A tool's request answered by the app in process: one ASGI call with a synthetic scope, no socket.

The call takes the road every client's takes (routing, the operation pipeline: the admin rules, the session,
faults, validation, the journal, coverage), so what an agent did shows in the journal, the dashboard, verify and
the Pact export like any client's calls. It comes from no browser, so the cross-origin rules let it through; it
carries the admin token when the server has one (whoever reaches the tools passed it, or started the process).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from starlette.types import ASGIApp, Message

from mock_server import __version__
from mock_server.http.scope_keys import ABORT_EXTENSION
from mock_server.mcp.tools import HttpRequest
from mock_server.wire.decoding import is_json_media_type

USER_AGENT = f"mock-server-mcp/{__version__}".encode("latin-1")  # what the journal shows an agent's calls came with


@dataclass(frozen=True, slots=True)
class Caller:
    """Who calls the app: the Host the calls name, the admin token they carry, the client address they show."""

    host: str = "localhost"
    scheme: str = "http"
    token: str | None = None
    client: tuple[str, int] = ("127.0.0.1", 0)


@dataclass(slots=True)
class AppAnswer:
    """What the app answered: no status when it dropped the connection (an injected reset)."""

    status: int | None = None
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    content: bytearray = field(default_factory=bytearray)

    def value(self) -> Any:
        """The answer's JSON value, its text when it is not JSON, None when it has no content."""
        if not self.content:
            return None
        content_type = next((v.decode("latin-1") for k, v in self.headers if k.lower() == b"content-type"), "")
        text = bytes(self.content).decode("utf-8", "replace")
        if is_json_media_type(content_type):
            try:
                return json.loads(text)
            except ValueError:
                return text
        return text


def _headers(request: HttpRequest, session: str, caller: Caller) -> list[tuple[bytes, bytes]]:
    headers = [
        (b"host", caller.host.encode("latin-1")),
        (b"user-agent", USER_AGENT),
        (b"x-mock-session", session.encode("utf-8")),
    ]
    if caller.token is not None:
        headers.append((b"authorization", b"Bearer " + caller.token.strip().encode("utf-8", "surrogateescape")))
    if request.body is not None:
        headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(request.body)).encode("ascii")))
    return headers


async def call(app: ASGIApp, request: HttpRequest, session: str, caller: Caller) -> AppAnswer:
    """`request` in `session`, answered by `app`."""
    answer = AppAnswer()
    done = asyncio.Event()
    body_given = False

    def drop() -> None:  # an injected reset: no answer at all
        answer.status = None
        done.set()

    async def receive() -> Message:
        nonlocal body_given
        if not body_given:
            body_given = True
            return {"type": "http.request", "body": request.body or b"", "more_body": False}
        await done.wait()  # as a server's receive: nothing more until the client goes
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status = message["status"]
            answer.headers = list(message.get("headers", ()))
        elif message["type"] == "http.response.body":
            answer.content += message.get("body", b"")
            if not message.get("more_body", False):
                done.set()

    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": caller.scheme,
        "path": request.path,
        "raw_path": request.raw_path,
        "query_string": request.query,
        "root_path": "",
        "headers": _headers(request, session, caller),
        "client": caller.client,
        "server": (caller.host, None),
        "extensions": {ABORT_EXTENSION: drop},
    }
    try:
        await app(scope, receive, send)
    finally:
        done.set()
    return answer
