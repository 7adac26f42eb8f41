"""A real connection to an app of this process: uvicorn in a thread, with mock-server's own HTTP protocol
(http/connection.py: its deadlines, its Host rule) and no WebSocket, as `mock-server` runs it, on 127.0.0.1, port 0.
For what only a socket shows (a dropped connection, the Host header) in the default tier: no child process."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from mock_server.http.connection import protocol_class
from mock_server.http.hosts import HostPolicy
from mock_server.state.bounds import ConnectionLimits

SAFETY = 10.0  # seconds: only a broken server waits this long


@contextmanager
def threaded_server(app: ASGIApp, allowed_hosts: Iterable[str] = (), **options: Any) -> Iterator[int]:
    """Serve `app` until the block ends; yields the port. `allowed_hosts` as `--allowed-hosts` takes them;
    `options`: uvicorn.Config's, over the ones mock-server runs with (e.g. `date_header=True`)."""
    settings: dict[str, Any] = {
        "host": "127.0.0.1",
        "port": 0,
        "lifespan": "off",
        "log_config": None,
        "ws": "none",
        # as mock_server.cli.uvicorn_config: no access log, no server or date header (uvicorn's default headers,
        # which would send every JSON answer down the ASGI road instead of http/connection.send_json_whole)
        "access_log": False,
        "server_header": False,
        "date_header": False,
        "http": protocol_class(ConnectionLimits(), HostPolicy.build(allowed_hosts, "127.0.0.1")),
    }
    config = uvicorn.Config(app, **{**settings, **options})
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="threaded-test-server", daemon=True)
    thread.start()
    try:
        for _ in range(int(SAFETY * 100)):
            if server.started or not thread.is_alive():
                break
            threading.Event().wait(0.01)
        assert server.started, "the threaded server did not start"
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=SAFETY)


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
