"""BENCHMARKS.md from the results of bench/sections.py: one renderer a section, then the targets' verdicts.

The figures live in the report a run writes (and in the commit messages that quote it), never in docstrings.
"""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from bench.cluster_bench import ClusterRow, cluster_section
from bench.cpu_cost import CpuResult, cpu_section
from bench.fixture_cost import FixtureCost, fixture_section
from bench.harness import CLIENT_CORE, ROOT, SERVER_CORE
from bench.load_stages import STAGES
from bench.sections import Load, LoadStages, ScaleRow, ServerRow, SessionsResult, Startup
from bench.servers import ENDPOINTS

BARE_LABEL = "bare Starlette"
DEFAULT_LABEL = "mock default"
JOURNAL_CAP = 1000  # each session keeps its last 1000 journal entries (and 1000 proposals per account)
SESSIONS = 256


@dataclass(frozen=True)
class RunInfo:
    """How the run was made, for the report's header."""

    command: str
    revision: str  # what git_revision said when the run began
    load: Load
    anchors: bool
    nice: int
    pinned: bool
    tree: Path
    elapsed_s: float


@dataclass
class Results:
    servers: list[ServerRow] = field(default_factory=list)
    startup: Startup | None = None
    sessions: SessionsResult | None = None
    scale: list[ScaleRow] = field(default_factory=list)
    cluster: list[ClusterRow] = field(default_factory=list)
    load_stages: LoadStages | None = None
    fixture: FixtureCost | None = None
    cpu: CpuResult | None = None

    def row(self, label: str) -> ServerRow | None:
        return next((r for r in self.servers if r.label == label), None)


def _f(value: float | None, fmt: str = "{:.0f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**MISSED**")


def rps(row: ServerRow | None, endpoint: str) -> float | None:
    """A row's req/s on one endpoint, if it answered every request correctly."""
    result = row.results.get(endpoint) if row else None
    return result.rps if result and result.errors == 0 else None


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions = []
    for dist in ("starlette", "uvicorn", "uvloop", "httptools", "jsonschema"):
        with contextlib.suppress(Exception):
            versions.append(f"{dist} {version(dist)}")
    wrk_version = "wrk"
    with contextlib.suppress(Exception):
        out = subprocess.run(["wrk", "-v"], capture_output=True, text=True, timeout=10)
        wrk_version = (out.stdout or out.stderr).splitlines()[0].split(" Copyright")[0]
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, {', '.join(versions)}, {wrk_version}"
    )


def git_revision(tree: Path) -> str:
    if tree != ROOT:
        return f"the tree in {tree}"
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "mock_server"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        return f"{head}{' with uncommitted changes in mock_server/' if dirty else ''}"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def header(info: RunInfo) -> list[str]:
    load = info.load
    pin = (
        f"servers pinned to core {SERVER_CORE}, wrk to core {CLIENT_CORE} (`taskset`)"
        if info.pinned
        else "NOT pinned (fewer than 2 cores or no taskset)"
    )
    if info.nice:
        pin += f", both at nice {info.nice} (their session's autogroup too)"
    anchor_warmup = f" ({load.anchor_warmup:g} s for Prism and WireMock)" if info.anchors else ""
    return [
        "# Benchmarks\n",
        f"Made by `{info.command}` on {time.strftime('%Y-%m-%d %H:%M %Z')} at commit {info.revision}, "
        f"in {info.elapsed_s / 60:.1f} min.  ",
        f"Machine: {machine()}.  ",
        f"Load: wrk over loopback, 1 thread, {load.connections} connections, {load.duration:g} s per row after a "
        f"{load.warmup:g} s warm-up{anchor_warmup}, {pin}. Each server is started fresh by the script, in this "
        "one run, and the rows are interleaved (each endpoint on every server in turn), so the ratios cancel the "
        "machine's speed and noise. Latencies are wrk's (no coordinated-omission correction). *Other load* is "
        "the share of each core that processes other than the server (core 0) and wrk (core 1) took during the "
        "row: the machine is shared, and a high value on core 0 means that row is noisy. A row whose answers "
        "were not all the expected 200/201 counts errors and is not used in ratios.\n",
    ]


def throughput_section(results: Results) -> list[str]:
    bare, default = results.row(BARE_LABEL), results.row(DEFAULT_LABEL)
    out = [
        "## Throughput and latency\n",
        "| server | endpoint | req/s | vs bare Starlette | p50 ms | p99 ms | errors | other load core 0 / 1 "
        "| ready after | RSS start → after load |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results.servers:
        if not row.results:
            out.append(f"| {row.label} | (failed) | | | | | | | | {row.problem} |")
            continue
        first = True
        for endpoint in ENDPOINTS:
            result = row.results.get(endpoint.name)
            if result is None:
                continue
            ratio = _ratio(rps(row, endpoint.name), rps(bare, endpoint.name))
            ratio_text = "1.00x" if row is bare else _f(ratio, "{:.2f}x")
            if row is default and ratio is not None and endpoint.name in ("event lookup", "limit change"):
                ratio_text = f"**{ratio_text}**"
            other = f"{result.foreign[0]:.0f}% / {result.foreign[1]:.0f}%" if result.foreign else "n/a"
            out.append(
                f"| {row.label if first else ''} | {endpoint.name} | {result.rps:,.0f} | {ratio_text} | "
                f"{result.p50_ms:.2f} | {result.p99_ms:.2f} | {result.errors or '0'} | {other} | "
                f"{_f(row.ready_s, '{:.2f} s') if first else ''} | "
                f"{(_f(row.rss_start, '{:.0f}') + ' → ' + _f(row.rss_after, '{:.0f} MB')) if first else ''} |"
            )
            first = False
        if row.problem:
            out.append(f"| {row.label} | (stopped) | | | | | | | | {row.problem} |")
    out.append("")
    out.append("Servers: " + "; ".join(f"**{r.label}**: {r.note}" for r in results.servers if r.note) + ".\n")
    return out


def startup_section(startup: Startup, default: ServerRow | None) -> list[str]:
    out = [
        "## Start-up\n",
        "| measure | value |",
        "|---|---:|",
        f"| launch → first 200 from `/__mock/health`, median of {len(startup.times)} | "
        f"{startup.median * 1000:.0f} ms |",
        f"| all launches | {', '.join(f'{t * 1000:.0f}' for t in startup.times)} ms |",
    ]
    if startup.rss:
        out.append(f"| RSS at the first 200 (median) | {statistics.median(startup.rss):.1f} MB |")
    if default and default.rss_after:
        out.append(f"| RSS after the load of the table above (mock default) | {default.rss_after:.1f} MB |")
    out.append("")
    return out


def sessions_section(sessions: SessionsResult) -> list[str]:
    growth = (sessions.rss_after - sessions.rss_before) if sessions.rss_after and sessions.rss_before else None
    per_request = growth * 1e6 / sessions.requests if growth and sessions.requests else None
    # Recipients are unbounded, but the journal and the proposals stop growing at the cap: linear up to there.
    at_cap = per_request * JOURNAL_CAP * SESSIONS / 1e6 if per_request else None
    measured = _at_cap_lines(sessions)
    return [
        f"## {SESSIONS} busy sessions (the cap)\n",
        f"{sessions.requests:,} POSTs in {sessions.seconds:.0f} s cycling `X-Mock-Session: s0..s{SESSIONS - 1}` "
        f"(limit change and recipient add in turn, about {sessions.per_session:.0f} per session; errors: "
        f"{sessions.errors}).\n",
        "| RSS before | RSS after | growth | per session | per request | at the journal cap, linear |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {_f(sessions.rss_before, '{:.1f} MB')} | {_f(sessions.rss_after, '{:.1f} MB')} | "
        f"{_f(growth, '{:.1f} MB')} | {_f(growth * 1000 / SESSIONS if growth else None, '{:.0f} kB')} | "
        f"{_f(per_request / 1000 if per_request else None, '{:.1f} kB')} | "
        f"~{_f(at_cap, '{:.0f} MB')} ({JOURNAL_CAP} requests x {SESSIONS} sessions) |\n",
        *measured,
    ]


def _at_cap_lines(sessions: SessionsResult) -> list[str]:
    cap = sessions.at_cap
    if cap is None:
        return []
    growth = cap.rss - sessions.rss_before if cap.rss and sessions.rss_before else None
    reached = "" if cap.reached else " (the time allowed ran out first: below the cap)"
    return [
        f"Then the same load on until every session had {JOURNAL_CAP} requests{reached}: {cap.requests:,} POSTs in "
        f"{cap.seconds:.0f} s (errors: {cap.errors}); session s0's journal holds {cap.journal_entries} entries.\n",
        "| RSS before | RSS at the journal cap (measured) | growth | per session |",
        "|---:|---:|---:|---:|",
        f"| {_f(sessions.rss_before, '{:.1f} MB')} | {_f(cap.rss, '{:.1f} MB')} | {_f(growth, '{:.1f} MB')} | "
        f"{_f(growth * 1000 / SESSIONS if growth else None, '{:.0f} kB')} |\n",
    ]


def scale_section(scale: list[ScaleRow]) -> list[str]:
    out = [
        "## Scale: generated scenarios\n",
        "The same events (`bench/gen_scenario.py`) written in JSON syntax (YAML includes it; how a program "
        "writes a big scenario) and in YAML block style (how a person writes one). Load = launch → first "
        "200 from `/__mock/health` with only the generated scenario in `--fixtures` (so it includes the "
        "interpreter's start-up). While it loads, the server may run on every core: a file of 8 MB or more is "
        "checked and packed by worker processes, one per core (up to 4), while the server cuts it into batches "
        "(`mock_server/scenarios/batch_packing.py`); *load CPU* adds up the server's and its workers' CPU time, "
        "and the peak is the larger of the server's own (VmHWM) and its process tree's proportional memory (PSS, "
        "sampled every 50 ms). Once ready, the server is pinned to core 0 like every other server, and the "
        "lookups are measured: GET of a random event among all those loaded.\n",
        "| events | syntax | file | generated in | load | load CPU | RSS loaded (peak) | lookup req/s | p50 ms "
        "| p99 ms | errors | other load core 0 / 1 |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scale:
        if s.skipped or s.lookup is None:
            out.append(
                f"| {s.events:,} | {s.syntax} | {_f(s.file_mb, '{:.0f} MB')} | {_f(s.gen_s, '{:.1f} s')} | "
                f"{s.skipped} | | | | | | | |"
            )
            continue
        lookup = s.lookup
        other = f"{lookup.foreign[0]:.0f}% / {lookup.foreign[1]:.0f}%" if lookup.foreign else "n/a"
        out.append(
            f"| {s.events:,} | {s.syntax} | {_f(s.file_mb, '{:.1f} MB')} | {_f(s.gen_s, '{:.1f} s')} | "
            f"{_f(s.load_s, '{:.2f} s')} | {_f(s.load_cpu_s, '{:.2f} s')} | "
            f"{_f(s.rss, '{:.0f}')} ({_f(s.rss_peak, '{:.0f} MB')}) | "
            f"{lookup.rps:,.0f} | {lookup.p50_ms:.2f} | {lookup.p99_ms:.2f} | {lookup.errors} | {other} |"
        )
    out.append("")
    return out


def load_stages_section(stages: LoadStages, scale: list[ScaleRow]) -> list[str]:
    """Where a load's CPU goes, stage by stage, next to the rows' loads: the profile of what stands in the way."""
    syntaxes = list(stages.by_syntax)
    out = [
        "### Where a load's CPU goes\n",
        f"`bench/load_stages.py` on {stages.events:,} generated events of each syntax, pinned to one core and "
        "without workers: the lean path's stages timed one after the other (CPU seconds), then the same load "
        "timed whole. With workers the server itself only reads and cuts the file and joins the packed batches; "
        "the other stages are spread over the cores, so a load's wall time is roughly the first row plus the "
        "rest divided by the cores, plus the interpreter's start-up (the 1,000-event rows above).\n",
        "| stage | what it does | " + " | ".join(f"{syntax} CPU s" for syntax in syntaxes) + " |",
        "|---|---|" + "---:|" * len(syntaxes),
    ]
    for stage, what in STAGES.items():
        values = [stages.by_syntax[syntax].get(stage, 0.0) for syntax in syntaxes]
        out.append(f"| {stage} | {what} | " + " | ".join("(none)" if v == 0 else f"{v:.2f}" for v in values) + " |")
    sums = [sum(stages.by_syntax[syntax].get(stage, 0.0) for stage in STAGES) for syntax in syntaxes]
    out.append("| sum of the stages | | " + " | ".join(f"{v:.2f}" for v in sums) + " |")
    totals = [stages.by_syntax[syntax]["total"] for syntax in syntaxes]
    out.append("| the same load timed whole, one core | | " + " | ".join(f"**{v:.2f}**" for v in totals) + " |")
    loads = [
        next((s for s in scale if s.events == stages.events and s.syntax == x and s.load_s), None) for x in syntaxes
    ]
    out.append(
        "| the row above: load (wall, every core, start-up included) | | "
        + " | ".join("n/a" if row is None else f"{row.load_s:.2f} s" for row in loads)
        + " |"
    )
    out.append("")
    return out


def _scale_targets(scale: list[ScaleRow]) -> list[str]:
    out = []
    for syntax in dict.fromkeys(s.syntax for s in scale):
        by_size = {s.events: s.lookup for s in scale if s.lookup is not None and s.syntax == syntax}
        small, big = by_size.get(1000), by_size.get(1_000_000)
        name = f"lookup latency at 1M events ≤ 1.2x at 1k (p50; {syntax} scenario)"
        if small and big:
            growth = big.p50_ms / small.p50_ms
            out.append(
                f"| {name} | {growth:.2f}x ({big.p50_ms:.2f} vs {small.p50_ms:.2f} ms) | {_verdict(growth <= 1.2)} |"
            )
        else:
            largest = max(by_size) if by_size else None
            extra = ""
            if small and largest and largest != 1000:
                extra = f"; at {largest:,}: {by_size[largest].p50_ms / small.p50_ms:.2f}x"
            out.append(f"| {name} | 1M not measured{extra} | {_verdict(None)} |")
        load100k = next((s.load_s for s in scale if s.events == 100_000 and s.syntax == syntax), None)
        out.append(
            f"| a 100k-event scenario loads in ≤ 3 s ({syntax} syntax) | {_f(load100k, '{:.1f} s')} | "
            f"{_verdict(None if load100k is None else load100k <= 3)} |"
        )
    return out


def targets_section(results: Results, info: RunInfo) -> list[str]:
    bare, default = results.row(BARE_LABEL), results.row(DEFAULT_LABEL)
    lookup_ratio = _ratio(rps(default, "event lookup"), rps(bare, "event lookup"))
    limit_ratio = _ratio(rps(default, "limit change"), rps(bare, "limit change"))
    prism_ratio = _ratio(rps(default, "event lookup"), rps(results.row("Prism"), "event lookup"))
    wiremock_ratio = _ratio(rps(default, "event lookup"), rps(results.row("WireMock"), "event lookup"))
    anchors_note = "" if info.anchors else " (run `make bench-anchors`)"
    lookup = default.results.get("event lookup") if default else None
    p99 = lookup.p99_ms if lookup else None
    start = results.startup.median if results.startup else None
    rss_start = statistics.median(results.startup.rss) if results.startup and results.startup.rss else None
    return [
        "## Targets (issue: speed targets, ratios from this one run)\n",
        "| target | measured | verdict |",
        "|---|---:|---|",
        f"| event lookup ≥ 0.6x bare Starlette req/s | {_f(lookup_ratio, '{:.2f}x')} | "
        f"{_verdict(None if lookup_ratio is None else lookup_ratio >= 0.6)} |",
        f"| limit change ≥ 0.4x bare Starlette req/s | {_f(limit_ratio, '{:.2f}x')} | "
        f"{_verdict(None if limit_ratio is None else limit_ratio >= 0.4)} |",
        f"| default config ≥ 4x Prism's lookup req/s | {_f(prism_ratio, '{:.2f}x')}{anchors_note} | "
        f"{_verdict(None if prism_ratio is None else prism_ratio >= 4)} |",
        f"| default config ≥ 1.2x WireMock's lookup req/s | {_f(wiremock_ratio, '{:.2f}x')}{anchors_note} | "
        f"{_verdict(None if wiremock_ratio is None else wiremock_ratio >= 1.2)} |",
        f"| lookup p99 ≤ 10 ms at {info.load.connections} connections (default config) | {_f(p99, '{:.2f} ms')} | "
        f"{_verdict(None if p99 is None else p99 <= 10)} |",
        f"| start → first 200 ≤ 0.5 s (median of 5) | {_f(start * 1000 if start else None, '{:.0f} ms')} | "
        f"{_verdict(None if start is None else start <= 0.5)} |",
        f"| RSS at start ≤ 60 MB | {_f(rss_start, '{:.1f} MB')} | "
        f"{_verdict(None if rss_start is None else rss_start <= 60)} |",
        *_scale_targets(results.scale),
        *_big_scenario_targets(results.scale),
        "",
    ]


def _big_scenario_targets(scale: list[ScaleRow]) -> list[str]:
    """Issue 15's: big scenarios fast and small."""

    def row(events: int, syntax: str) -> ScaleRow | None:
        return next((s for s in scale if s.events == events and s.syntax == syntax and s.load_s is not None), None)

    def line(name: str, value: float | None, fmt: str, ok: bool | None, missing: str = "n/a") -> str:
        return f"| {name} | {missing if value is None else fmt.format(value)} | {_verdict(ok)} |"

    out = []
    for syntax in dict.fromkeys(s.syntax for s in scale):
        small, big = row(100_000, syntax), row(1_000_000, syntax)
        for size, limit, found in (("100k", 2, small), ("1M", 15, big)):
            load = found.load_s if found else None
            out.append(
                line(
                    f"a {size}-event scenario loads in ≤ {limit} s ({syntax} syntax)",
                    load,
                    "{:.1f} s",
                    None if load is None else load <= limit,
                    "not measured",
                )
            )
        rss, peak = (big.rss, big.rss_peak) if big else (None, None)
        out.append(
            line(
                f"1M events resident ≤ 700 MB ({syntax} syntax)",
                rss,
                "{:.0f} MB",
                None if rss is None else rss <= 700,
                "not measured",
            )
        )
        out.append(
            line(
                f"1M events peak ≤ 1.2 GB while loading ({syntax} syntax)",
                peak,
                "{:.0f} MB",
                None if peak is None else peak <= 1200,
                "not measured",
            )
        )
    return out


def keep_written(previous: str, rendered: str) -> str:
    """`rendered` with the sections of `previous` it has no heading for kept (written by hand, by another
    benchmark, or by a run of sections this one skipped: from `## ` to the next), each after the last rendered
    section it followed in `previous` (after the header when none did). A run replaces what it measures, and
    nothing else."""

    def sections(document: str) -> list[tuple[str, str]]:
        parts = ("\n" + document).split("\n## ")
        return [("", parts[0].lstrip("\n"))] + [(part.split("\n", 1)[0], "## " + part) for part in parts[1:]]

    ours = sections(rendered)
    measured = {heading for heading, _ in ours[1:]}
    kept: dict[str | None, list[str]] = {}  # the rendered section it goes after (None: the header)
    after: str | None = None
    for heading, text in sections(previous)[1:]:
        if heading in measured:
            after = heading
        else:
            kept.setdefault(after, []).append(text)
    out = [ours[0][1], *kept.pop(None, [])]
    for heading, text in ours[1:]:
        out.append(text)
        out += kept.pop(heading, [])
    return "\n".join(part.rstrip("\n") + "\n" for part in out if part.strip())


def render(results: Results, info: RunInfo) -> str:
    out = header(info) + throughput_section(results)
    if results.cpu is not None:
        out += [*cpu_section(results.cpu, info.command, info.revision), ""]
    if results.startup is not None:
        out += startup_section(results.startup, results.row(DEFAULT_LABEL))
    if results.sessions is not None:
        out += sessions_section(results.sessions)
    if results.scale:
        out += scale_section(results.scale)
    if results.load_stages is not None:
        out += load_stages_section(results.load_stages, results.scale)
    if results.cluster:
        out += cluster_section(results.cluster, info.load)
    if results.fixture is not None:
        out += fixture_section(results.fixture)
    out += targets_section(results, info)
    out.append(
        "How to run: `make bench` (up to about 14 minutes, see `--time-budget`; installs wrk with apt-get if "
        "missing) or `make bench-anchors` (adds Prism and WireMock, installed with npm under `bench/.tools/`). "
        "Options: `.venv/bin/python -m bench.run --help`; hot spots: `bench/profile.py`."
    )
    return "\n".join(out) + "\n"
