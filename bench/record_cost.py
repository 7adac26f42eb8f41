"""What `mock-server record` adds to a call: its latency beside a direct call to the target, median over many.

A target (`mock-server` on the default scenario), and in front of it shadow mode (`mock-server --shadow`, the
same forwarding without the recording) and a recorder (`mock-server record --target`), run as child processes on
loopback; one client with a kept-alive connection to each sends the same calls, interleaved (a direct call, the
same through shadow mode, then through the recorder): the pending event's lookup, and a limit change of an
account registered (through the recorder) before the timing. Shadow mode's column shows what of the cost is the
forwarding itself. A call's figure is the wall time from
sending the request to the last byte of the answer; the report gives each operation's median both ways and the
difference, against the target of 5 ms. One run, not part of CI:

    .venv/bin/python -m bench.record_cost                 # 1000 calls of each operation each way
    .venv/bin/python -m bench.record_cost --calls 300
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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
def server(*args: str) -> Iterator[tuple[int, int]]:
    """`mock-server ARGS --port 0` up; its port and pid. SIGTERM (then a kill) when the block ends."""
    command = [sys.executable, "-m", "mock_server", *args, "--port", "0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + START_SECONDS
        line = process.stdout.readline()
        match = READY.match(line)
        if match is None or time.monotonic() > deadline:
            raise RuntimeError(f"{' '.join(args)}: no ready line ({line!r})")
        yield int(match[1]), process.pid
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


def cpu_ms(pid: int) -> float:
    """The CPU time (user and system) a process has used, in ms (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


ROADS = ("direct", "shadow", "record")  # to the target; through `mock-server --shadow`; through `mock-server record`


@dataclass
class Figures:
    medians: dict[str, dict[str, float]]  # operation -> road -> median ms
    cpu_ms: dict[str, float]  # road -> CPU per call of the process in front of the target (direct: the target's)


def measure(calls: int) -> Figures:
    """Each operation by each road in turn, `calls` times, after 50 unmeasured rounds."""
    with tempfile.TemporaryDirectory() as work, server() as (target_port, target_pid):
        target = f"http://127.0.0.1:{target_port}"
        out = Path(work) / "bench.yaml"
        with (
            server("--shadow", target, "--scenario", "default") as (shadow_port, shadow_pid),
            server("record", "--target", target, "--out", str(out)) as (record_port, record_pid),
        ):
            ports = {"direct": target_port, "shadow": shadow_port, "record": record_port}
            pids = {"direct": target_pid, "shadow": shadow_pid, "record": record_pid}
            connections = {
                road: http.client.HTTPConnection("127.0.0.1", port, timeout=10) for road, port in ports.items()
            }
            timed(connections["record"], "POST", "/limits/account", REGISTRATION)
            operations = {
                "getExtraordinaryEvent": ("GET", LOOKUP, None),
                "createLimitUpdateRequest": ("POST", f"/limits/account/{ACCOUNT}/limit_update_request", CHANGE),
            }
            times: dict[str, dict[str, list[float]]] = {name: {road: [] for road in ROADS} for name in operations}
            for _warm_up in range(50):  # connections, caches and the recorder's first copies of the records
                for method, path, body in operations.values():
                    for road in ROADS:
                        timed(connections[road], method, path, body)
            cpu_before = {road: cpu_ms(pid) for road, pid in pids.items()}
            for _ in range(calls):
                for name, (method, path, body) in operations.items():
                    for road in ROADS:
                        times[name][road].append(timed(connections[road], method, path, body))
            cpu = {road: cpu_ms(pid) - cpu_before[road] for road, pid in pids.items()}
            for connection in connections.values():
                connection.close()
    through = calls * len(operations)
    return Figures(
        {name: {road: statistics.median(found) for road, found in by_road.items()} for name, by_road in times.items()},
        # The target answers its direct calls and the two others' forwarded ones.
        {"direct": cpu["direct"] / (3 * through), "shadow": cpu["shadow"] / through, "record": cpu["record"] / through},
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000, help="calls of each operation each way (default 1000)")
    args = parser.parse_args(argv)
    figures = measure(args.calls)
    load = os.getloadavg()[0]
    print(f"record mode's cost per call, median of {args.calls} calls each way (target: at most +{TARGET_MS} ms)")
    print(f"machine: {os.cpu_count()} cores, load average {load:.1f} at the end")
    print("| operation | direct to the target | through mock-server --shadow | through mock-server record | added |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for name, by_road in figures.medians.items():
        added = by_road["record"] - by_road["direct"]
        worst = max(worst, added)
        print(
            f"| {name} | {by_road['direct']:.2f} ms | {by_road['shadow']:.2f} ms | {by_road['record']:.2f} ms | "
            f"{added:+.2f} ms |"
        )
    cpu = figures.cpu_ms
    print(
        f"CPU per call: the target {cpu['direct']:.2f} ms; shadow mode {cpu['shadow']:.2f} ms (its own answer, the "
        f"forwarding, the comparison); record mode {cpu['record']:.2f} ms (the same, and the session kept in step)"
    )
    print(f"{'met' if worst <= TARGET_MS else 'MISSED'}: at most {worst:+.2f} ms added at the median")
    return 0 if worst <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
