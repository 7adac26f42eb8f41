"""Reading a request's body off the connection: bounded in size and in time."""

from __future__ import annotations

import asyncio

from starlette.requests import ClientDisconnect
from starlette.types import Receive

from mock_server.domain.errors import PayloadTooLarge, RequestTimeout
from mock_server.wire.decoding import MAX_BODY_BYTES


async def read_bytes(
    receive: Receive, declared: str | None, timeout: float | None = None, arrived: bool = False
) -> bytes:
    """The raw body, refusing more than MAX_BODY_BYTES without reading it all (`declared`: its Content-Length),
    and a body that has not arrived whole within `timeout` seconds (408: a stalled upload holds nothing).

    `arrived`: the server holds the whole body already (http/connection.body_arrived), so reading it cannot
    wait and needs no deadline; a deadline is a timer armed and cancelled, a few microseconds a request."""
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"The body is over {MAX_BODY_BYTES} bytes.")
    chunks: list[bytes] = []
    if arrived:
        return await _read(receive, chunks)
    try:
        async with asyncio.timeout(timeout):
            return await _read(receive, chunks)
    except TimeoutError:
        # The rest of the body may still come: the connection cannot be reused.
        raise RequestTimeout(
            f"The body did not arrive within {timeout:g} s ({sum(map(len, chunks))} bytes came).",
            headers={"Connection": "close"},
        ) from None


async def _read(receive: Receive, chunks: list[bytes]) -> bytes:
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
            if size > MAX_BODY_BYTES:
                raise PayloadTooLarge(f"The body is over {MAX_BODY_BYTES} bytes.")
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
