"""Reading a request's body off the connection: bounded in size and in time."""

from __future__ import annotations

import asyncio

from starlette.requests import Request

from mock_server.domain.errors import PayloadTooLarge, RequestTimeout
from mock_server.wire.decoding import MAX_BODY_BYTES


async def read_bytes(
    request: Request,
    declared: str | None,
    timeout: float | None = None,
    limit: int = MAX_BODY_BYTES,
    over: str | None = None,
) -> bytes:
    """The raw body, refusing more than `limit` bytes without reading it all (`declared`: its Content-Length; `over`:
    the 413's message), and a body that has not arrived whole within `timeout` seconds (408: a stalled upload
    holds nothing)."""
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(over or f"The body is over {limit} bytes.")
    chunks = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise PayloadTooLarge(over or f"The body is over {limit} bytes.")
                chunks.append(chunk)
    except TimeoutError:
        # The rest of the body may still come: the connection cannot be reused.
        raise RequestTimeout(
            f"The body did not arrive within {timeout:g} s ({size} bytes came).", headers={"Connection": "close"}
        ) from None
    return b"".join(chunks)
