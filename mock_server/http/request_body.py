"""Reading a request's body off the connection: bounded in size and in time."""

from __future__ import annotations

import asyncio
import types
from collections.abc import Awaitable, Generator
from typing import Any, cast

from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive

from mock_server.domain.errors import PayloadTooLarge, RequestTimeout
from mock_server.wire.decoding import MAX_BODY_BYTES


def too_large(declared: str | None, limit: int) -> bool:
    """Whether the Content-Length `declared` is over `limit` (the body is refused without reading it)."""
    return declared is not None and declared.isdigit() and int(declared) > limit


def oversized(limit: int, over: str | None = None) -> PayloadTooLarge:
    """The 413 of a body over `limit` bytes (`over`: the operation's own message)."""
    return PayloadTooLarge(over or f"The body is over {limit} bytes.")


async def read_bytes(
    receive: Receive,
    declared: str | None,
    timeout: float | None = None,
    limit: int = MAX_BODY_BYTES,
    over: str | None = None,
) -> bytes:
    """The raw body, refusing more than `limit` bytes without reading it all (`declared`: its Content-Length; `over`:
    the 413's message), and a body that has not arrived whole within `timeout` seconds (408: a stalled upload
    holds nothing).

    A body the server holds whole already (nearly every one: it came with its head) is handed over by the first
    `receive()` without waiting, and needs no deadline: one is armed only once a receive has to wait. A deadline is
    a timer made and cancelled, about a tenth of a small POST's CPU (bench/cpu_cost.py)."""
    if too_large(declared, limit):
        raise oversized(limit, over)
    steps = receive().__await__()
    try:
        waits_on = next(steps)  # the receive's first step: done, or waiting for the client
    except StopIteration as done:
        message: Message = done.value
        body: bytes = message.get("body", b"")
        if message["type"] == "http.request" and not message.get("more_body", False) and len(body) <= limit:
            return body  # whole, in one message
        started: Awaitable[Message] = _at_once(message)  # anything else is read, refused or joined below
    else:
        started = _resumed(steps, waits_on)
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(timeout):
            return await _read(receive, chunks, limit, over, started)
    except TimeoutError:
        # The rest of the body may still come: the connection cannot be reused.
        raise RequestTimeout(
            f"The body did not arrive within {timeout:g} s ({sum(map(len, chunks))} bytes came).",
            headers={"Connection": "close"},
        ) from None


@types.coroutine
def _resumed(steps: Generator[Any, Any, Message], waits_on: Any) -> Generator[Any, Any, Message]:
    """The rest of an awaitable whose first step was taken already and yielded `waits_on`: what `yield from`
    does (PEP 380), for one begun outside it. The event loop's answers and its cancellation go on to it."""
    while True:
        try:
            sent = yield waits_on
        except GeneratorExit:
            steps.close()
            raise
        except BaseException as exc:  # a cancellation (the deadline) among them: the receive gets it
            try:
                waits_on = steps.throw(exc)
            except StopIteration as done:
                return cast(Message, done.value)
        else:
            try:
                waits_on = steps.send(sent)
            except StopIteration as done:
                return cast(Message, done.value)


async def _at_once(message: Message) -> Message:
    return message


async def _read(
    receive: Receive, chunks: list[bytes], limit: int, over: str | None, started: Awaitable[Message] | None
) -> bytes:
    """The ASGI body messages joined (read into `chunks` as they come, the first from `started`, a receive under
    way), as Starlette's `Request.stream()` reads them."""
    size = 0
    while True:
        if started is not None:
            message = await started
            started = None
        else:
            message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect
        chunk: bytes = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise oversized(limit, over)
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
