"""A real `mock-server` in a subprocess on 127.0.0.1, port 0, with raw-socket helpers, for what only a real
connection shows (timeouts, malformed HTTP, oversized heads, signals, a report written at shutdown, the real
port of `--port 0`). The one starter of a real server the tests share."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
READY = re.compile(r"^mock-server ready on http://(?P<host>[^ ]+):(?P<port>\d+) ")
START_TIMEOUT = 30.0


@dataclass
class LiveServer:
    proc: subprocess.Popen[bytes]
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def connect(self, timeout: float = 10.0) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=timeout)
        return sock

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    env.pop("PYTHONUNBUFFERED", None)
    return env


@contextmanager
def live_server(*args: str, env: dict[str, str] | None = None) -> Iterator[LiveServer]:
    """`python -m mock_server --port 0 ARGS`, up and ready; terminated (then killed) however the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", "0", *args],
        cwd=REPOSITORY,
        env=env or _env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = b""
        deadline = time.monotonic() + START_TIMEOUT
        while not line.endswith(b"\n"):
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(proc.stdout.fileno(), 1) if ready else b""
            if not chunk:
                proc.kill()
                _, err = proc.communicate(timeout=10)
                raise AssertionError(f"no ready line (exit {proc.returncode}): {err.decode()[-2000:]}")
            line += chunk
        match = READY.match(line.decode())
        assert match, line
        yield LiveServer(proc, match["host"], int(match["port"]))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate(timeout=10)
        else:
            proc.communicate(timeout=10)


def read_response(sock: socket.socket, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length (what this server always sends): status, headers, body."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a whole head: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body[:length]


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes the connection within `seconds` (whatever it sends before)."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
