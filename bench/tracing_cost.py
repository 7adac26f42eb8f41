"""CPU per request with tracing on against off (issue 44's goal: a lookup at most 1.3x), two ways.

The server (default): `python -m mock_server` twice, one of them with `--otel-endpoint` to a real OTLP/HTTP receiver in
a process of its own (bench/otlp_receiver.py, which decodes every batch), driven by wrk in interleaved rounds as
bench/cpu_cost.py drives them (the server pinned to core 0, wrk to core 1, CPU from /proc: every thread of the
server, its exporter's included). The ratio is the traced server's CPU per request over the other's, round by
round; the spans the receiver got are counted against the requests the traced server answered (a span the batch
processor dropped would cost nothing, and make the ratio lie).

In process (`--in-process`): the ASGI app called on one event loop, no socket, no uvicorn: the harshest ratio (the
same span's cost over a smaller denominator), the process's CPU time counted (time.process_time: the exporter's
batching thread included), the receiver in a thread of this process, its CPU taken out.

    .venv/bin/python -m bench.tracing_cost                          # the server: 20 rounds of 1 s, both endpoints
    .venv/bin/python -m bench.tracing_cost --rounds 5               # a quick look
    .venv/bin/python -m bench.tracing_cost --in-process -n 20000 -r 5
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.otlp_receiver import otlp_receiver
from bench.servers import LOOKUP_PATH


def driver(app: Any) -> Callable[[], None]:
    """A lookup answered once through the app, on one event loop."""
    loop = asyncio.new_event_loop()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": LOOKUP_PATH,
        "raw_path": LOOKUP_PATH.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8080"), (b"user-agent", b"wrk")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8080),
    }
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    def once() -> None:
        loop.run_until_complete(app(dict(scope), receive, send))

    once()
    if statuses != [200]:
        raise SystemExit(f"the lookup answered {statuses}")
    return once


def cpu_of(once: Callable[[], None], count: int, flush: Callable[[], Any] | None) -> float:
    """CPU seconds of `count` lookups, the spans they made sent (flushed) before the clock stops."""
    for _ in range(min(count, 1000)):
        once()
    if flush is not None:
        flush()
    started = time.process_time()
    for _ in range(count):
        once()
    if flush is not None:
        flush()
    return time.process_time() - started


def on_a_server(rounds: int, seconds: float, warmup: float, connections: int) -> int:
    """The traced server against the untraced one (the module's first way); prints the table, returns 0 when the
    lookup meets the goal and every answered request's span arrived."""
    from bench.cpu_cost import MEASURED, Sample, _sample
    from bench.harness import Harness, ensure_wrk, http_call, log
    from bench.servers import mock_spec

    receiver = subprocess.Popen(
        [sys.executable, "-m", "bench.otlp_receiver"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert receiver.stdout is not None
        url = receiver.stdout.readline().strip()
        specs = [mock_spec("tracing off"), mock_spec("tracing on", "--otel-endpoint", url)]
        samples: dict[tuple[str, str], list[Sample]] = {}
        with Harness(ensure_wrk()) as harness:
            servers = {spec.label: harness.launch(spec) for spec in specs}
            for endpoint in MEASURED:
                for server in servers.values():
                    status, body = http_call(server.port, endpoint.method, endpoint.path, endpoint.sample_body)
                    if status != endpoint.status:
                        raise SystemExit(f"{endpoint.name} answered {status}: {body[:200]!r}")
                    harness.run_wrk(server.port, endpoint.path, endpoint.script, warmup, connections)
            for number in range(rounds):
                order = list(servers) if number % 2 == 0 else list(reversed(servers))
                for endpoint in MEASURED:
                    for label in order:
                        sample = _sample(harness, servers[label], endpoint, seconds, connections)
                        samples.setdefault((label, endpoint.key), []).append(sample)
                        log(f"round {number + 1}/{rounds} {label} / {endpoint.name}: {sample.us_per_request:.1f} µs")
            traced = servers["tracing on"]
            answered = _answered(http_call(traced.port, "GET", "/__mock/metrics", None)[1])
            harness.stop(traced.process)  # a graceful stop: the spans still queued are sent
        spans = int(http_call(int(url.rsplit(":", 1)[1]), "GET", "/spans", None)[1])
    finally:
        receiver.communicate(timeout=10)
    met = True
    print("| endpoint | CPU µs a request, off | on | on / off (median of rounds) | lowest | highest | goal |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for endpoint in MEASURED:
        off, on = samples[("tracing off", endpoint.key)], samples[("tracing on", endpoint.key)]
        ratios = [b.us_per_request / a.us_per_request for a, b in zip(off, on, strict=True)]
        ratio = statistics.median(ratios)
        goal = "1.3x" if endpoint.key == "lookup" else ""
        if endpoint.key == "lookup":
            met = met and ratio <= 1.3
        print(
            f"| {endpoint.name} | {statistics.median(s.us_per_request for s in off):.1f} | "
            f"{statistics.median(s.us_per_request for s in on):.1f} | **{ratio:.2f}x** | {min(ratios):.2f}x | "
            f"{max(ratios):.2f}x | {goal} |"
        )
    print(f"\nspans received: {spans:,} of the {answered:,} requests the traced server answered")
    return 0 if met and spans >= answered else 1


def _answered(exposition: bytes) -> int:
    """The requests a server answered, by its own count (pix_mock_requests_total, every operation and status)."""
    from prometheus_client.parser import text_string_to_metric_families

    return int(
        sum(
            sample.value
            for family in text_string_to_metric_families(exposition.decode())
            if family.name == "pix_mock_requests"
            for sample in family.samples
            if sample.name == "pix_mock_requests_total"
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--in-process", action="store_true", help="the app called in this process (the second way)")
    parser.add_argument("--rounds", type=int, default=20, help="the server's interleaved rounds")
    parser.add_argument("--seconds", type=float, default=1.0, help="a wrk run's length")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("-n", "--count", type=int, default=20000, help="in process: lookups a side a round")
    parser.add_argument("-r", "--in-process-rounds", type=int, default=5)
    args = parser.parse_args()
    if not args.in_process:
        raise SystemExit(on_a_server(args.rounds, args.seconds, args.warmup, args.connections))
    args.rounds = args.in_process_rounds
    # A round's spans all kept until its flush: this loop never lets the queue's thread keep up (it waits for the
    # GIL), and a span dropped would cost nothing.
    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str(args.count + 1000))
    from mock_server.app import create_app
    from mock_server.settings import Settings

    with otlp_receiver() as receiver:
        traced_app = create_app(Settings(otel_endpoint=receiver.url))
        tracing = traced_app.state.server.tracing
        plain, traced = driver(create_app()), driver(traced_app)
        off, on = [], []
        for _ in range(args.rounds):
            off.append(cpu_of(plain, args.count, None))
            decoded_before = receiver.cpu_seconds
            spent = cpu_of(traced, args.count, lambda: tracing.provider.force_flush(30000))
            on.append(spent - (receiver.cpu_seconds - decoded_before))
        tracing.shutdown()
        spans = len(receiver.spans())
    off_us, on_us = (statistics.median(side) / args.count * 1e6 for side in (off, on))
    print(f"lookup CPU, tracing off: {off_us:.1f} us; on: {on_us:.1f} us; ratio {on_us / off_us:.2f}x (goal <= 1.3x)")
    made = 1 + args.rounds * (args.count + min(args.count, 1000))  # the driver's first lookup, then the rounds'
    print(f"{spans} spans received of the {made} lookups traced ({args.rounds} rounds of {args.count}, warm-ups too)")


if __name__ == "__main__":
    main()
