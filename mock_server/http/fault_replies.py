"""How an injected fault goes on the wire when it is not an ordinary response: no answer at all (kind `reset`),
a body dribbled over time (kind `slow_body`), or a quota's 429 with its Retry-After (kind `quota`). What the call
answers is decided in http/pipeline.py; these only send it (state/faults.py says which fault a call gets).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mock_server.domain.errors import QuotaExceeded
from mock_server.http.connection import ABORT_EXTENSION
from mock_server.http.handling import Reply

MAX_PIECES = 10  # a slow body is sent in at most this many pieces, one per pause
# Every pause of a fault (its delay_ms, a slow body's pauses). Tests replace it (monkeypatch) to hold the server in
# a pause and let it go: no timed tests.
sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


def quota_refusal(fault_id: str, operation_id: str, retry_after_s: int) -> Reply:
    """Kind `quota`, over its limit: 429 `quota_exceeded` and when the window ends (openapi.yaml documents it on
    every operation as the mock's own answer; an injected one, so never judged against the spec)."""
    error = QuotaExceeded(
        f"Quota {fault_id} of {operation_id} is spent for this window; the next opens in {retry_after_s} s.",
        headers={"Retry-After": str(retry_after_s)},
    )
    return Reply(error.status, error.body(), error.headers, off_spec=True, injected=True)


class ConnectionDropped(Exception):
    """Raised where the server cannot drop a connection (no ABORT_EXTENSION in the scope: an ASGI server other
    than mock-server's own, or Starlette's TestClient): the request gets no answer from the application."""


class DroppedConnection(Response):
    """Kind `reset`: no status, no header, no byte; the connection is closed with a TCP reset."""

    def __init__(self) -> None:
        super().__init__(b"", 200)  # never sent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        drop = scope.get("extensions", {}).get(ABORT_EXTENSION)
        if drop is None:
            raise ConnectionDropped("an injected reset fault: this server cannot drop the connection")
        drop()


def pieces(body: bytes, most: int = MAX_PIECES) -> list[bytes]:
    """`body` cut into `most` pieces of nearly equal size (fewer when it is shorter; none when it is empty)."""
    count = min(most, len(body))
    bounds = [len(body) * i // count for i in range(count + 1)] if count else [0]
    return [body[start:end] for start, end in itertools.pairwise(bounds)]


class DribbledResponse(Response):
    """Kind `slow_body`: `inner`'s head at once, then its body in pieces, each after a pause of
    `over_ms` / pieces, so the body ends `over_ms` after the head. Content-Length is kept: the client knows
    the answer is not complete until the last piece. A response without a body waits `over_ms` before its head."""

    def __init__(self, inner: Response, over_ms: int) -> None:
        self.status_code = inner.status_code
        self.body = inner.body
        self.raw_headers = inner.raw_headers
        self.background = None
        self.over = over_ms / 1000

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        parts = pieces(bytes(self.body))
        if not parts:
            await sleep(self.over)
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        if not parts:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        pause = self.over / len(parts)
        for index, part in enumerate(parts):
            await sleep(pause)
            await send({"type": "http.response.body", "body": part, "more_body": index < len(parts) - 1})
