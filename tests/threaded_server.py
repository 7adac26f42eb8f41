"""uvicorn with mock-server's own HTTP protocol (http/connection.py) in a thread of the test's process: a real
connection for what only one shows (a dropped connection, a body arriving in pieces), without a child process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from mock_server.http.connection import protocol_class
from mock_server.state.bounds import ConnectionLimits

SAFETY = 10.0  # seconds a step may take before the test gives up (a hang is a failure, never a wait)


@contextmanager
def threaded_server(app: ASGIApp) -> Iterator[int]:
    """`app` served on 127.0.0.1, port 0, in a thread of this process; yields the port."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="off", log_config=None, http=protocol_class(ConnectionLimits())
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="h13f-test-server", daemon=True)
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
