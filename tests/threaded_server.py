"""A real connection to an app of this process: served by mock_server/server.py in a daemon thread, as
`mock-server` serves (its HTTP protocol, http/connection.py: its deadlines, its Host rule; no WebSocket), on
127.0.0.1, port 0. For what only a socket shows (a dropped connection, the Host header) in the default tier: no child
process."""

from __future__ import annotations

import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from starlette.types import ASGIApp

from mock_server.server import Server
from mock_server.settings import Settings

SAFETY = 10.0  # seconds: only a broken server waits this long


@contextmanager
def threaded_server(app: ASGIApp, allowed_hosts: Iterable[str] = (), **options: Any) -> Iterator[int]:
    """Serve `app` until the block ends; yields the port. `allowed_hosts` as `--allowed-hosts` takes them;
    `options`: uvicorn.Config's, over the ones mock-server runs with (e.g. `date_header=True`)."""
    server = Server(
        app, Settings(port=0, allowed_hosts=tuple(allowed_hosts)), configure_logging=False, overrides=options
    )
    url = server.start(SAFETY)
    try:
        yield int(url.rsplit(":", 1)[1])
    finally:
        server.halt()


def exchange(port: int, raw: bytes, timeout: float = 5.0) -> tuple[bytes, bool]:
    """Send `raw` on a new connection; everything the server sent until it closed the connection or went quiet
    for `timeout` s, and whether it closed it."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(raw)
        received = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return received, False
            except ConnectionResetError:
                return received, True
            if not chunk:
                return received, True
            received += chunk
