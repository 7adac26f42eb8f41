"""Servers on 127.0.0.1 that answer badly on purpose, for the mock as a client (verify-provider's target, shadow
mode's backend): too large, endless, a compression bomb, a bad gzip, dripping, nested 100,000 deep, HTML, a reset in
the middle of the answer; and the mock itself over mutual TLS, refusing bad client certificates with their alerts.
Each runs in a thread of its own, for one `with` block; every answer stops within LIFETIME seconds."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mock_server import cli_serve
from mock_server.app import create_app
from mock_server.server import Server
from mock_server.settings import Settings

LIFETIME = 20.0  # seconds any one answer may go on (an endless or dripping one), so no test can hang on it
Answer = Callable[[asyncio.StreamWriter], Awaitable[None]]


@contextmanager
def hostile(answer: Answer, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """A server answering every request with `answer` (after reading its head and body); its base URL."""
    started = threading.Event()
    state: dict[str, Any] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                await asyncio.wait_for(answer(writer), LIFETIME)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ssl.SSLError):
            pass
        except asyncio.CancelledError:  # the server stops with the `with` block: an answer still going ends here
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
        state["port"] = server.sockets[0].getsockname()[1]
        stop = asyncio.Event()
        state["stop"] = (asyncio.get_running_loop(), stop)
        started.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="hostile-server", daemon=True)
    thread.start()
    if not started.wait(20):
        raise RuntimeError("the hostile server did not start")
    scheme = "https" if tls else "http"
    try:
        yield f"{scheme}://127.0.0.1:{state['port']}"
    finally:
        loop, stop = state["stop"]
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=LIFETIME + 5)


def head(status: int = 200, content_type: str = "application/json", **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} OK", f"Content-Type: {content_type}"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def json_of_size(size: int) -> bytes:
    """A JSON object of exactly `size` bytes: one long string."""
    return b'{"pad": "' + b"a" * (size - 11) + b'"}'


def body(content: bytes, content_type: str = "application/json", **headers: str) -> Answer:
    """An answer with this body (sent in 64 KiB writes, as a large one would arrive)."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(head(200, content_type, Content_Length=str(len(content)), **headers))
        for start in range(0, len(content), 64 * 1024):
            writer.write(content[start : start + 64 * 1024])
            await writer.drain()

    return answer


def large(size: int, declared: bool = True) -> Answer:
    """A JSON answer of `size` bytes, its length declared, or sent chunked (nothing says how long it is)."""
    if declared:
        return body(json_of_size(size))
    content = json_of_size(size)

    async def answer(writer: asyncio.StreamWriter) -> None:
        writer.write(head(Transfer_Encoding="chunked"))
        for start in range(0, len(content), 64 * 1024):
            piece = content[start : start + 64 * 1024]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
        writer.write(b"0\r\n\r\n")

    return answer


async def endless(writer: asyncio.StreamWriter) -> None:
    """A chunked answer that never ends (until the client goes, or LIFETIME)."""
    writer.write(head(Transfer_Encoding="chunked") + b'5\r\n["aa"\r\n')
    piece = b',"' + b"a" * 65000 + b'"'
    deadline = time.monotonic() + LIFETIME
    while time.monotonic() < deadline:
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await writer.drain()


def gzip_bomb(size: int) -> bytes:
    """`size` bytes (whole MiBs) of spaces gzip-compressed: about a thousandth of `size`.

    Built, not compressed: a MiB of spaces deflated once, ended by a full flush (the compressor starts afresh, so
    every further MiB deflates to the same bytes), repeated, then gzip's trailer. Compressing all of it took 0.6 s
    for 64 MiB, at collection, in each xdist worker (three parametrizations)."""
    block = b" " * (1024 * 1024)
    count = size // len(block)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate: gzip's header and trailer below
    piece = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
    last = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS).flush()  # an empty final block
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # gzip, deflate, no name, no time, max compression, any OS
    return header + piece * count + last + struct.pack("<II", crc, count * len(block) & 0xFFFFFFFF)


def dripping(interval: float) -> Answer:
    """An answer written one byte every `interval` seconds, its status line too: no single read ever waits long."""

    async def answer(writer: asyncio.StreamWriter) -> None:
        for byte in head(Content_Length="2") + b"{}":
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(interval)

    return answer


async def reset_mid_answer(writer: asyncio.StreamWriter) -> None:
    """Half an answer, then a TCP reset (SO_LINGER 0)."""
    writer.write(head(Content_Length="1000") + b'{"status": "pai')
    await writer.drain()
    raw = writer.get_extra_info("socket")
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


@contextmanager
def mock_over_mutual_tls(server_cert: Path, server_key: Path, client_ca: Path) -> Iterator[str]:
    """The mock itself served over https, requiring a client certificate from `client_ca`'s clients, as
    `mock-server --tls-cert ... --client-ca ... --client-cert required` serves it: a refused certificate gets
    its TLS alert (expired, unknown ca, unsupported certificate, certificate required)."""
    settings = Settings(port=0, tls_cert=server_cert, tls_key=server_key, client_ca=client_ca)
    server = Server(create_app(settings), settings, cli_serve.server_tls_context(settings), configure_logging=False)
    url = server.start(30)
    try:
        yield url
    finally:
        server.halt()
