"""`make soak`: the adversarial mixes of issue 16 against one real server on 127.0.0.1, bounded in time.

While writers register accounts in their own sessions (and check, batch by batch, that every acknowledged one is
there), a bystander session looks an event up again and again, and the hostile clients do their worst at the same
time: slowloris heads, stalled uploads, oversized heads, malformed HTTP, 1 MiB invalid bodies that fill journals,
injected faults, big YAML exports. At the end a SIGTERM is sent while an upload is stalled.

It passes when: the server's RSS stays under --max-rss-mb and stops growing (the last third of the run adds less
than --max-growth-mb over the first third's peak); no response is a 5xx but the injected ones; the bystander's p99
is under --p99-ms; every acknowledged write is found; the slowloris and stalled connections were closed by the
server; SIGTERM ends the process within the shutdown deadline. It prints the figures (RSS curve, bystander
latencies, requests served by kind) and exits 1 on any failed condition.

Only loopback, only the server it starts, every loop bounded by the deadline.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

REPOSITORY = Path(__file__).resolve().parents[1]
READY = re.compile(r"^mock-server ready on http://(?P<host>[^ ]+):(?P<port>\d+) ")
PENDING_KEY = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"
EVENT_PATH = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"
WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}, {"start_time": "20:00:00-03:00", "amount": 300000}]
# Small timeouts so the hostile connections are cut (and come back) many times within one run.
SERVER_OPTIONS = (
    "--idle-timeout", "2", "--header-timeout", "2", "--body-timeout", "2", "--shutdown-timeout", "3",
    "--journal-total", "64MiB",
)  # fmt: skip


@dataclass
class Tally:
    statuses: Counter[tuple[str, int]] = field(default_factory=Counter)  # (kind, status) -> count
    unexpected: list[str] = field(default_factory=list)
    bystander_ms: list[float] = field(default_factory=list)
    rss_mb: list[tuple[float, float]] = field(default_factory=list)  # (seconds since start, MB)
    acknowledged: int = 0
    verified: int = 0
    lost: list[str] = field(default_factory=list)
    hostile_closed: Counter[str] = field(default_factory=Counter)

    def seen(self, kind: str, status: int, allowed_5xx: bool = False) -> None:
        self.statuses[(kind, status)] += 1
        if status >= 500 and not allowed_5xx and len(self.unexpected) < 20:
            self.unexpected.append(f"{kind}: {status}")


def start_server(extra: list[str]) -> tuple[subprocess.Popen[bytes], str, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--host", "127.0.0.1", "--port", "0", *SERVER_OPTIONS, *extra],
        cwd=REPOSITORY,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    match = READY.match(line)
    if not match:
        proc.kill()
        raise SystemExit(f"the server did not start: {line!r}")
    return proc, match["host"], int(match["port"])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Soak:
    def __init__(self, host: str, port: int, pid: int, seconds: float, tally: Tally) -> None:
        self.host, self.port, self.pid = host, port, pid
        self.url = f"http://{host}:{port}"
        self.started = time.monotonic()
        self.deadline = self.started + seconds
        self.tally = tally

    def running(self) -> bool:
        return time.monotonic() < self.deadline

    def client(self, session: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, headers={"X-Mock-Session": session}, timeout=30.0)

    # --- the well-behaved ------------------------------------------------------------------------------

    async def writer(self, index: int) -> None:
        """Registers accounts and changes their limits; every 300 acknowledged, checks they are all there (the
        state export), then resets the session so memory stays flat."""
        session = f"writer-{index}"
        async with self.client(session) as http:
            batch = 0
            while self.running():
                acknowledged: list[str] = []
                for number in range(300):
                    if not self.running():
                        break
                    account_id = f"w{index}-{batch}-{number}"
                    answer = await http.post(
                        "/limits/account",
                        json={
                            "account_id": account_id,
                            "registration_date": "2026-11-21T09:00:00-03:00",
                            "limit": {"pix": {"withdraw": WINDOWS}},
                        },
                    )
                    self.tally.seen("write", answer.status_code)
                    if answer.status_code == 201:
                        acknowledged.append(account_id)
                        change = await http.post(
                            f"/limits/account/{account_id}/limit_update_request",
                            json={"pix": {"withdraw": WINDOWS[:1]}},
                        )
                        self.tally.seen("write", change.status_code)
                state = await http.get("/__mock/state", params={"format": "yaml"} if batch % 2 else {})
                self.tally.seen("export", state.status_code)
                if state.status_code == 200:
                    text = state.text
                    found = set(re.findall(r"account_id: (\S+)", text)) if batch % 2 else None
                    if found is None:
                        found = {a["account_id"] for a in state.json()["accounts"]}
                    missing = [a for a in acknowledged if a not in found]
                    self.tally.lost += missing[:10]
                    self.tally.verified += len(acknowledged) - len(missing)
                self.tally.acknowledged += len(acknowledged)
                reset = await http.post("/__mock/reset")
                self.tally.seen("write", reset.status_code)
                batch += 1

    async def faulted(self) -> None:
        """A session whose lookups answer an injected 503 every other call: those 5xx are expected."""
        async with self.client("faulted") as http:
            while self.running():
                armed = await http.post(
                    "/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503, "times": 1}
                )
                self.tally.seen("faulted", armed.status_code)
                for _ in range(2):
                    answer = await http.get(EVENT_PATH)
                    self.tally.seen("faulted", answer.status_code, allowed_5xx=answer.status_code == 503)
                await asyncio.sleep(0.02)

    # --- the hostile ------------------------------------------------------------------------------------

    async def journal_filler(self, index: int) -> None:
        """1 MiB bodies of unknown keys: each is journaled (cut at 64 KiB) and answered with a bounded error."""
        body = json.dumps({f"k{n}_{'x' * 90}": n for n in range(9500)}).encode()[: 1024 * 1024 - 10]
        body = body.rsplit(b",", 1)[0] + b"}"
        async with self.client(f"filler-{index}") as http:
            while self.running():
                answer = await http.post("/limits/account", content=body, headers={"Content-Type": "application/json"})
                self.tally.seen("big-invalid", answer.status_code)
                if len(answer.content) > 64 * 1024 and len(self.tally.unexpected) < 20:
                    self.tally.unexpected.append(f"big-invalid: an error body of {len(answer.content)} bytes")
                await asyncio.sleep(0.5)

    async def _hold(self, kind: str, opening: bytes, drip: bytes | None) -> None:
        """One hostile connection at a time, reopened each time the server closes it; counts the closes."""
        while self.running():
            try:
                reader, writer = await asyncio.open_connection(self.host, self.port)
            except OSError:
                await asyncio.sleep(0.5)
                continue
            try:
                writer.write(opening)
                await writer.drain()
                while self.running():
                    try:
                        data = await asyncio.wait_for(reader.read(65536), timeout=1.0)
                    except TimeoutError:
                        if drip is not None:
                            writer.write(drip)
                            await writer.drain()
                        continue
                    if not data:
                        self.tally.hostile_closed[kind] += 1
                        break
                    match = re.match(rb"HTTP/1.1 (\d+)", data)
                    if match:
                        self.tally.seen(kind, int(match[1]))
            except (ConnectionError, OSError):
                self.tally.hostile_closed[kind] += 1
            finally:
                writer.close()

    async def slowloris(self) -> None:
        await self._hold("slowloris", b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-A: b\r\n")

    async def stalled_upload(self) -> None:
        opening = (
            b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Mock-Session: stalled\r\n"
            b'Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"account_id": '
        )
        await self._hold("stalled-upload", opening, b" ")

    async def idle(self) -> None:
        await self._hold("idle", b"", None)

    async def one_shot(self, kind: str, payload: bytes, pause: float) -> None:
        """Malformed HTTP or an oversized head, again and again: each must get its JSON answer."""
        while self.running():
            try:
                reader, writer = await asyncio.open_connection(self.host, self.port)
                writer.write(payload)
                with contextlib.suppress(ConnectionError):
                    await writer.drain()
                data = await asyncio.wait_for(reader.read(65536), timeout=10.0)
                match = re.match(rb"HTTP/1.1 (\d+)", data)
                self.tally.seen(kind, int(match[1]) if match else 0)
                if match and b"application/json" not in data.split(b"\r\n\r\n")[0]:
                    self.tally.unexpected.append(f"{kind}: not JSON")
                writer.close()
            except (ConnectionError, OSError, TimeoutError) as exc:
                self.tally.seen(kind, 0)
                if len(self.tally.unexpected) < 20:
                    self.tally.unexpected.append(f"{kind}: {type(exc).__name__}")
            await asyncio.sleep(pause)

    async def sample_rss(self) -> None:
        while self.running():
            self.tally.rss_mb.append((time.monotonic() - self.started, rss_mb(self.pid)))
            await asyncio.sleep(1.0)

    async def run(self, hostile_connections: int) -> None:
        tasks = [self.sample_rss(), self.faulted()]
        tasks += [self.writer(i) for i in range(4)]
        tasks += [self.journal_filler(i) for i in range(4)]
        tasks += [self.slowloris() for _ in range(hostile_connections)]
        tasks += [self.stalled_upload() for _ in range(hostile_connections // 10)]
        tasks += [self.idle() for _ in range(hostile_connections // 10)]
        tasks.append(self.one_shot("malformed", b"GET / HTTP/1.1\r\nBad Header: x\r\n\r\n", 0.1))
        big_head = b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * (1024 * 1024) + b"\r\n\r\n"
        tasks.append(self.one_shot("oversized-head", big_head, 0.5))
        await asyncio.gather(*tasks)


def bystander(url: str, seconds: float, results: multiprocessing.Queue[tuple[list[float], Counter[int]]]) -> None:
    """The bystander session, in a process of its own so that the harness's own load does not time it: one
    event lookup after another (10 ms apart), each timed."""
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    deadline = time.monotonic() + seconds
    with httpx.Client(base_url=url, headers={"X-Mock-Session": "bystander"}, timeout=30.0) as http:
        while time.monotonic() < deadline:
            started = time.perf_counter()
            statuses[http.get(EVENT_PATH).status_code] += 1
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(0.01)
    results.put((latencies, statuses))


def sigterm_with_a_stalled_upload(proc: subprocess.Popen[bytes], host: str, port: int, deadline: float) -> float:
    """Seconds from SIGTERM to the process's end, an upload stalled in flight."""
    import socket

    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        sock.sendall(b"Content-Length: 1000\r\n\r\n{")
        time.sleep(0.3)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return float("inf")
        return time.monotonic() - started


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--hostile-connections", type=int, default=300)
    parser.add_argument("--max-rss-mb", type=float, default=768.0)
    parser.add_argument("--max-growth-mb", type=float, default=64.0)
    parser.add_argument("--p99-ms", type=float, default=500.0)
    args = parser.parse_args(argv)

    random.seed(1)
    proc, host, port = start_server([])
    tally = Tally()
    try:
        soak = Soak(host, port, proc.pid, args.seconds, tally)
        results: multiprocessing.Queue[tuple[list[float], Counter[int]]] = multiprocessing.Queue()
        watcher = multiprocessing.Process(target=bystander, args=(soak.url, args.seconds, results))
        watcher.start()
        asyncio.run(soak.run(args.hostile_connections))
        tally.bystander_ms, statuses = results.get(timeout=60)
        watcher.join(timeout=10)
        for status, count in statuses.items():
            tally.seen("bystander", status)
            tally.statuses[("bystander", status)] += count - 1
            if status != 200:
                tally.unexpected.append(f"bystander: {status} x{count}")
        shutdown_seconds = sigterm_with_a_stalled_upload(proc, host, port, deadline=15.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    curve = tally.rss_mb
    third = max(1, len(curve) // 3)
    early_peak = max(mb for _, mb in curve[:third])
    late_peak = max(mb for _, mb in curve[-third:])
    peak = max(mb for _, mb in curve)
    served = sum(tally.statuses.values())
    p50, p99 = percentile(tally.bystander_ms, 0.50), percentile(tally.bystander_ms, 0.99)

    print(f"make soak: {args.seconds:.0f} s, {args.hostile_connections} slowloris connections held at a time")
    print("RSS (MB) every 10 s: " + ", ".join(f"{t:.0f}s {mb:.0f}" for t, mb in curve[::10]))
    print(f"RSS peak {peak:.0f} MB; first third's peak {early_peak:.0f} MB, last third's {late_peak:.0f} MB")
    print(
        f"bystander: {len(tally.bystander_ms)} lookups, p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
        f"max {max(tally.bystander_ms, default=0):.1f} ms"
    )
    print(f"responses read: {served}")
    by_kind: dict[str, Counter[int]] = {}
    for (kind, status), count in sorted(tally.statuses.items()):
        by_kind.setdefault(kind, Counter())[status] = count
    for kind, statuses in by_kind.items():
        print(f"  {kind}: " + ", ".join(f"{status}x{count}" for status, count in sorted(statuses.items())))
    print("hostile connections closed by the server: " + ", ".join(f"{k} {v}" for k, v in tally.hostile_closed.items()))
    print(f"writes acknowledged {tally.acknowledged}, found {tally.verified}, lost {len(tally.lost)}")
    print(f"SIGTERM with a stalled upload: exited after {shutdown_seconds:.2f} s")

    failures = []
    if peak > args.max_rss_mb:
        failures.append(f"RSS peak {peak:.0f} MB > {args.max_rss_mb:.0f} MB")
    if late_peak - early_peak > args.max_growth_mb:
        failures.append(f"RSS grew {late_peak - early_peak:.0f} MB in the run (> {args.max_growth_mb:.0f} MB)")
    if tally.unexpected:
        failures.append(f"unexpected answers: {tally.unexpected[:10]}")
    if not p99 < args.p99_ms:
        failures.append(f"bystander p99 {p99:.1f} ms >= {args.p99_ms:.0f} ms")
    if tally.lost or tally.verified != tally.acknowledged or not tally.acknowledged:
        failures.append(f"acknowledged writes missing: {tally.lost[:10]}")
    for kind in ("slowloris", "stalled-upload", "idle"):
        if tally.hostile_closed[kind] == 0:
            failures.append(f"no {kind} connection was ever closed by the server")
    if shutdown_seconds > 3 + 5:
        failures.append(f"SIGTERM took {shutdown_seconds:.1f} s with an upload stalled")
    for failure in failures:
        print(f"FAILED: {failure}")
    print("soak passed" if not failures else "soak FAILED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
