"""The benchmark's measurements, one function a section: throughput, start-up, busy sessions, scale.

Each takes the `Harness` that starts and stops what it needs, and returns plain results for bench/report.py.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.harness import (
    BENCH,
    PYTHON,
    SERVER_CORE,
    WORK,
    Harness,
    Running,
    ServerSpec,
    WrkResult,
    http_call,
    log,
    mem_available_mb,
    rss_mb,
)
from bench.servers import ANCHOR_LABELS, ENDPOINTS, Endpoint, mock_spec


@dataclass(frozen=True)
class Load:
    """The shape of every measured wrk run."""

    duration: float = 10.0  # seconds of load per measured row
    warmup: float = 3.0  # seconds of unmeasured load before each row
    anchor_warmup: float = 15.0  # Prism's and WireMock's (a JIT needs longer)
    connections: int = 32


def script_args(harness: Harness, endpoint: Endpoint) -> list[str]:
    return [harness.next_cpf_base()] if endpoint.new_cpfs else []


# --- throughput and latency ----------------------------------------------------------------------------


@dataclass
class ServerRow:
    label: str
    note: str
    ready_s: float | None = None
    rss_start: float | None = None
    rss_after: float | None = None
    results: dict[str, WrkResult] = field(default_factory=dict)  # by endpoint name
    problem: str | None = None


def _measure(harness: Harness, server: Running, endpoint: Endpoint, load: Load) -> WrkResult:
    status, body = http_call(server.port, endpoint.method, endpoint.path, endpoint.sample_body)
    if status != endpoint.status:
        raise RuntimeError(f"{endpoint.name} answered {status}, not {endpoint.status}: {body[:200]!r}")
    warmup = load.anchor_warmup if server.spec.label in ANCHOR_LABELS else load.warmup
    if warmup > 0:
        harness.run_wrk(
            server.port, endpoint.path, endpoint.script, warmup, load.connections, script_args(harness, endpoint)
        )
    return harness.run_wrk(
        server.port,
        endpoint.path,
        endpoint.script,
        load.duration,
        load.connections,
        script_args(harness, endpoint),
        server.process.pid,
    )


def bench_servers(harness: Harness, specs: Sequence[ServerSpec], load: Load) -> list[ServerRow]:
    """Every server up at once (idle but the one under load), and the rows interleaved: for each endpoint,
    each server in turn, so a change of the machine's background load hits every server alike."""
    rows = [ServerRow(spec.label, spec.note) for spec in specs]
    servers: dict[str, Running] = {}
    try:
        for spec, row in zip(specs, rows, strict=True):
            log(f"{spec.label}: starting")
            try:
                server = servers[spec.label] = harness.launch(spec)
            except (RuntimeError, TimeoutError, OSError) as exc:
                row.problem = str(exc).splitlines()[0][:300]
                log(f"{spec.label}: FAILED to start: {exc}")
                continue
            row.ready_s = server.ready_after
            time.sleep(0.5)  # let start-up settle before reading RSS
            row.rss_start = rss_mb(server.process.pid)
        for endpoint in ENDPOINTS:
            for row in rows:
                if row.label not in servers or row.problem:
                    continue
                try:
                    result = _measure(harness, servers[row.label], endpoint, load)
                except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                    row.problem = f"{endpoint.name}: {str(exc).splitlines()[0][:300]}"
                    log(f"{row.label}: FAILED: {row.problem}")
                    continue
                row.results[endpoint.name] = result
                other = f", other load {result.foreign[0]:.0f}%/{result.foreign[1]:.0f}%" if result.foreign else ""
                log(
                    f"{row.label} / {endpoint.name}: {result.rps:,.0f} req/s, p50 {result.p50_ms:.2f} ms, "
                    f"p99 {result.p99_ms:.2f} ms, errors {result.errors}{other}"
                )
        for row in rows:
            if row.label in servers:
                row.rss_after = rss_mb(servers[row.label].process.pid)
    finally:
        for server in servers.values():
            harness.stop(server.process)
    return rows


# --- start-up ------------------------------------------------------------------------------------------


@dataclass
class Startup:
    times: list[float]
    rss: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.times)


# What an install leaves beside the package, made here as it is there: byte code (pip compiles it at install) and the
# specs' parse (spec/openapi.py: the image makes it at build, and any start that may write byte code). Without them
# every launch of a checkout run under PYTHONDONTWRITEBYTECODE compiled the package anew: a quarter of its start.
AS_INSTALLED = (
    "import compileall, mock_server.spec.openapi as o; compileall.compile_dir('mock_server', quiet=1); o.load_specs()"
)


def as_installed(harness: Harness) -> None:
    """The measured tree given the byte code and the specs' parse cache an install has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([PYTHON, "-c", AS_INSTALLED], cwd=harness.tree, env=env, check=True, timeout=300)


def bench_startup(harness: Harness, runs: int) -> Startup:
    """`runs` launches to the first 200 of /__mock/health, of the tree as installed (`as_installed`)."""
    as_installed(harness)
    spec = mock_spec("mock default (start-up)", tree=harness.tree)
    times, rss = [], []
    for _ in range(runs):
        with harness.running(spec) as server:
            times.append(server.ready_after)
            value = rss_mb(server.process.pid)
            if value is not None:
                rss.append(value)
    log(
        f"start-up: median {statistics.median(times) * 1000:.0f} ms over {runs} launches "
        f"({', '.join(f'{t * 1000:.0f}' for t in times)} ms)"
    )
    return Startup(times, rss)


# --- 256 busy sessions ---------------------------------------------------------------------------------


@dataclass
class SessionsResult:
    requests: int
    seconds: float
    errors: int
    rss_before: float | None
    rss_after: float | None
    per_session: float
    at_cap: CapResult | None = None


@dataclass
class CapResult:
    """The same load, on until every session's journal is full: measured, not extrapolated."""

    requests: int  # in all, the first run's included
    seconds: float
    errors: int
    rss: float | None
    journal_entries: int  # in session s0's journal at the end
    reached: bool  # every session got at least JOURNAL_CAP requests


SESSIONS_COUNT = 256  # bench/wrk/sessions.lua
JOURNAL_CAP = 1000  # each session's journal keeps its last 1000 entries


def _journal_length(port: int, session: str) -> int:
    status, body = http_call(port, "GET", f"/__session/{session}/__mock/requests", None)
    if status != 200:
        raise RuntimeError(f"the journal answered {status} after the load: {body[:200]!r}")
    return len(json.loads(body)["requests"])


def bench_sessions(harness: Harness, seconds: float, connections: int, cap_budget: float = 0.0) -> SessionsResult:
    """`seconds` of POSTs cycling 256 sessions; then, with `cap_budget` > 0, more of the same (up to that many
    seconds) until every session has had JOURNAL_CAP requests, and the RSS there."""
    with harness.running(mock_spec("mock default (sessions)", tree=harness.tree)) as server:
        time.sleep(0.3)
        before = rss_mb(server.process.pid)
        result = harness.run_wrk(
            server.port, "/", "sessions.lua", seconds, connections, [harness.next_cpf_base()], server.process.pid
        )
        after = rss_mb(server.process.pid)
        _journal_length(server.port, "s0")
        at_cap = None
        if cap_budget > 0:
            needed = SESSIONS_COUNT * JOURNAL_CAP * 1.02  # wrk stops mid-cycle: a little over one full round
            total, spent, errors = result.requests, result.seconds, result.errors
            while total < needed and spent < cap_budget:
                rate = total / spent if spent else 1000.0
                slice_s = min(30.0, max(2.0, (needed - total) / rate + 1), cap_budget - spent + 1)
                more = harness.run_wrk(
                    server.port, "/", "sessions.lua", slice_s, connections, [harness.next_cpf_base()]
                )
                total, spent, errors = total + more.requests, spent + more.seconds, errors + more.errors
            at_cap = CapResult(
                total, spent, errors, rss_mb(server.process.pid), _journal_length(server.port, "s0"), total >= needed
            )
            log(
                f"256 sessions at the journal cap: {total} POSTs in {spent:.0f} s, RSS {at_cap.rss or 0:.1f} MB, "
                f"s0's journal {at_cap.journal_entries} entries, errors {errors}"
            )
    log(
        f"256 sessions: {result.requests} POSTs in {result.seconds:.1f} s, RSS {before} -> {after} MB, "
        f"errors {result.errors}"
    )
    return SessionsResult(result.requests, result.seconds, result.errors, before, after, result.requests / 256, at_cap)


# --- generated scenarios -------------------------------------------------------------------------------


@dataclass
class ScaleRow:
    events: int
    syntax: str
    file_mb: float | None = None
    gen_s: float | None = None
    load_s: float | None = None
    rss: float | None = None
    rss_peak: float | None = None
    lookup: WrkResult | None = None
    skipped: str | None = None
    load_cpu_s: float | None = None  # CPU seconds until ready, the worker processes' included
    tree_peak: float | None = None  # MB, the process tree's proportional memory at its peak while loading


@dataclass
class _Projection:
    """What the sizes done so far say about the next one."""

    baseline: float | None = None  # load time of the smallest size: start-up plus next to no events
    per_event_s: float | None = None  # load seconds per event, from the largest size done so far
    peak_per_event: float | None = None  # MB of peak RSS per event, likewise
    baseline_peak: float = 0.0  # MB, the smallest size's peak

    def reason_to_skip(self, size: int, remaining: float, budget: float, load: Load) -> str | None:
        if self.baseline is not None and self.per_event_s is not None:
            projected = self.baseline + self.per_event_s * size * 1.15
            needed = projected + size / 50_000 + load.duration + load.warmup + 15  # + generation and the lookups
            if needed > remaining:
                return (
                    f"skipped: loading would take about {projected:.0f} s (projected from the previous "
                    f"size), and {max(0.0, remaining):.0f} s of the run's {budget:.0f} s budget were left"
                )
        if self.peak_per_event is not None:
            projected_mb = self.baseline_peak + self.peak_per_event * size * 1.2
            if projected_mb > 0.6 * mem_available_mb():
                return (
                    f"skipped: would need about {projected_mb / 1000:.1f} GB of memory (projected), "
                    f"over 60% of the {mem_available_mb() / 1000:.1f} GB available"
                )
        return None

    def learn(self, row: ScaleRow) -> None:
        assert row.load_s is not None
        if self.baseline is None:
            self.baseline = row.load_s
            self.baseline_peak = row.rss_peak or 0.0
            return
        self.per_event_s = max(0.0, row.load_s - self.baseline) / row.events
        if row.rss_peak:
            # above the smallest size's: the interpreter's own 50 MB are not a cost per event
            self.peak_per_event = max(0.0, row.rss_peak - self.baseline_peak) / row.events


def _scale_step(harness: Harness, row: ScaleRow, load: Load, deadline: float) -> None:
    """Generate, load (launch -> first 200), RSS, random lookups; the generated file is removed after."""
    label = f"scale {row.events} ({row.syntax})"
    directory = WORK / f"scale-{row.syntax}-{row.events}"
    shutil.rmtree(directory, ignore_errors=True)
    path = directory / "scale.yaml"
    try:
        started = time.perf_counter()
        subprocess.run(
            [PYTHON, str(BENCH / "gen_scenario.py"), str(row.events), str(path), "--syntax", row.syntax],
            check=True,
            timeout=max(60.0, deadline - time.monotonic()),
            capture_output=True,
        )
        row.gen_s = time.perf_counter() - started
        row.file_mb = path.stat().st_size / 1e6
        spec = mock_spec(f"mock {label}", "--fixtures", str(directory), "--scenario", "scale", tree=harness.tree)
        load_timeout = max(30.0, deadline - time.monotonic() - load.duration - 15)
        log(f"{label}: {row.file_mb:.0f} MB generated in {row.gen_s:.1f} s; loading (up to {load_timeout:.0f} s)")
        size = [str(row.events)]
        with harness.running(spec, timeout=load_timeout, every_core=True) as server:
            row.load_s = server.ready_after
            row.load_cpu_s = server.load_cpu_s
            row.tree_peak = server.tree_peak_mb
            row.rss = rss_mb(server.process.pid)
            own_peak = rss_mb(server.process.pid, "VmHWM")
            row.rss_peak = max(own_peak or 0.0, row.tree_peak or 0.0) or None  # the workers' memory counts too
            if load.warmup > 0:
                harness.run_wrk(server.port, "/", "scale_lookup.lua", min(load.warmup, 2), load.connections, size)
            lookup = harness.run_wrk(
                server.port, "/", "scale_lookup.lua", load.duration, load.connections, size, server.process.pid
            )
            row.lookup = lookup
        log(
            f"{label}: loaded in {row.load_s:.2f} s ({row.load_cpu_s or 0:.2f} CPU s), RSS {row.rss:.0f} MB (peak "
            f"{row.rss_peak:.0f}, with workers {row.tree_peak or 0:.0f}), lookup "
            f"{lookup.rps:,.0f} req/s p50 {lookup.p50_ms:.2f} ms p99 {lookup.p99_ms:.2f} ms, errors {lookup.errors}"
        )
    except TimeoutError as exc:
        row.skipped = f"did not finish loading: {exc}"
        log(f"{label}: {row.skipped}")
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        row.skipped = f"failed: {str(exc).splitlines()[0][:200]}"
        log(f"{label}: {row.skipped}")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def bench_scale(
    harness: Harness, sizes: Sequence[int], syntax: str, load: Load, deadline: float, budget: float
) -> list[ScaleRow]:
    """Each size in turn (see `_scale_step`). A size whose load, projected from the sizes done, would not fit
    the time left before `deadline` (a time.monotonic()) or the memory free is skipped, and says so."""
    rows: list[ScaleRow] = []
    projection = _Projection()
    for size in sizes:
        row = ScaleRow(size, syntax)
        rows.append(row)
        row.skipped = projection.reason_to_skip(size, deadline - time.monotonic(), budget, load)
        if row.skipped:
            log(f"scale {size} ({syntax}): {row.skipped}")
            continue
        _scale_step(harness, row, load, deadline)
        if row.load_s is not None:
            projection.learn(row)
    return rows


@dataclass
class LoadStages:
    """CPU seconds per stage of the lean load of the same 100k events, per syntax, on one core."""

    events: int
    by_syntax: dict[str, dict[str, float]]


def bench_load_stages(harness: Harness, syntaxes: Sequence[str], events: int = 100_000) -> LoadStages | None:
    """bench/load_stages.py on a generated file of each syntax, pinned to one core, with no workers: what each
    stage of a load costs, and so what stands between a load and its target."""
    by_syntax: dict[str, dict[str, float]] = {}
    directory = WORK / "load-stages"
    shutil.rmtree(directory, ignore_errors=True)
    try:
        for syntax in syntaxes:
            path = directory / f"{syntax}.yaml"
            subprocess.run(
                [PYTHON, str(BENCH / "gen_scenario.py"), str(events), str(path), "--syntax", syntax],
                check=True,
                capture_output=True,
            )
            argv = harness.pinned(SERVER_CORE, [PYTHON, "-m", "bench.load_stages", str(path), "--syntax", syntax])
            done = subprocess.run(argv, check=True, capture_output=True, text=True, cwd=harness.tree, timeout=300)
            by_syntax[syntax] = json.loads(done.stdout)
            log(f"load stages ({syntax}, {events:,} events, one core): {by_syntax[syntax]['total']:.2f} CPU s in all")
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log(f"load stages: failed: {str(exc).splitlines()[0][:200]}")
        return None
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return LoadStages(events, by_syntax)
