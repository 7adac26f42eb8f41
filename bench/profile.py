"""Profile the mock server under the benchmark's load with py-spy: where a request's time goes.

Starts the server in its default configuration (pinned to core 0, as bench/run.py does), drives one
endpoint with wrk (core 1), samples the server with `py-spy record` meanwhile, and prints the hot spots:
self time (the frame on top of the stack) and total time (anywhere on the stack) per function, as a
share of the samples in which the server was busy. Raw stacks are kept under .bench/ for a flame graph
(`py-spy record` can also write SVG: pass `--svg`).

    .venv/bin/pip install py-spy     # once
    .venv/bin/python bench/profile.py --endpoint lookup --seconds 15
    .venv/bin/python bench/profile.py --endpoint limit --seconds 15
    .venv/bin/python bench/profile.py --endpoint load --events 20000    # scenario loading, no wrk
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # the same launch, pinning and wrk helpers as the benchmark

ENDPOINTS = {e.script.split("_")[0].replace(".lua", ""): e for e in run.ENDPOINTS}  # lookup, limit, recipient


def py_spy() -> str:
    exe = shutil.which("py-spy") or str(Path(run.PYTHON).parent / "py-spy")
    if not Path(exe).exists():
        raise SystemExit("py-spy is missing: .venv/bin/pip install py-spy")
    return exe


def _frame_name(frame: str) -> str:
    """`handler (mock_server/routes.py:12)` -> `mock_server/routes.py:handler`; site-packages paths shortened."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0] if where else "?"
    for marker in ("site-packages/", "lib/python3.11/", "/work/main/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{path}:{name}"


def summarize(raw: Path, top: int) -> str:
    self_time: collections.Counter[str] = collections.Counter()
    total_time: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [
            _frame_name(f)
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", choices=[*ENDPOINTS, "load"], default="lookup")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--events", type=int, default=20000, help="scenario size for --endpoint load")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument(
        "--nonblocking", action="store_true", help="sample without pausing the server (less overhead, but torn stacks)"
    )
    parser.add_argument("--svg", action="store_true", help="also write a flame graph SVG")
    parser.add_argument("--nice", type=int, default=-10)
    parser.add_argument("--bare", action="store_true", help="profile bench/bare_app.py instead (the baseline)")
    parser.add_argument("--tree", type=Path, default=run.ROOT, help="checkout whose mock_server/ is profiled")
    parser.add_argument("--option", action="append", default=[], help="extra mock-server option (repeatable)")
    args = parser.parse_args(argv)
    run.NICE[0] = args.nice
    run.TREE[0] = args.tree.resolve()
    run.WORK.mkdir(exist_ok=True)
    if run.PINNING:
        import os

        os.sched_setaffinity(0, {int(run.CLIENT_CORE)})
    spy = py_spy()
    raw = run.WORK / f"profile-{'bare-' if args.bare else ''}{args.endpoint}.txt"
    if args.endpoint == "load":
        directory = run.WORK / "profile-load"
        path = directory / "scale.yaml"
        subprocess.run([run.PYTHON, str(run.BENCH / "gen_scenario.py"), str(args.events), str(path)], check=True)
        argv_ = [
            spy,
            "record",
            "--format",
            "raw",
            "--rate",
            str(args.rate),
            "--function",
            "--output",
            str(raw),
            "--",
            run.PYTHON,
            "-c",
            "from pathlib import Path; from mock_server.spec import load_specs; "
            "from mock_server.scenarios import ScenarioLoader; "
            f"ScenarioLoader.from_specs(load_specs()).load_directory(Path({str(directory)!r}))",
        ]
        started = time.perf_counter()
        subprocess.run(
            run.pinned(run.SERVER_CORE, argv_), check=True, capture_output=True, timeout=1800, cwd=run.TREE[0]
        )
        print(f"loaded {args.events} events under py-spy in {time.perf_counter() - started:.1f} s\n")
        shutil.rmtree(directory, ignore_errors=True)
        print(summarize(raw, args.top))
        return 0
    endpoint = ENDPOINTS[args.endpoint]
    wrk = run.ensure_wrk()
    spec = run.BARE if args.bare else run.mock_spec("mock default (profiled)", *args.option)
    with run.running(spec) as server:
        run.run_wrk(wrk, server.port, endpoint.path, endpoint.script, 3, 32, run.script_args_for(endpoint))
        unprofiled = run.run_wrk(
            wrk,
            server.port,
            endpoint.path,
            endpoint.script,
            args.seconds,
            32,
            run.script_args_for(endpoint),
            server.process.pid,
        )
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
            run.pinned(run.CLIENT_CORE, record), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        try:
            time.sleep(0.5)
            profiled = run.run_wrk(
                wrk,
                server.port,
                endpoint.path,
                endpoint.script,
                args.seconds - 1,
                32,
                run.script_args_for(endpoint),
                server.process.pid,
            )
            _, err = spy_proc.communicate(timeout=args.seconds + 60)
        finally:
            if spy_proc.poll() is None:
                spy_proc.kill()
                spy_proc.wait()
        if args.svg:
            svg = raw.with_suffix(".svg")
            spy_svg = [
                spy,
                "record",
                "--pid",
                str(server.process.pid),
                "--rate",
                str(args.rate),
                "--nonblocking",
                "--output",
                str(svg),
                "--duration",
                "5",
            ]
            with subprocess.Popen(
                run.pinned(run.CLIENT_CORE, spy_svg), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            ) as svg_proc:
                run.run_wrk(wrk, server.port, endpoint.path, endpoint.script, 6, 32, run.script_args_for(endpoint))
                svg_proc.wait(timeout=60)
    if not raw.exists():
        raise SystemExit(f"py-spy wrote nothing: {err}")
    print(
        f"{endpoint.name}: {unprofiled.rps:,.0f} req/s unprofiled (p50 {unprofiled.p50_ms:.2f} ms), "
        f"{profiled.rps:,.0f} req/s while sampled; {1e6 / unprofiled.rps:.0f} us per request\n"
    )
    print(summarize(raw, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
