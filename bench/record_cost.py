"""What `mock-server record` adds to a call: its latency beside a direct call to the target, median over many.

A target (`mock-server` on the default scenario) and a recorder in front of it (`mock-server record --target`)
run as child processes on loopback; one client with a kept-alive connection to each sends the same calls,
interleaved (a direct call, then the same call through the recorder): the pending event's lookup, and a limit
change of an account registered (through the recorder) before the timing. A call's figure is the wall time from
sending the request to the last byte of the answer; the report gives each operation's median both ways and the
difference, against the target of 5 ms. One run, not part of CI:

    .venv/bin/python -m bench.record_cost                 # 1000 calls of each operation each way
    .venv/bin/python -m bench.record_cost --calls 300
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
READY = re.compile(r"^mock-server ready on http://127\.0\.0\.1:(\d+) ")
TARGET_MS = 5.0
LOOKUP = "/event_conciliation/extraordinary_event/9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"
ACCOUNT = "bench-record-0001"
REGISTRATION = {
    "account_id": ACCOUNT,
    "registration_date": "2026-11-21T10:00:00-03:00",
    "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 100000}]}},
}
CHANGE = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 100000}]}}
START_SECONDS = 60


@contextmanager
def server(*args: str) -> Iterator[int]:
    """`mock-server ARGS --port 0` up; its port. SIGTERM (then a kill) when the block ends."""
    command = [sys.executable, "-m", "mock_server", *args, "--port", "0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_SECONDS
        line = process.stdout.readline()
        match = READY.match(line)
        if match is None or time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(args)}: no ready line ({line!r})")
        yield int(match[1])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def timed(connection: http.client.HTTPConnection, method: str, path: str, body: object = None) -> float:
    """One call's wall time in ms, its answer read whole."""
    payload = None if body is None else json.dumps(body)
    headers = {} if body is None else {"Content-Type": "application/json"}
    started = time.perf_counter()
    connection.request(method, path, payload, headers)
    response = connection.getresponse()
    response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status >= 300:
        raise RuntimeError(f"{method} {path}: {response.status}")
    return elapsed


def measure(calls: int) -> dict[str, tuple[float, float]]:
    """operation -> (median ms direct, median ms through the recorder)."""
    with tempfile.TemporaryDirectory() as work, server() as target_port:
        out = Path(work) / "bench.yaml"
        with server("record", "--target", f"http://127.0.0.1:{target_port}", "--out", str(out)) as recorder_port:
            direct = http.client.HTTPConnection("127.0.0.1", target_port, timeout=10)
            recorded = http.client.HTTPConnection("127.0.0.1", recorder_port, timeout=10)
            timed(recorded, "POST", "/limits/account", REGISTRATION)
            operations = {
                "getExtraordinaryEvent": ("GET", LOOKUP, None),
                "createLimitUpdateRequest": ("POST", f"/limits/account/{ACCOUNT}/limit_update_request", CHANGE),
            }
            times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in operations}
            for _warm_up in range(50):  # connections, caches and the recorder's first copies of the records
                for method, path, body in operations.values():
                    timed(direct, method, path, body)
                    timed(recorded, method, path, body)
            for _ in range(calls):
                for name, (method, path, body) in operations.items():
                    times[name][0].append(timed(direct, method, path, body))
                    times[name][1].append(timed(recorded, method, path, body))
            direct.close()
            recorded.close()
    return {name: (statistics.median(a), statistics.median(b)) for name, (a, b) in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls of each operation each way (default 1000)")
    args = parser.parse_args(argv)
    medians = measure(args.calls)
    print(f"record mode's cost per call, median of {args.calls} calls each way (target: at most +{TARGET_MS} ms)")
    print("| operation | direct to the target | through mock-server record | added |")
    print("|---|---|---|---|")
    worst = 0.0
    for name, (direct, recorded) in medians.items():
        added = recorded - direct
        worst = max(worst, added)
        print(f"| {name} | {direct:.2f} ms | {recorded:.2f} ms | {added:+.2f} ms |")
    print(f"{'met' if worst <= TARGET_MS else 'MISSED'}: at most {worst:+.2f} ms added at the median")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
