"""CPU of a lookup with tracing on against off (issue 44's goal: at most 1.3x), on the in-process road (the ASGI
app, no socket), the process's CPU time counted (time.process_time: the exporter's batching thread included), a
real OTLP/HTTP exporter batching to a local receiver (bench/otlp_receiver.py) that decodes every batch.

    .venv/bin/python -m bench.tracing_cost                 # 20000 lookups a side, 5 rounds, alternating
    .venv/bin/python -m bench.tracing_cost -n 2000 -r 2    # a quick look

The receiver's own decoding runs in this process too, and is not the mock's cost: its CPU time is measured in its
thread and taken out (`thread_time`), so the ratio is what the mock and its exporter cost.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--count", type=int, default=20000, help="lookups a side a round")
    parser.add_argument("-r", "--rounds", type=int, default=5)
    args = parser.parse_args()
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
    print(f"{spans} spans received ({args.rounds} rounds of {args.count} lookups, plus warm-up)")


if __name__ == "__main__":
    main()
