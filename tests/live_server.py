"""A real `python -m mock_server` in a subprocess, for what only a real server shows (shutdown, sockets).

Shared by the API tests of issue 13 (coverage report at shutdown, connection-level faults).
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
READY = re.compile(r"^mock-server ready on (?P<url>http://\S+) ")
TIMEOUT = 30.0


def _ready_line(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + TIMEOUT
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            raise AssertionError(f"no ready line within {TIMEOUT}s")
        chunk = os.read(proc.stdout.fileno(), 1)
        if not chunk:
            raise AssertionError(f"the server exited: {proc.wait()} {proc.stderr.read() if proc.stderr else b''!r}")
        line += chunk
    return line.decode()


@contextmanager
def live_server(*args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """(base URL, process) of a server on a free loopback port; terminated and waited for on exit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--host", "127.0.0.1", "--port", "0", *args],
        cwd=REPOSITORY,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        match = READY.match(_ready_line(proc))
        assert match, "not the ready line"
        yield match["url"], proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=TIMEOUT)
