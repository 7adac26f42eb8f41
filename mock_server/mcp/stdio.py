"""`mock-server mcp`: the MCP server over the process's stdin and stdout, on an app of its own.

The process is the agent's: one MCP session, working in one mock session (`mcp-` and a random suffix) that ends
with the process. stdout carries protocol messages only: the ready line and every log go to stderr.

A line of stdin is read up to MAX_LINE_BYTES (the HTTP endpoint's body bound); a longer one is skipped to its
end. Whatever the SDK cannot take for a message (a line too long, no JSON, JSON that is no JSON-RPC message) is
answered with a JSON-RPC error (-32700, -32600) of id null, as JSON-RPC asks, where the SDK would drop it without
a word and leave the client waiting.
"""

from __future__ import annotations

import json
import secrets
import sys
from typing import IO, TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError
from pydantic import ValidationError
from starlette.applications import Starlette

from mock_server.mcp.inprocess import Caller
from mock_server.mcp.jsonrpc import INVALID_REQUEST, PARSE_ERROR, invalid_id
from mock_server.mcp.names import DEFAULT_PRESET
from mock_server.mcp.server import CallerContext, Toolbox, build_server
from mock_server.wire.decoding import MAX_BODY_BYTES

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from mock_server.settings import Settings  # a type only: the porch calls in here, never the other way

MAX_LINE_BYTES = MAX_BODY_BYTES  # one message: as much as /__mock/mcp reads of a body
_CHUNK = 64 * 1024
_UNPARSEABLE = "\0\n"  # given to the SDK for a line refused already: its parser fails, and `refused` says why


def session_name() -> str:
    """The mock session of this process's MCP session."""
    return f"mcp-{secrets.token_hex(8)}"


class BoundedLines:
    """stdin's lines as text, each at most `limit` bytes: a longer one is read to its end, and it or a message
    whose id is no string or integer (which the SDK takes for a notification, never answered) is given as a line
    no parser takes, the error to answer in `refused`."""

    def __init__(self, stream: IO[bytes], limit: int = MAX_LINE_BYTES) -> None:
        self.stream = stream
        self.limit = limit
        self.refused: tuple[int, str] | None = None

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        line = await anyio.to_thread.run_sync(self._line, abandon_on_cancel=True)
        if line is None:
            raise StopAsyncIteration
        return line

    def _line(self) -> str | None:
        line = self.stream.readline(self.limit + 1)
        if not line:
            return None
        if len(line) > self.limit and not line.endswith(b"\n"):
            while (rest := self.stream.readline(_CHUNK)) and not rest.endswith(b"\n"):
                pass  # the rest of the line, dropped
            self.refused = PARSE_ERROR, f"Parse error: a line longer than {self.limit} bytes"
            return _UNPARSEABLE
        text = line.decode("utf-8", "replace")
        try:
            message = json.loads(text)
        except ValueError:
            return text  # the SDK's parser says so (refusal)
        if invalid_id(message):
            self.refused = INVALID_REQUEST, "Invalid Request: an id is a string or an integer"
            return _UNPARSEABLE
        return text


def refusal(failure: Exception, reason: tuple[int, str] | None) -> SessionMessage:
    """The JSON-RPC error answering a line the SDK could not read as a message (`reason`: why, when the reader
    knew already)."""
    not_json = isinstance(failure, ValidationError) and any(e["type"] == "json_invalid" for e in failure.errors())
    if reason is not None:
        code, message = reason
    elif not_json:
        code, message = PARSE_ERROR, "Parse error: a line that is no JSON"
    else:
        code, message = INVALID_REQUEST, "Invalid Request: no JSON-RPC message (an id is a string or an integer)"
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message)))


async def _answer_refusals(
    lines: BoundedLines,
    read_stream: MemoryObjectReceiveStream[SessionMessage | Exception],
    to_server: MemoryObjectSendStream[SessionMessage | Exception],
    write_stream: MemoryObjectSendStream[SessionMessage],
) -> None:
    """Hand the server every message; answer every line that is none."""
    async with to_server:
        async for item in read_stream:
            if isinstance(item, Exception):
                reason, lines.refused = lines.refused, None
                await write_stream.send(refusal(item, reason))
            else:
                await to_server.send(item)


def serve(app: Starlette, settings: Settings, banner: str, preset: str = DEFAULT_PRESET) -> int:
    """Serve MCP on stdio until stdin closes, listing the tools of `preset`; 0."""
    session = session_name()
    calling = CallerContext(session, Caller(token=settings.admin_token), preset)

    def context(ctx: ServerRequestContext[Any]) -> CallerContext:
        return calling

    server = build_server(Toolbox.of(app, app.state.specs, context))
    lines = BoundedLines(sys.stdin.buffer)

    async def run() -> None:
        async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
            print(f"mock-server ready on stdio (MCP, session {session}) {banner}", file=sys.stderr, flush=True)
            to_server, from_filter = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            async with anyio.create_task_group() as group:
                group.start_soon(_answer_refusals, lines, read_stream, to_server, write_stream)
                await server.run(from_filter, write_stream, server.create_initialization_options())
                group.cancel_scope.cancel()

    anyio.run(run)
    return 0
