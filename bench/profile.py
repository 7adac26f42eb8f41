"""Profile the mock server under the benchmark's load with py-spy: where a request's time goes.

Starts the server in its default configuration (pinned to core 0, as bench/run.py does), drives one
endpoint with wrk (core 1), samples the server with `py-spy record` meanwhile, and prints the hot spots:
self time (the frame on top of the stack) and total time (anywhere on the stack) per function, as a
share of the samples in which the server was busy. Before that, the same endpoint is measured unprofiled
on the mock and on the bare baseline, back to back, so the throughput comes with its ratio to the baseline
(the machine's speed and noise cancel out of the ratio, not out of the req/s). Raw stacks are kept under
.bench/ for a flame graph (`py-spy record` can also write SVG: pass `--svg`).

    .venv/bin/pip install py-spy     # once
    .venv/bin/python -m bench.profile --endpoint lookup --seconds 15
    .venv/bin/python -m bench.profile --endpoint limit --seconds 15
    .venv/bin/python -m bench.profile --endpoint load --events 20000    # scenario loading, no wrk
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.harness import BENCH, CLIENT_CORE, PYTHON, ROOT, SERVER_CORE, WORK, Harness, ServerSpec, ensure_wrk
from bench.sections import script_args
from bench.servers import BARE, ENDPOINTS, Endpoint, mock_spec

BY_KEY = {endpoint.key: endpoint for endpoint in ENDPOINTS}
WRK_CONNECTIONS = 32


def py_spy() -> str:
    exe = shutil.which("py-spy") or str(Path(PYTHON).parent / "py-spy")
    if not Path(exe).exists():
        raise SystemExit("py-spy is missing: .venv/bin/pip install py-spy")
    return exe


def frame_name(frame: str, roots: tuple[str, ...]) -> str:
    """`handler (/repo/mock_server/api/handlers.py:12)` -> `mock_server/api/handlers.py:handler`: paths are shown from
    the checkout (one of `roots`, each ending in '/'), site-packages or the standard library."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0] if where else "?"
    for marker in ("site-packages/", "lib/python3.11/", *roots):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{path}:{name}"


def summarize(raw: Path, top: int, roots: tuple[str, ...]) -> str:
    self_time: collections.Counter[str] = collections.Counter()
    total_time: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [
            frame_name(f, roots)
            for f in stack.split(";")
            if f and not f.startswith("process ") and not f.startswith("thread ")
        ]
        if not frames:
            continue
        samples += count
        self_time[frames[-1]] += count
        for name in set(frames):
            total_time[name] += count
    out = [f"{samples} busy samples\n", "| self % | function |", "|---:|---|"]
    out += [f"| {100 * n / samples:.1f} | `{name}` |" for name, n in self_time.most_common(top)]
    out += ["", "| total % | function |", "|---:|---|"]
    out += [f"| {100 * n / samples:.1f} | `{name}` |" for name, n in total_time.most_common(top * 2)]
    return "\n".join(out)


def profile_load(harness: Harness, spy: str, raw: Path, events: int, rate: int) -> str:
    """py-spy over loading a generated scenario of `events` events (no server, no wrk)."""
    directory = WORK / "profile-load"
    path = directory / "scale.yaml"
    subprocess.run([PYTHON, str(BENCH / "gen_scenario.py"), str(events), str(path)], check=True)
    code = (
        "from pathlib import Path; from mock_server.spec.openapi import load_specs; "
        "from mock_server.scenarios.loader import ScenarioLoader; "
        f"ScenarioLoader.from_specs(load_specs()).load_directory(Path({str(directory)!r}))"
    )
    record = [spy, "record", "--format", "raw", "--rate", str(rate), "--function", "--output", str(raw)]
    started = time.perf_counter()
    try:
        subprocess.run(
            harness.pinned(SERVER_CORE, [*record, "--", PYTHON, "-c", code]),
            check=True,
            capture_output=True,
            timeout=1800,
            cwd=harness.tree,
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return f"loaded {events} events under py-spy in {time.perf_counter() - started:.1f} s\n"


def unprofiled_rps(harness: Harness, spec: ServerSpec, endpoint: Endpoint, seconds: float) -> tuple[float, float]:
    """(req/s, p50 ms) of one endpoint after a 3 s warm-up, nothing sampling."""
    with harness.running(spec) as server:
        harness.run_wrk(server.port, endpoint.path, endpoint.script, 3, WRK_CONNECTIONS, script_args(harness, endpoint))
        result = harness.run_wrk(
            server.port,
            endpoint.path,
            endpoint.script,
            seconds,
            WRK_CONNECTIONS,
            script_args(harness, endpoint),
            server.process.pid,
        )
    return result.rps, result.p50_ms


def profile_endpoint(
    harness: Harness, spy: str, raw: Path, spec: ServerSpec, endpoint: Endpoint, args: argparse.Namespace
) -> str:
    """py-spy over the server while wrk drives the endpoint; returns the throughput lines."""
    with harness.running(spec) as server:
        harness.run_wrk(server.port, endpoint.path, endpoint.script, 3, WRK_CONNECTIONS, script_args(harness, endpoint))
        record = [
            spy,
            "record",
            "--pid",
            str(server.process.pid),
            "--rate",
            str(args.rate),
            *(["--nonblocking"] if args.nonblocking else []),
            "--function",
            "--format",
            "raw",
            "--output",
            str(raw),
            "--duration",
            str(int(args.seconds)),
        ]
        spy_proc = subprocess.Popen(
            harness.pinned(CLIENT_CORE, record), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            time.sleep(0.5)
            sampled = harness.run_wrk(
                server.port,
                endpoint.path,
                endpoint.script,
                args.seconds - 1,
                WRK_CONNECTIONS,
                script_args(harness, endpoint),
                server.process.pid,
            )
            _, err = spy_proc.communicate(timeout=args.seconds + 60)
        finally:
            if spy_proc.poll() is None:
                spy_proc.kill()
                spy_proc.wait()
        if args.svg:
            svg = raw.with_suffix(".svg")
            flame = [spy, "record", "--pid", str(server.process.pid), "--rate", str(args.rate), "--nonblocking"]
            with subprocess.Popen(
                harness.pinned(CLIENT_CORE, [*flame, "--output", str(svg), "--duration", "5"]),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ) as svg_proc:
                harness.run_wrk(
                    server.port, endpoint.path, endpoint.script, 6, WRK_CONNECTIONS, script_args(harness, endpoint)
                )
                svg_proc.wait(timeout=60)
    if not raw.exists():
        raise SystemExit(f"py-spy wrote nothing: {err}")
    return f"{sampled.rps:,.0f} req/s while sampled"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--endpoint", choices=[*BY_KEY, "load"], default="lookup")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--events", type=int, default=20000, help="scenario size for --endpoint load")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--nonblocking", action="store_true", help="sample without pausing the server (less overhead, but torn stacks)"
    )
    parser.add_argument("--svg", action="store_true", help="also write a flame graph SVG")
    parser.add_argument(
        "--nice", type=int, default=-10 if os.geteuid() == 0 else 0, help="priority of the server and wrk"
    )
    parser.add_argument("--bare", action="store_true", help="profile bench/bare_app.py instead (the baseline)")
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose mock_server/ is profiled")
    parser.add_argument("--option", action="append", default=[], help="extra mock-server option (repeatable)")
    args = parser.parse_args(argv)
    spy = py_spy()
    tree = args.tree.resolve()
    roots = tuple(dict.fromkeys((f"{tree}/", f"{ROOT}/")))
    raw = WORK / f"profile-{'bare-' if args.bare else ''}{args.endpoint}.txt"
    needs_wrk = args.endpoint != "load"
    with Harness(ensure_wrk() if needs_wrk else "wrk", nice=args.nice, tree=tree) as harness:
        if not needs_wrk:
            print(profile_load(harness, spy, raw, args.events, args.rate))
            print(summarize(raw, args.top, roots))
            return 0
        endpoint = BY_KEY[args.endpoint]
        spec = BARE if args.bare else mock_spec("mock default (profiled)", *args.option, tree=tree)
        mock_rps, mock_p50 = unprofiled_rps(harness, spec, endpoint, args.seconds)
        lines = [f"{endpoint.name}: {mock_rps:,.0f} req/s unprofiled (p50 {mock_p50:.2f} ms), {1e6 / mock_rps:.0f} us"]
        if not args.bare:
            bare_rps, _ = unprofiled_rps(harness, BARE, endpoint, args.seconds)
            lines.append(f"bare Starlette right after: {bare_rps:,.0f} req/s; ratio {mock_rps / bare_rps:.2f}x")
        lines.append(profile_endpoint(harness, spy, raw, spec, endpoint, args))
    print("\n".join(lines) + "\n")
    print(summarize(raw, args.top, roots))
    return 0


if __name__ == "__main__":
    sys.exit(main())
