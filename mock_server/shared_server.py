"""The server of a pytest-xdist run: a child process of the xdist controller (serving.SharedServer).

    python -m mock_server.shared_server FD OPTIONS_JSON

It serves `create_app(Settings(**options))` as mock-server does (mock_server/server.py) on the socket it inherits
as file descriptor FD, bound and listening already (the controller gave its URL to every worker before this
process started; the calls that came first wait in the socket's backlog). It stops when its standard input ends:
the controller closes it at the end of the run, and the kernel closes it when the controller dies however it dies,
so that no server outlives its run.

Why a process and not a thread of the controller: the controller's own thread is busy for the whole run with the
workers' reports, and a server thread beside it takes turns with it for the one interpreter lock; with `-n 4` on two
cores that made each test wait for both (issue 34: about 6 ms more a test than a server a process of its own).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any


def _stop_when_stdin_ends() -> None:
    """Wait for the end of standard input, then end the process at once: its owner is gone or done, so there is
    no one left to answer, and an in-memory mock has nothing to keep (no state file, no coverage report)."""
    try:
        while sys.stdin.buffer.read(4096):
            pass
    finally:
        os._exit(0)


def main(argv: list[str]) -> None:
    descriptor, options = int(argv[0]), json.loads(argv[1])
    listening = socket.socket(fileno=descriptor)
    threading.Thread(target=_stop_when_stdin_ends, name="owner-watch", daemon=True).start()

    from mock_server.app import create_app
    from mock_server.server import Server
    from mock_server.settings import Settings

    given: dict[str, Any] = {"port": 0, "admin_token": options.get("admin_token")}
    if options.get("fixtures"):
        given["fixtures"] = Path(options["fixtures"])
    settings = Settings(**given)
    try:
        app = create_app(settings)
    except Exception as exc:  # e.g. a scenario that does not load: one line, which the controller's summary shows
        print(f"{type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
        os._exit(1)  # the socket closes with the process: the calls waiting on it are refused, not left to wait
    Server(app, settings).run([listening])


if __name__ == "__main__":
    main(sys.argv[1:])
