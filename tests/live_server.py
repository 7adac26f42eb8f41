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
from typing import Any

import httpx

REPOSITORY = Path(__file__).resolve().parents[1]
READY = re.compile(
    r"^mock-server ready on (?P<scheme>https?)://(?P<host>[^ ]+):(?P<port>\d+)"
    r" \(scenario (?P<scenario>\S+): (?P<events>\d+) events?, (?P<accounts>\d+) accounts?\)$"
)
START_TIMEOUT = 30.0
EXIT_TIMEOUT = 30.0


@dataclass
class LiveServer:
    proc: subprocess.Popen[bytes]
    ready: re.Match[str]  # the ready line: host, port, scenario, events, accounts

    @property
    def host(self) -> str:
        return self.ready["host"]

    @property
    def port(self) -> int:
        return int(self.ready["port"])

    @property
    def url(self) -> str:
        return f"{self.ready['scheme']}://{self.host}:{self.port}"

    def client(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=10.0, **kwargs)

    def connect(self, timeout: float = 10.0) -> socket.socket:
        return socket.create_connection((self.host, self.port), timeout=timeout)

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)


def server_env(**overrides: str) -> dict[str, str]:
    """The test's environment without any MOCK_SERVER_* variable of the caller's, plus `overrides`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    env.pop("PYTHONUNBUFFERED", None)  # the ready line must be flushed by the server itself
    env.update(overrides)
    return env


def server_command(*args: str) -> list[str]:
    """`mock-server ARGS` as this interpreter runs it."""
    return [sys.executable, "-m", "mock_server", *args]


def run_command(
    *args: str, env: dict[str, str] | None = None, timeout: float = EXIT_TIMEOUT, cwd: Path = REPOSITORY
) -> subprocess.CompletedProcess[str]:
    """`mock-server ARGS` run to its end (check, a probe, a start-up that fails): its status and output as text."""
    return subprocess.run(
        server_command(*args),
        cwd=cwd,
        env=env or server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def spawn(*args: str, env: dict[str, str] | None = None, stdout: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """`mock-server ARGS` started in the repository, with no input and the caller's MOCK_SERVER_* left out."""
    return subprocess.Popen(
        server_command(*args),
        cwd=REPOSITORY,
        env=env or server_env(),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE if stdout is subprocess.PIPE else subprocess.DEVNULL,
    )


def read_line(proc: subprocess.Popen[bytes], deadline: float) -> str | None:
    """One line of the child's stdout, or None when it closed stdout or the deadline passed."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buffer = b""
    while not buffer.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 1)  # byte by byte: nothing past the line is consumed
        if not chunk:
            return None
        buffer += chunk
    return buffer.decode()


def start(*args: str, env: dict[str, str] | None = None) -> LiveServer:
    """`mock-server ARGS` up and ready (its ready line read), or an AssertionError with what it wrote."""
    proc = spawn(*args, env=env)
    line = read_line(proc, time.monotonic() + START_TIMEOUT)
    if line is None:
        proc.kill()
        _, err = proc.communicate(timeout=EXIT_TIMEOUT)
        raise AssertionError(f"no ready line within {START_TIMEOUT}s (exit {proc.returncode}): {err.decode()[-2000:]}")
    match = READY.match(line.rstrip("\n"))
    if match is None:
        stop_process(proc)
        raise AssertionError(f"not the ready line: {line!r}")
    return LiveServer(proc, match)


def stop_process(proc: subprocess.Popen[bytes]) -> tuple[str, str]:
    """SIGTERM (a kill if it does not end in time), then what it wrote that was not read yet."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=EXIT_TIMEOUT)
    return (out or b"").decode(), (err or b"").decode()


@contextmanager
def live_server(*args: str, env: dict[str, str] | None = None) -> Iterator[LiveServer]:
    """`python -m mock_server --port 0 ARGS`, up and ready; terminated (then killed) however the block ends."""
    server = start("--port", "0", *args, env=env)
    try:
        yield server
    finally:
        stop_process(server.proc)


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
