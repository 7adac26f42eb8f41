"""The server's CPU time per request, beside bare Starlette and, with --compare-tree, another checkout's mock.

Throughput on a shared machine moves with whatever else runs; the CPU a server process spends per answered request
moves far less. Each server (pinned to the server core, as bench.run does) gets wrk's load on each endpoint in turn,
rounds interleaved; the CPU it spent (utime + stime from /proc) over the requests wrk counted is one sample, and
the median of the rounds is shown with its ratio to bare Starlette and to the compared tree. Not part of CI.

    git archive main mock_server openapi.yaml admin fixtures | tar -x -C .bench/snap-main
    .venv/bin/python -m bench.cpu_per_request --compare-tree .bench/snap-main
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.harness import ROOT, Harness, cpu_seconds, ensure_wrk
from bench.sections import script_args
from bench.servers import BARE, ENDPOINTS, mock_spec


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cpu_per_request", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument("--compare-tree", type=Path, help="another checkout whose mock gets a column of its own")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0, help="of load per sample (after a 1 s warm-up)")
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args(argv)
    specs = [mock_spec("this tree", tree=ROOT)]
    if args.compare_tree is not None:
        specs.append(mock_spec(f"{args.compare_tree}", tree=args.compare_tree.resolve()))
    specs.append(BARE)
    samples: dict[tuple[str, str], list[float]] = {(s.label, e.name): [] for s in specs for e in ENDPOINTS}
    with Harness(ensure_wrk(), nice=-10 if os.geteuid() == 0 else 0) as harness:
        servers = {spec.label: harness.launch(spec) for spec in specs}
        time.sleep(1)
        for round_ in range(args.rounds):
            for endpoint in ENDPOINTS:
                for spec in specs:
                    server = servers[spec.label]
                    extra = script_args(harness, endpoint)
                    harness.run_wrk(server.port, endpoint.path, endpoint.script, 1, args.connections, extra)
                    before = cpu_seconds(server.process.pid)
                    result = harness.run_wrk(
                        server.port,
                        endpoint.path,
                        endpoint.script,
                        args.seconds,
                        args.connections,
                        script_args(harness, endpoint),
                        server.process.pid,
                    )
                    after = cpu_seconds(server.process.pid)
                    if before is None or after is None or not result.requests or result.errors:
                        raise SystemExit(f"{spec.label} / {endpoint.name}: no clean sample ({result.errors} errors)")
                    micros = (after - before) / result.requests * 1e6
                    samples[(spec.label, endpoint.name)].append(micros)
                    print(f"round {round_} {endpoint.name:14} {spec.label:24} {micros:7.1f} us CPU/request", flush=True)
    labels = [spec.label for spec in specs]
    print(f"\n| endpoint | {' | '.join(labels)} | this / bare |" + (" this / compared |" if len(specs) == 3 else ""))
    print("|---" * (len(labels) + 2 + (len(specs) == 3)) + "|")
    for endpoint in ENDPOINTS:
        median = {label: statistics.median(samples[(label, endpoint.name)]) for label in labels}
        cells = " | ".join(f"{median[label]:.1f} us" for label in labels)
        line = f"| {endpoint.name} | {cells} | {median['this tree'] / median[BARE.label]:.2f} |"
        if len(specs) == 3:
            line += f" {median['this tree'] / median[labels[1]]:.3f} |"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
