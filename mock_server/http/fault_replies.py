"""What an injected fault answers, and how it goes on the wire when that is not an ordinary response: no answer at
all (kind `reset`), a body dribbled over time (kind `slow_body`), or a quota's 429 with its Retry-After (kind
`quota`). Which fault a call gets is decided by its turn
(state/turn.py, state/faults.decide); the pipeline (http/pipeline.py) reaches this module through `injected` alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mock_server.domain.errors import ApiError, QuotaExceeded
from mock_server.http.handling import Reply
from mock_server.http.scope_keys import ABORT_EXTENSION
from mock_server.state.faults import NO_BODY, FaultKind

if TYPE_CHECKING:
    from mock_server.http.pipeline import Exchange, OperationRunner
    from mock_server.state.turn import Turn

MAX_PIECES = 10  # a slow body is sent in at most this many pieces, one per pause
# Every pause of a fault (its delay_ms, a slow body's pauses). Tests replace it (monkeypatch) to hold the server in
# a pause and let it go: no timed tests.
sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
# Statuses that must not carry content (RFC 9110): an injected fault with one answers no body.
NO_CONTENT = frozenset({204, 205, 304})


async def injected(runner: OperationRunner, exchange: Exchange, turn: Turn) -> Reply | None:
    """The reply of the fault the turn decided (after its delay), or None to go on. Answered before any validation
    or state change; what was sent is still journaled. A slow_body fault without a status only marks the call's
    answer to be dribbled. A fault matching on the body has it read (and refused, 413 or 408, as the call would be)
    before the turn decides."""
    if turn.fault_waits_for_body:
        body = NO_BODY
        if runner.takes_body:
            await runner.read_body(exchange)
            body = runner.json_or_nothing(exchange)
        turn.decide_fault(exchange.scope.get("path_params") or {}, body)
    fault, decision = turn.fault, turn.decision
    if fault is None or decision is None:
        return None
    runner.meter.count_fault(fault.kind.value)
    if turn.events is not None:
        turn.note(
            "pix_mock.fault.injected",
            {
                "pix_mock.fault_id": fault.fault_id,
                "pix_mock.fault.kind": fault.kind.value,
                "pix_mock.fault.status": fault.status or 0,
            },
        )
    if fault.kind is FaultKind.SLOW_BODY:
        exchange.dribble_ms = decision.delay_ms  # the delay is spent sending the body, not before it
    elif decision.delay_ms:  # its delay_ms, and its jitter drawn
        await sleep(decision.delay_ms / 1000)  # looked up per call: tests hold it
    if decision.retry_after_s is not None:
        reply = quota_refusal(fault.fault_id, turn.plan.operation_id, decision.retry_after_s)
    elif fault.kind is FaultKind.RESET:
        reply = Reply(0, off_spec=True, dropped=True, injected=True)  # no status: nothing at all is sent
    elif fault.kind is FaultKind.MALFORMED:
        assert fault.status is not None  # the admin handler gave it the operation's success status
        reply = Reply(fault.status, text=fault.text, media_type="application/json", off_spec=True, injected=True)
    elif fault.status is None:  # only the delay, or the real answer slowed: the call goes on as usual
        return None
    else:
        body = None if fault.status in NO_CONTENT else fault.default_body() if fault.body is None else fault.body
        reply = Reply(fault.status, body, off_spec=True, injected=True)
    if runner.takes_body:
        with contextlib.suppress(ApiError):  # too large to keep: the journal shows no body
            await runner.read_body(exchange)
    return reply


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
