"""`make fuzz`: the real server under uvicorn, `st run` against both specs with every check, then stop.

Exits non-zero on any finding. Usage: python scripts/fuzz.py [--max-examples N] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
READY = "mock-server ready on "


def start_server() -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [str(BIN / "mock-server"), "--port", "0", "--validate-responses", "--log-level", "warning"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if line.startswith(READY):
            return server, line[len(READY) :].split()[0]
        if not line and server.poll() is not None:
            break
    server.kill()
    raise SystemExit("the server did not start")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-examples", type=int, default=1000)
    parser.add_argument("--workers", default="1")  # schemathesis 4.32 + Python 3.11 ast is not thread-safe
    args = parser.parse_args()
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "mock_server.schemathesis_hooks", "PYTHONPATH": str(ROOT)}
    server, url = start_server()
    failures = 0
    try:
        for spec in ("openapi.yaml", "admin/openapi.yaml"):
            command = [
                str(BIN / "st"),
                "run",
                spec,
                "--url",
                url,
                "--checks",
                "all",
                "--continue-on-failure",
                "--max-redirects",
                "0",
                "--max-examples",
                str(args.max_examples),
                "--workers",
                args.workers,
                "--phases",
                "examples,coverage,fuzzing,stateful",
                "--suppress-health-check",
                "all",
            ]
            print("$", " ".join(command), flush=True)
            started = time.monotonic()
            result = subprocess.run(command, cwd=ROOT, env=env, check=False)
            print(f"{spec}: exit {result.returncode} in {time.monotonic() - started:.0f} s", flush=True)
            failures += result.returncode != 0
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
