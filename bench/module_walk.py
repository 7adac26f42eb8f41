"""Which modules of the package one request passes through, on a real server.

Serves the default app as mock-server does (mock_server/server.py, its HTTP protocol, uvicorn's loop) in a thread
of this process, warms it with WARM requests of each kind, then profiles the server's thread (`sys.setprofile`,
through `threading.setprofile`) while one more request of each kind is answered over a kept-alive connection, and
prints the distinct `mock_server` modules entered by Python frames, and whether a frame of mock_server/server.py
ran after the application was entered (a return trip from the app into the server). Each request is profiled
TRIES times; the fewest modules count (a timer of uvicorn's loop firing meanwhile would add its own).

    .venv/bin/python -m bench.module_walk                     # this checkout
    .venv/bin/python -m bench.module_walk --tree /tmp/main    # another checkout's package, same venv

tests/tooling/test_module_walk.py holds the counts (ISSUE_LIMITS) in the default tier with this very walk.
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WARM = 50
TRIES = 3
# The most modules issue 41 lets each request enter, and the app-side module the first step of the app is in.
ISSUE_LIMITS = {"lookup": 12, "limit": 16}
APP_SIDE = ("mock_server/http/application.py", "mock_server/http/session_url.py", "mock_server/http/pipeline.py")
SERVER = "mock_server/server.py"


@dataclass(frozen=True)
class Walk:
    modules: tuple[str, ...]  # package-relative paths, in the order first entered
    server_after_app: bool  # a frame of mock_server/server.py ran once the app was entered


class _Recorder:
    """The profile function of the server's thread: while `on`, the package's modules whose frames are called."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.on = False
        self.modules: dict[str, None] = {}
        self.app_entered = False
        self.server_after_app = False

    def start(self) -> None:
        self.modules, self.app_entered, self.server_after_app = {}, False, False
        self.on = True

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on or event != "call":
            return
        filename = frame.f_code.co_filename
        if not filename.startswith(self.package):
            return
        module = "mock_server/" + filename[len(self.package) :].lstrip(os.sep).replace(os.sep, "/")
        self.modules[module] = None
        if module in APP_SIDE:
            self.app_entered = True
        elif module == SERVER and self.app_entered:
            self.server_after_app = True


def walk(tries: int = TRIES, warm: int = WARM) -> dict[str, Walk]:
    """The walk of a lookup and of a limit change through a real server of this process."""
    import mock_server
    from bench.servers import LIMIT_BODY, LIMIT_PATH, LOOKUP_PATH
    from mock_server.app import create_app
    from mock_server.server import Server
    from mock_server.settings import Settings

    recorder = _Recorder(str(Path(mock_server.__file__).resolve().parent))
    requests = {"lookup": ("GET", LOOKUP_PATH, None, 200), "limit": ("POST", LIMIT_PATH, LIMIT_BODY, 201)}
    threading.setprofile(recorder)  # threads started from now on: the server's
    try:
        server = Server(create_app(), Settings(port=0), configure_logging=False)
        url = server.start(10.0)
    finally:
        threading.setprofile(None)
    walks: dict[str, Walk] = {}
    try:
        port = int(url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Content-Type": "application/json"}

        def send(method: str, path: str, body: str | None, expected: int) -> None:
            connection.request(method, path, body, headers if body else {})
            response = connection.getresponse()
            response.read()
            if response.status != expected:
                raise RuntimeError(f"{method} {path} answered {response.status}, expected {expected}")

        for key, request in requests.items():
            for _ in range(warm):
                send(*request)
            seen: list[Walk] = []
            for _ in range(tries):
                recorder.start()
                send(*request)
                recorder.on = False
                seen.append(Walk(tuple(recorder.modules), recorder.server_after_app))
            walks[key] = min(seen, key=lambda w: len(w.modules))
        connection.close()
    finally:
        server.halt()
    return walks


def report(walks: dict[str, Walk]) -> str:
    lines = []
    for key, found in walks.items():
        verdict = "within" if len(found.modules) <= ISSUE_LIMITS[key] else "OVER"
        lines.append(
            f"{key}: {len(found.modules)} modules ({verdict} issue 41's {ISSUE_LIMITS[key]}); "
            f"server.py after the app: {'yes' if found.server_after_app else 'no'}"
        )
        lines += [f"    {module}" for module in found.modules]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, help="the checkout whose mock_server is walked (a child process)")
    args = parser.parse_args()
    if args.tree is not None:  # this script by its path, the package (and bench/servers.py) from the other tree
        env = {**os.environ, "PYTHONPATH": str(args.tree.resolve())}
        subprocess.run([sys.executable, str(Path(__file__).resolve())], check=True, env=env, cwd=args.tree)
        return
    print(report(walk()))


if __name__ == "__main__":
    main()
