"""`make bench` / `make bench-anchors`: end-to-end benchmark of the mock server over loopback -> BENCHMARKS.md.

Starts every server itself (pinned to core 0 with taskset), drives it with wrk (pinned to core 1, one
thread, 32 connections), and writes BENCHMARKS.md: throughput and latency of the event lookup, the account
limit change and the recipient add for the mock in its default and a quiet configuration and for a bare
Starlette app serving the same JSON, all from one run so the ratios cancel the machine's noise; with
`--anchors` also Prism and WireMock on the same routes. Then start-up time and RSS, the memory of 256 busy
sessions, scenarios of 1k..1M generated events (load time, RSS, lookup latency), and what the `pix_mock`
fixture costs a test against pytest-httpserver and respx (bench/fixture_cost.py).

Everything it starts it stops (bounded wrk runs, servers stopped when the harness closes); the whole run
keeps to `--time-budget` seconds, skipping a scale step that would not fit (and saying so in the report).

    .venv/bin/python -m bench.run [--anchors] [--duration 10] [--scale 1000,10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bench.cluster_bench import bench_cluster
from bench.cpu_cost import ROUNDS, SECONDS, bench_cpu
from bench.fixture_cost import bench_fixture_cost
from bench.harness import CAN_PIN, ROOT, WORK, Harness, ServerSpec, ensure_wrk, log
from bench.report import Results, RunInfo, git_revision, keep_written, render
from bench.sections import Load, bench_load_stages, bench_scale, bench_servers, bench_sessions, bench_startup
from bench.servers import BARE, ensure_anchor_tools, mock_spec, prism_spec, wiremock_spec, write_wiremock_stubs

SECTIONS = ("throughput", "cpu", "startup", "sessions", "scale", "cluster", "fixture")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help=f"which parts to run (comma-separated; default all: {', '.join(SECTIONS)})",
    )
    parser.add_argument("--anchors", action="store_true", help="also Prism and WireMock (npm, under bench/.tools/)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load per measured row (default 10)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of unmeasured load before each row")
    parser.add_argument(
        "--anchor-warmup",
        type=float,
        default=15.0,
        help="warm-up of Prism and WireMock per row (WireMock's JIT needs a long one to reach speed)",
    )
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--cpu-rounds", type=int, default=ROUNDS, help="interleaved rounds of the CPU-per-request section"
    )
    parser.add_argument(
        "--cpu-seconds", type=float, default=SECONDS, help="seconds of load per endpoint, server and round there"
    )
    parser.add_argument(
        "--scale", default="1000,10000,100000,1000000", help="event counts of the generated scenarios ('' for none)"
    )
    parser.add_argument(
        "--scale-syntax",
        default="json,yaml",
        help="syntaxes of the generated scenarios, in this order: json (JSON syntax, which YAML "
        "includes: how a program writes a big scenario) and/or yaml (block style)",
    )
    parser.add_argument("--sessions-seconds", type=float, default=20.0, help="load of the 256-sessions step (0: skip)")
    parser.add_argument(
        "--sessions-cap-seconds",
        type=float,
        default=120.0,
        help="then up to this long more, until every session's journal is full (0: skip)",
    )
    parser.add_argument("--startup-runs", type=int, default=5)
    parser.add_argument(
        "--fixture-tests", type=int, default=300, help="tests in the fixture-cost file (bench/fixture_cost.py)"
    )
    parser.add_argument("--fixture-rounds", type=int, default=10, help="measured rounds of the fixture cost")
    parser.add_argument(
        "--time-budget",
        type=float,
        default=14 * 60,
        help="seconds the whole run may take; a scale step that would not fit is skipped",
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=-10 if os.geteuid() == 0 else 0,
        help="priority of the servers and wrk (default -10 as root, else 0): on a shared machine "
        "it keeps other work from taking the measured cores",
    )
    parser.add_argument(
        "--tree",
        type=Path,
        default=ROOT,
        help="checkout whose mock_server/ is measured (default: this one), e.g. a `git archive` "
        "snapshot, to compare commits with the same harness",
    )
    parser.add_argument(
        "--compare-tree",
        type=Path,
        action="append",
        default=[],
        help="another checkout whose mock_server/ gets a 'mock default' row of its own in the throughput "
        "table, interleaved with the others (repeatable): before/after of a change in one run",
    )
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--command", default=None, help="the command shown in the report (make passes its own)")
    return parser


def server_specs(args: argparse.Namespace, tree: Path) -> list[ServerSpec]:
    specs = [
        mock_spec("mock default", tree=tree, note="`mock-server` with no options (log level warning, no access log)"),
        mock_spec(
            "mock quiet", "--log-level", "critical", "--no-admin", tree=tree, note="`--log-level critical --no-admin`"
        ),
        mock_spec(
            "mock --log-level info",
            "--log-level",
            "info",
            tree=tree,
            note="`--log-level info` as `make run` does: uvicorn's access log on, for reference",
        ),
        *(
            mock_spec(f"mock default at {other}", tree=other.resolve(), note=f"`mock-server` from {other}")
            for other in args.compare_tree
        ),
        BARE,
    ]
    if args.anchors:
        ensure_anchor_tools()
        specs += [prism_spec(), wiremock_spec(write_wiremock_stubs())]
    return specs


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    sections = {s.strip() for s in args.sections.split(",") if s.strip()}
    if unknown := sections - set(SECTIONS):
        raise SystemExit(f"bench: unknown sections {', '.join(sorted(unknown))} (choose from {', '.join(SECTIONS)})")
    load = Load(args.duration, args.warmup, args.anchor_warmup, args.connections)
    started = time.monotonic()
    deadline = started + args.time_budget
    command = args.command or "python -m bench.run " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if not CAN_PIN:
        log("fewer than 2 cores or no taskset: servers and wrk are NOT pinned")
    results = Results()
    revision = git_revision(args.tree.resolve())  # now: the tree may move while a long run goes on
    with Harness(ensure_wrk(), nice=args.nice, tree=args.tree.resolve()) as harness:

        def on_signal(signum: int, _frame: object) -> None:
            harness.stop_all()
            raise SystemExit(128 + signum)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        shutil.rmtree(WORK / "logs", ignore_errors=True)  # the servers' output of the previous run
        if "throughput" in sections:
            results.servers = bench_servers(harness, server_specs(args, harness.tree), load)
        if "cpu" in sections:
            cpu_specs = [
                spec for spec in server_specs(args, harness.tree) if spec.label.startswith(("mock default", "bare"))
            ]
            results.cpu = bench_cpu(
                harness, cpu_specs, args.cpu_rounds, args.cpu_seconds, args.warmup, args.connections
            )
        if "startup" in sections and args.startup_runs > 0:
            results.startup = bench_startup(harness, args.startup_runs)
        if "sessions" in sections and args.sessions_seconds > 0:
            results.sessions = bench_sessions(
                harness, args.sessions_seconds, args.connections, args.sessions_cap_seconds
            )
        if "fixture" in sections:
            results.fixture = bench_fixture_cost(harness, args.fixture_tests, args.fixture_rounds)
        if "cluster" in sections:  # before the scale steps, which take whatever time the budget has left
            results.cluster = bench_cluster(harness, load)
        if "scale" in sections:
            sizes = sorted(int(s) for s in args.scale.split(",") if s.strip())
            syntaxes = [s.strip() for s in args.scale_syntax.split(",") if s.strip()]
            for syntax in syntaxes:
                results.scale += bench_scale(harness, sizes, syntax, load, deadline, args.time_budget)
            results.load_stages = bench_load_stages(harness, syntaxes)
    elapsed = time.monotonic() - started
    info = RunInfo(command, revision, load, args.anchors, args.nice, harness.pin, harness.tree, elapsed)
    previous = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
    args.output.write_text(keep_written(previous, render(results, info)), encoding="utf-8")
    log(f"wrote {args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
