"""Reading a request's body off the connection: bounded in size and in time."""

from __future__ import annotations

import asyncio

from starlette.requests import Request

from mock_server.domain.errors import PayloadTooLarge, RequestTimeout
from mock_server.wire.decoding import MAX_BODY_BYTES


async def read_bytes(request: Request, declared: str | None, timeout: float | None = None) -> bytes:
    """The raw body, refusing more than MAX_BODY_BYTES without reading it all (`declared`: its Content-Length),
    and a body that has not arrived whole within `timeout` seconds (408: a stalled upload holds nothing)."""
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"The body is over {MAX_BODY_BYTES} bytes.")
    chunks = []
    size = 0
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise PayloadTooLarge(f"The body is over {MAX_BODY_BYTES} bytes.")
                chunks.append(chunk)
    except TimeoutError:
        # The rest of the body may still come: the connection cannot be reused.
        raise RequestTimeout(
            f"The body did not arrive within {timeout:g} s ({size} bytes came).", headers={"Connection": "close"}
        ) from None
    return b"".join(chunks)
