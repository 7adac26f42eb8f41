"""Reading a request's body off the connection: bounded in size and in time."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect
from starlette.types import Receive

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
    holds nothing)."""
    if too_large(declared, limit):
        raise oversized(limit, over)
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(timeout):
            return await _read(receive, chunks, limit, over)
    except TimeoutError:
        # The rest of the body may still come: the connection cannot be reused.
        raise RequestTimeout(
            f"The body did not arrive within {timeout:g} s ({sum(map(len, chunks))} bytes came).",
            headers={"Connection": "close"},
        ) from None


async def _read(receive: Receive, chunks: list[bytes], limit: int, over: str | None) -> bytes:
    """The ASGI body messages joined (read into `chunks` as they come), as Starlette's `Request.stream()` reads
    them."""
    size = 0
    while True:
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
