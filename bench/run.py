"""`make bench` / `make bench-anchors`: end-to-end benchmark of the mock server over loopback.

Starts every server itself (pinned to core 0 with taskset), drives it with wrk (pinned to core 1, one
thread, 32 connections), and writes BENCHMARKS.md: throughput and latency of the event lookup, the account
limit change and the recipient add for the mock in its default and a quiet configuration and for a bare
Starlette app serving the same JSON, all from one run so the ratios cancel the machine's noise; with
`--anchors` also Prism and WireMock on the same routes. Then start-up time and RSS, the memory of 256 busy
sessions, and scenarios of 1k..1M generated events (load time, RSS, lookup latency).

Everything it starts it stops (bounded wrk runs, servers killed in `finally`); the whole run keeps to
`--time-budget` seconds, skipping a scale step that would not fit (and saying so in the report).

    .venv/bin/python bench/run.py [--anchors] [--duration 10] [--scale 1000,10000,100000,1000000]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import platform
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
WRK_DIR = BENCH / "wrk"
TOOLS = BENCH / ".tools"
WORK = ROOT / ".bench"  # generated scenarios, logs, WireMock stubs (ignored by git)
PYTHON = sys.executable
HOST = "127.0.0.1"
SERVER_CORE = "0"
CLIENT_CORE = "1"

EVENT_KEY = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"
ACCOUNT = "0001-123456"
LOOKUP_PATH = f"/event_conciliation/extraordinary_event/{EVENT_KEY}"
LIMIT_PATH = f"/limits/account/{ACCOUNT}/limit_update_request"
RECIPIENT_PATH = f"/limits/account/{ACCOUNT}/recipient_list/recipient"
LIMIT_BODY = (
    '{"pix":{"withdraw":[{"start_time":"06:00:00-03:00","amount":400000},'
    '{"start_time":"20:00:00-03:00","amount":200000}],"change":[{"start_time":"06:00:00-03:00","amount":400000}],'
    '"transaction_natural_person":[{"start_time":"06:00:00-03:00","amount":1200000},'
    '{"start_time":"20:00:00-03:00","amount":100000}]}}'
)


@dataclass(frozen=True)
class Endpoint:
    name: str
    method: str
    path: str
    script: str
    status: int  # what a correct answer is
    sample_body: str | None = None  # for the one-shot check before the load


ENDPOINTS = (
    Endpoint("event lookup", "GET", LOOKUP_PATH, "lookup.lua", 200),
    Endpoint("limit change", "POST", LIMIT_PATH, "limit_change.lua", 201, LIMIT_BODY),
    Endpoint("recipient add", "POST", RECIPIENT_PATH, "recipient_add.lua", 201, '{"document_number":"529.982.247-25"}'),
)


# --- small helpers ------------------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    """VmRSS (or VmHWM, the peak) of the process, in MB (10^6 bytes), or None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        return None
    return None


def core_jiffies(core: str) -> tuple[int, int]:
    """(busy, total) clock ticks of one core since boot, from /proc/stat."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{core} "):
            values = [int(v) for v in line.split()[1:]]
            # user + nice + system: time in processes. irq/softirq (where loopback TCP is processed) and
            # steal are left out of "busy", so they never count as another process's load.
            return values[0] + values[1] + values[2], sum(values[:8])
    return 0, 0


def process_jiffies(pid: int) -> int:
    """utime + stime of a process (all its threads), in clock ticks."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def children_jiffies() -> int:
    import resource

    ticks = os.sysconf("SC_CLK_TCK")
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return int((own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime) * ticks)


class ForeignLoad:
    """How busy each core was with processes other than ours during a measurement, in percent."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.server0 = core_jiffies(SERVER_CORE)
        self.client0 = core_jiffies(CLIENT_CORE)
        self.proc0 = process_jiffies(server_pid)
        self.kids0 = children_jiffies()

    def finish(self) -> tuple[float, float]:
        busy_s, total_s = (b - a for a, b in zip(self.server0, core_jiffies(SERVER_CORE), strict=True))
        busy_c, total_c = (b - a for a, b in zip(self.client0, core_jiffies(CLIENT_CORE), strict=True))
        ours_s = process_jiffies(self.server_pid) - self.proc0
        ours_c = children_jiffies() - self.kids0
        server = max(0.0, (busy_s - ours_s) * 100 / total_s) if total_s else 0.0
        client = max(0.0, (busy_c - ours_c) * 100 / total_c) if total_c else 0.0
        return server, client


def http_call(port: int, method: str, path: str, body: str | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


NICE = [0]  # set from --nice: the priority of the servers and of wrk


def prioritize(pid: int) -> None:
    """Give a process started in its own session the --nice priority. With the kernel's autogroups on, the
    scheduler shares a core between sessions first and only then by nice value inside each, so the session's
    autogroup is what has to get it (CAP_SYS_NICE, i.e. root, for a negative value)."""
    if NICE[0]:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/autogroup").write_text(str(NICE[0]))


def pinned(core: str, argv: Sequence[str]) -> list[str]:
    """argv pinned to one core (when the machine has two) and run at the --nice priority."""
    prefix = ["taskset", "-c", core] if PINNING else []
    if NICE[0]:
        prefix += ["nice", "-n", str(NICE[0])]
    return [*prefix, *argv]


PINNING = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None


# --- tools -------------------------------------------------------------------------------------------


def ensure_wrk() -> str:
    wrk = shutil.which("wrk")
    if wrk:
        return wrk
    log("wrk is missing: installing it with apt-get")
    apt = ["apt-get"] if os.geteuid() == 0 else ["sudo", "apt-get"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run([*apt, "install", "-y", "-qq", "wrk"], env=env, timeout=600).returncode != 0:
        subprocess.run([*apt, "update", "-qq"], env=env, timeout=600, check=True)
        subprocess.run([*apt, "install", "-y", "-qq", "wrk"], env=env, timeout=600, check=True)
    wrk = shutil.which("wrk")
    if not wrk:
        raise SystemExit("bench: wrk could not be installed")
    return wrk


PRISM_JS = TOOLS / "node_modules/@stoplight/prism-cli/dist/index.js"
WIREMOCK_DIR = TOOLS / "node_modules/wiremock/build"


def ensure_anchor_tools() -> None:
    if PRISM_JS.exists() and any(WIREMOCK_DIR.glob("*.jar")):
        return
    for tool in ("node", "npm", "java"):
        if not shutil.which(tool):
            raise SystemExit(f"bench: --anchors needs {tool} on the PATH")
    log(f"installing @stoplight/prism-cli and wiremock into {TOOLS}")
    TOOLS.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["npm", "install", "--prefix", str(TOOLS), "--no-audit", "--no-fund", "@stoplight/prism-cli", "wiremock"],
        check=True,
        timeout=900,
    )


def write_wiremock_stubs() -> Path:
    """Stubs equivalent to the bare app: same paths, same JSON bytes; the POSTs need a JSON body with the right key."""
    sys.path.insert(0, str(BENCH))
    import bare_app  # the bytes live in one place

    root = WORK / "wiremock"
    mappings = root / "mappings"
    shutil.rmtree(root, ignore_errors=True)
    mappings.mkdir(parents=True)
    (root / "__files").mkdir()
    json_header = {"Content-Type": "application/json"}
    stubs = {
        "lookup": {
            "request": {"method": "GET", "urlPathPattern": "/event_conciliation/extraordinary_event/[0-9a-fA-F-]{36}"},
            "response": {"status": 200, "body": bare_app.EVENT.decode(), "headers": json_header},
        },
        "limit_change": {
            "request": {
                "method": "POST",
                "urlPathPattern": "/limits/account/[^/]+/limit_update_request",
                "headers": {"Content-Type": {"contains": "application/json"}},
                "bodyPatterns": [{"matchesJsonPath": "$.pix"}],
            },
            "response": {"status": 201, "body": bare_app.LIMIT_CHANGE.decode(), "headers": json_header},
        },
        "recipient_add": {
            "request": {
                "method": "POST",
                "urlPathPattern": "/limits/account/[^/]+/recipient_list/recipient",
                "headers": {"Content-Type": {"contains": "application/json"}},
                "bodyPatterns": [{"matchesJsonPath": "$.document_number"}],
            },
            "response": {"status": 201, "body": bare_app.RECIPIENT.decode(), "headers": json_header},
        },
        "health": {
            "request": {"method": "GET", "url": "/__mock/health"},
            "response": {"status": 200, "body": bare_app.HEALTH.decode(), "headers": json_header},
        },
    }
    for name, stub in stubs.items():
        (mappings / f"{name}.json").write_text(json.dumps(stub, indent=2))
    return root


# --- servers -----------------------------------------------------------------------------------------


@dataclass
class ServerSpec:
    label: str
    argv: list[str]  # with {port} to fill in
    ready_path: str = "/__mock/health"
    note: str = ""
    start_timeout: float = 60.0
    cwd: Path | None = None  # where it runs (default: the repository)


TREE = [ROOT]  # the checkout whose mock_server/ is measured (--tree): `python -m` imports from the cwd first


@dataclass
class Running:
    spec: ServerSpec
    process: subprocess.Popen[bytes]
    port: int
    ready_after: float  # seconds from launch to the first 200 on ready_path
    log_path: Path


_RUNNING: set[subprocess.Popen[bytes]] = set()


def _stop(process: subprocess.Popen[bytes]) -> None:
    """The server's own process group (it was started in a new session), TERM then KILL."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    _RUNNING.discard(process)


def stop_all() -> None:
    for process in list(_RUNNING):
        _stop(process)


def launch(spec: ServerSpec, timeout: float | None = None, poll: float = 0.005) -> Running:
    """Start the server pinned to the server core; wait for the first 200 on its readiness path."""
    port = free_port()
    argv = pinned(SERVER_CORE, [a.format(port=port) for a in spec.argv])
    log_path = WORK / "logs" / f"{spec.label.replace(' ', '_').replace('/', '_')}-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as out:
        started = time.perf_counter()
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=spec.cwd or ROOT,
            start_new_session=True,
        )
    _RUNNING.add(process)
    prioritize(process.pid)
    deadline = started + (timeout if timeout is not None else spec.start_timeout)
    try:
        while True:
            if process.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"{spec.label} exited with {process.returncode} before it was ready:\n{tail}")
            try:
                status, _ = http_call(port, "GET", spec.ready_path, timeout=2)
                if status == 200:
                    return Running(spec, process, port, time.perf_counter() - started, log_path)
            except OSError:
                pass
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{spec.label} was not ready within {deadline - started:.0f} s")
            time.sleep(poll)
    except BaseException:
        _stop(process)
        raise


@contextlib.contextmanager
def running(spec: ServerSpec, timeout: float | None = None) -> Iterator[Running]:
    server = launch(spec, timeout)
    try:
        yield server
    finally:
        _stop(server.process)


def mock_spec(label: str, *options: str, note: str = "") -> ServerSpec:
    return ServerSpec(
        label, [PYTHON, "-m", "mock_server", "--host", HOST, "--port", "{port}", *options], note=note, cwd=TREE[0]
    )


BARE = ServerSpec(
    "bare Starlette",
    [PYTHON, str(BENCH / "bare_app.py"), "--host", HOST, "--port", "{port}"],
    note="same uvicorn options, fixed bytes",
)


def prism_spec() -> ServerSpec:
    return ServerSpec(
        "Prism",
        ["node", str(PRISM_JS), "mock", str(ROOT / "openapi.yaml"), "-h", HOST, "-p", "{port}"],
        ready_path=LOOKUP_PATH,
        note="`prism mock openapi.yaml` (validates requests, answers the spec's examples)",
        start_timeout=120,
    )


def wiremock_spec(root: Path) -> ServerSpec:
    jar = next(WIREMOCK_DIR.glob("*.jar"))
    return ServerSpec(
        "WireMock",
        [
            "java",
            "-jar",
            str(jar),
            "--bind-address",
            HOST,
            "--port",
            "{port}",
            "--root-dir",
            str(root),
            "--disable-banner",
            "--max-request-journal-entries",
            "1000",
        ],
        note="standalone jar from npm `wiremock`, static stubs, journal capped at 1000 like the mock's",
        start_timeout=120,
    )


# --- wrk ---------------------------------------------------------------------------------------------


@dataclass
class WrkResult:
    requests: int
    seconds: float
    rps: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    errors: int  # socket errors + status >= 400 + timeouts
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    foreign: tuple[float, float] | None = None  # % of core 0 / core 1 used by other processes meanwhile


ANCHOR_LABELS = ("Prism", "WireMock")
_CPF_BASE = [200_000_000]


def next_cpf_base() -> str:
    """Every wrk run that adds recipients gets its own range of numbers (1M each)."""
    _CPF_BASE[0] += 1_000_000
    return str(_CPF_BASE[0])


def run_wrk(
    wrk: str,
    port: int,
    path: str,
    script: str,
    seconds: float,
    connections: int,
    script_args: Sequence[str] = (),
    server_pid: int | None = None,
) -> WrkResult:
    argv = pinned(
        CLIENT_CORE,
        [
            wrk,
            "-t1",
            f"-c{connections}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "5s",  # wrk takes whole seconds
            "-s",
            str(WRK_DIR / script),
            f"http://{HOST}:{port}{path}",
        ],
    )
    if script_args:
        argv += ["--", *script_args]
    env = {**os.environ, "BENCH_WRK_DIR": str(WRK_DIR)}
    load = ForeignLoad(server_pid) if server_pid is not None and PINNING else None
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    _RUNNING.add(process)  # type: ignore[arg-type]
    prioritize(process.pid)
    try:
        stdout, stderr = process.communicate(timeout=seconds + 60)
    finally:
        _stop(process)  # type: ignore[arg-type]
    foreign = load.finish() if load else None
    line = next((ln for ln in stdout.splitlines() if ln.startswith("WRKJSON ")), None)
    if process.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({process.returncode}): {stdout[-1500:]} {stderr[-1500:]}")
    raw = json.loads(line[len("WRKJSON ") :])
    secs = raw["duration_us"] / 1e6
    errors = sum(raw[k] for k in ("connect_errors", "read_errors", "write_errors", "status_errors", "timeouts"))
    return WrkResult(
        requests=raw["requests"],
        seconds=secs,
        rps=raw["requests"] / secs if secs else 0.0,
        p50_ms=raw["p50_us"] / 1000,
        p90_ms=raw["p90_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000,
        max_ms=raw["max_us"] / 1000,
        errors=errors,
        raw=raw,
        foreign=foreign,
    )


def script_args_for(endpoint: Endpoint) -> list[str]:
    return [next_cpf_base()] if endpoint.script == "recipient_add.lua" else []


# --- the measurements --------------------------------------------------------------------------------


@dataclass
class ServerRow:
    label: str
    note: str
    ready_s: float | None = None
    rss_start: float | None = None
    rss_after: float | None = None
    results: dict[str, WrkResult] = field(default_factory=dict)
    problem: str | None = None


def bench_servers(wrk: str, specs: Sequence[ServerSpec], args: argparse.Namespace) -> list[ServerRow]:
    """Every server up at once (idle but the one under load), and the rows interleaved: for each endpoint,
    each server in turn, so a change of the machine's background load hits every server alike."""
    rows = [ServerRow(spec.label, spec.note) for spec in specs]
    servers: dict[str, Running] = {}
    try:
        for spec, row in zip(specs, rows, strict=True):
            log(f"{spec.label}: starting")
            try:
                server = servers[spec.label] = launch(spec)
            except (RuntimeError, TimeoutError, OSError) as exc:
                row.problem = str(exc).splitlines()[0][:300]
                log(f"{spec.label}: FAILED to start: {exc}")
                continue
            row.ready_s = server.ready_after
            time.sleep(0.5)  # let start-up settle before reading RSS
            row.rss_start = rss_mb(server.process.pid)
        for endpoint in ENDPOINTS:
            for row in rows:
                running_server = servers.get(row.label)
                if running_server is None or row.problem:
                    continue
                server = running_server
                try:
                    status, body = http_call(server.port, endpoint.method, endpoint.path, endpoint.sample_body)
                    if status != endpoint.status:
                        raise RuntimeError(f"{endpoint.name} answered {status}, not {endpoint.status}: {body[:200]!r}")
                    warmup = args.anchor_warmup if row.label in ANCHOR_LABELS else args.warmup  # a JIT needs longer
                    if warmup > 0:
                        run_wrk(
                            wrk,
                            server.port,
                            endpoint.path,
                            endpoint.script,
                            warmup,
                            args.connections,
                            script_args_for(endpoint),
                        )
                    result = run_wrk(
                        wrk,
                        server.port,
                        endpoint.path,
                        endpoint.script,
                        args.duration,
                        args.connections,
                        script_args_for(endpoint),
                        server.process.pid,
                    )
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
            _stop(server.process)
    return rows


@dataclass
class Startup:
    times: list[float]
    rss: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.times)


def bench_startup(runs: int) -> Startup:
    spec = mock_spec("mock default (start-up)")
    times, rss = [], []
    for _ in range(runs):
        with running(spec) as server:
            times.append(server.ready_after)
            value = rss_mb(server.process.pid)
            if value is not None:
                rss.append(value)
    log(
        f"start-up: median {statistics.median(times) * 1000:.0f} ms over {runs} launches "
        f"({', '.join(f'{t * 1000:.0f}' for t in times)} ms)"
    )
    return Startup(times, rss)


@dataclass
class SessionsResult:
    requests: int
    seconds: float
    errors: int
    rss_before: float | None
    rss_after: float | None
    per_session: float


def bench_sessions(wrk: str, seconds: float, connections: int) -> SessionsResult:
    with running(mock_spec("mock default (sessions)")) as server:
        time.sleep(0.3)
        before = rss_mb(server.process.pid)
        result = run_wrk(
            wrk, server.port, "/", "sessions.lua", seconds, connections, [next_cpf_base()], server.process.pid
        )
        after = rss_mb(server.process.pid)
        status, body = http_call(server.port, "GET", "/__mock/requests", None)
        assert status == 200, body
    log(
        f"256 sessions: {result.requests} POSTs in {result.seconds:.1f} s, RSS {before} -> {after} MB, "
        f"errors {result.errors}"
    )
    return SessionsResult(result.requests, result.seconds, result.errors, before, after, result.requests / 256)


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


def mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def bench_scale(
    wrk: str, sizes: Sequence[int], syntax: str, args: argparse.Namespace, deadline: float
) -> list[ScaleRow]:
    """Each size in turn: generate, load (launch -> first 200), RSS, random lookups. A size whose load,
    projected from the sizes done, would not fit the time left or the memory free is skipped, and says so."""
    rows: list[ScaleRow] = []
    baseline: float | None = None  # load time of the smallest size: start-up plus next to no events
    per_event_s: float | None = None  # load seconds per event, from the largest size done so far
    peak_per_event: float | None = None  # MB of peak RSS per event, likewise
    for size in sizes:
        row = ScaleRow(size, syntax)
        rows.append(row)
        label = f"scale {size} ({syntax})"
        remaining = deadline - time.monotonic()
        if baseline is not None and per_event_s is not None:
            projected = baseline + per_event_s * size * 1.15
            needed = projected + size / 50_000 + args.duration + args.warmup + 15  # + generation and the lookups
            if needed > remaining:
                row.skipped = (
                    f"skipped: loading would take about {projected:.0f} s (projected from the previous "
                    f"size), and {max(0.0, remaining):.0f} s of the run's {args.time_budget:.0f} s "
                    "budget were left"
                )
                log(f"{label}: {row.skipped}")
                continue
        if peak_per_event is not None:
            projected_mb = peak_per_event * size * 1.2
            if projected_mb > 0.6 * mem_available_mb():
                row.skipped = (
                    f"skipped: would need about {projected_mb / 1000:.1f} GB of memory (projected), "
                    f"over 60% of the {mem_available_mb() / 1000:.1f} GB available"
                )
                log(f"{label}: {row.skipped}")
                continue
        directory = WORK / f"scale-{syntax}-{size}"
        shutil.rmtree(directory, ignore_errors=True)
        path = directory / "scale.yaml"
        try:
            started = time.perf_counter()
            subprocess.run(
                [PYTHON, str(BENCH / "gen_scenario.py"), str(size), str(path), "--syntax", syntax],
                check=True,
                timeout=max(60.0, remaining),
                capture_output=True,
            )
            row.gen_s = time.perf_counter() - started
            row.file_mb = path.stat().st_size / 1e6
            spec = mock_spec(f"mock {label}", "--fixtures", str(directory), "--scenario", "scale")
            load_timeout = max(30.0, deadline - time.monotonic() - args.duration - 15)
            log(f"{label}: {row.file_mb:.0f} MB generated in {row.gen_s:.1f} s; loading (up to {load_timeout:.0f} s)")
            with running(spec, timeout=load_timeout) as server:
                row.load_s = server.ready_after
                row.rss = rss_mb(server.process.pid)
                row.rss_peak = rss_mb(server.process.pid, "VmHWM")
                if args.warmup > 0:
                    run_wrk(
                        wrk, server.port, "/", "scale_lookup.lua", min(args.warmup, 2), args.connections, [str(size)]
                    )
                row.lookup = run_wrk(
                    wrk,
                    server.port,
                    "/",
                    "scale_lookup.lua",
                    args.duration,
                    args.connections,
                    [str(size)],
                    server.process.pid,
                )
            if baseline is None:
                baseline = row.load_s
            else:
                per_event_s = max(0.0, row.load_s - baseline) / size
            if row.rss_peak:
                peak_per_event = row.rss_peak / size
            log(
                f"{label}: loaded in {row.load_s:.2f} s, RSS {row.rss:.0f} MB (peak {row.rss_peak:.0f}), lookup "
                f"{row.lookup.rps:,.0f} req/s p50 {row.lookup.p50_ms:.2f} ms p99 {row.lookup.p99_ms:.2f} ms, "
                f"errors {row.lookup.errors}"
            )
        except TimeoutError as exc:
            row.skipped = f"did not finish loading: {exc}"
            log(f"{label}: {row.skipped}")
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            row.skipped = f"failed: {str(exc).splitlines()[0][:200]}"
            log(f"{label}: {row.skipped}")
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return rows


# --- the report --------------------------------------------------------------------------------------


def _f(value: float | None, fmt: str = "{:.0f}") -> str:
    return "n/a" if value is None else fmt.format(value)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("**met**" if ok else "**MISSED**")


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
            from importlib.metadata import version

            versions.append(f"{dist} {version(dist)}")
    wrk_version = "wrk"
    with contextlib.suppress(Exception):
        out = subprocess.run(["wrk", "-v"], capture_output=True, text=True, timeout=10)
        wrk_version = (out.stdout or out.stderr).splitlines()[0].split(" Copyright")[0]
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, {', '.join(versions)}, {wrk_version}"
    )


def git_revision() -> str:
    if TREE[0] != ROOT:
        return f"the tree in {TREE[0]}"
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


def write_report(
    path: Path,
    command: str,
    args: argparse.Namespace,
    rows: list[ServerRow],
    startup: Startup | None,
    sessions: SessionsResult | None,
    scale: list[ScaleRow],
    elapsed: float,
) -> None:
    by_label = {r.label: r for r in rows}
    bare = by_label.get("bare Starlette")
    default = by_label.get("mock default")

    def rps(row: ServerRow | None, endpoint: str) -> float | None:
        result = row.results.get(endpoint) if row else None
        return result.rps if result and result.errors == 0 else None

    out: list[str] = []
    out.append("# Benchmarks\n")
    out.append(
        f"Made by `{command}` on {time.strftime('%Y-%m-%d %H:%M %Z')} at commit {git_revision()}, "
        f"in {elapsed / 60:.1f} min.  "
    )
    out.append(f"Machine: {machine()}.  ")
    pin = (
        f"servers pinned to core {SERVER_CORE}, wrk to core {CLIENT_CORE} (`taskset`)"
        if PINNING
        else "NOT pinned (fewer than 2 cores or no taskset)"
    )
    if args.nice:
        pin += f", both at nice {args.nice} (their session's autogroup too)"
    anchor_warmup = f" ({args.anchor_warmup:g} s for Prism and WireMock)" if args.anchors else ""
    out.append(
        f"Load: wrk over loopback, 1 thread, {args.connections} connections, {args.duration:g} s per row after a "
        f"{args.warmup:g} s warm-up{anchor_warmup}, {pin}. Each server is started fresh by the script, in this "
        "one run, and the rows are interleaved (each endpoint on every server in turn), so the ratios cancel the "
        "machine's speed and noise. Latencies are wrk's (no coordinated-omission correction). *Other load* is "
        "the share of each core that processes other than the server (core 0) and wrk (core 1) took during the "
        "row: the machine is shared, and a high value on core 0 means that row is noisy. A row whose answers "
        "were not all the expected 200/201 counts errors and is not used in ratios.\n"
    )

    out.append("## Throughput and latency\n")
    out.append(
        "| server | endpoint | req/s | vs bare Starlette | p50 ms | p99 ms | errors | other load core 0 / 1 "
        "| ready after | RSS start → after load |"
    )
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
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
    out.append("Servers: " + "; ".join(f"**{r.label}**: {r.note}" for r in rows if r.note) + ".\n")

    if startup is not None:
        out.append("## Start-up\n")
        out.append("| measure | value |")
        out.append("|---|---:|")
        out.append(
            f"| launch → first 200 from `/__mock/health`, median of {len(startup.times)} | "
            f"{startup.median * 1000:.0f} ms |"
        )
        out.append(f"| all launches | {', '.join(f'{t * 1000:.0f}' for t in startup.times)} ms |")
        if startup.rss:
            out.append(f"| RSS at the first 200 (median) | {statistics.median(startup.rss):.1f} MB |")
        if default and default.rss_after:
            out.append(f"| RSS after the load of the table above (mock default) | {default.rss_after:.1f} MB |")
        out.append("")

    if sessions is not None:
        out.append("## 256 busy sessions (the cap)\n")
        out.append(
            f"{sessions.requests:,} POSTs in {sessions.seconds:.0f} s cycling `X-Mock-Session: s0..s255` "
            f"(limit change and recipient add in turn, about {sessions.per_session:.0f} per session; errors: "
            f"{sessions.errors}).\n"
        )
        out.append("| RSS before | RSS after | growth | per session | per request | at the journal cap, linear |")
        out.append("|---:|---:|---:|---:|---:|---:|")
        growth = (sessions.rss_after - sessions.rss_before) if sessions.rss_after and sessions.rss_before else None
        per_request = growth * 1e6 / sessions.requests if growth and sessions.requests else None
        # Each session keeps its last 1000 journal entries and 1000 proposals per account; recipients are unbounded.
        at_cap = per_request * 1000 * 256 / 1e6 if per_request else None
        out.append(
            f"| {_f(sessions.rss_before, '{:.1f} MB')} | {_f(sessions.rss_after, '{:.1f} MB')} | "
            f"{_f(growth, '{:.1f} MB')} | {_f(growth * 1000 / 256 if growth else None, '{:.0f} kB')} | "
            f"{_f(per_request / 1000 if per_request else None, '{:.1f} kB')} | "
            f"~{_f(at_cap, '{:.0f} MB')} (1000 requests x 256 sessions) |\n"
        )

    if scale:
        out.append("## Scale: generated scenarios\n")
        out.append(
            "The same events (`bench/gen_scenario.py`) written in JSON syntax (YAML includes it; how a program "
            "writes a big scenario) and in YAML block style (how a person writes one). Load = launch → first "
            "200 from `/__mock/health` with only the generated scenario in `--fixtures` (so it includes the "
            "interpreter's start-up). Lookups: GET of a random event among all those loaded.\n"
        )
        out.append(
            "| events | syntax | file | generated in | load | RSS loaded (peak) | lookup req/s | p50 ms "
            "| p99 ms | errors | other load core 0 / 1 |"
        )
        out.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in scale:
            if s.skipped:
                out.append(
                    f"| {s.events:,} | {s.syntax} | {_f(s.file_mb, '{:.0f} MB')} | {_f(s.gen_s, '{:.1f} s')} | "
                    f"{s.skipped} | | | | | | |"
                )
                continue
            lookup = s.lookup
            assert lookup is not None
            other = f"{lookup.foreign[0]:.0f}% / {lookup.foreign[1]:.0f}%" if lookup.foreign else "n/a"
            out.append(
                f"| {s.events:,} | {s.syntax} | {_f(s.file_mb, '{:.1f} MB')} | {_f(s.gen_s, '{:.1f} s')} | "
                f"{_f(s.load_s, '{:.2f} s')} | {_f(s.rss, '{:.0f}')} ({_f(s.rss_peak, '{:.0f} MB')}) | "
                f"{lookup.rps:,.0f} | "
                f"{lookup.p50_ms:.2f} | {lookup.p99_ms:.2f} | {lookup.errors} | {other} |"
            )
        out.append("")

    # --- targets
    out.append("## Targets (issue: speed targets, ratios from this one run)\n")
    out.append("| target | measured | verdict |")
    out.append("|---|---:|---|")
    lookup_ratio = _ratio(rps(default, "event lookup"), rps(bare, "event lookup"))
    limit_ratio = _ratio(rps(default, "limit change"), rps(bare, "limit change"))
    out.append(
        f"| event lookup ≥ 0.6x bare Starlette req/s | {_f(lookup_ratio, '{:.2f}x')} | "
        f"{_verdict(None if lookup_ratio is None else lookup_ratio >= 0.6)} |"
    )
    out.append(
        f"| limit change ≥ 0.4x bare Starlette req/s | {_f(limit_ratio, '{:.2f}x')} | "
        f"{_verdict(None if limit_ratio is None else limit_ratio >= 0.4)} |"
    )
    prism_ratio = _ratio(rps(default, "event lookup"), rps(by_label.get("Prism"), "event lookup"))
    wiremock_ratio = _ratio(rps(default, "event lookup"), rps(by_label.get("WireMock"), "event lookup"))
    anchors_note = "" if args.anchors else " (run `make bench-anchors`)"
    out.append(
        f"| default config ≥ 4x Prism's lookup req/s | {_f(prism_ratio, '{:.2f}x')}{anchors_note} | "
        f"{_verdict(None if prism_ratio is None else prism_ratio >= 4)} |"
    )
    out.append(
        f"| default config ≥ 1.2x WireMock's lookup req/s | {_f(wiremock_ratio, '{:.2f}x')}{anchors_note} | "
        f"{_verdict(None if wiremock_ratio is None else wiremock_ratio >= 1.2)} |"
    )
    p99 = default.results["event lookup"].p99_ms if default and "event lookup" in default.results else None
    out.append(
        f"| lookup p99 ≤ 10 ms at {args.connections} connections (default config) | {_f(p99, '{:.2f} ms')} | "
        f"{_verdict(None if p99 is None else p99 <= 10)} |"
    )
    start = startup.median if startup else None
    out.append(
        f"| start → first 200 ≤ 0.5 s (median of 5) | {_f(start * 1000 if start else None, '{:.0f} ms')} | "
        f"{_verdict(None if start is None else start <= 0.5)} |"
    )
    rss_start = statistics.median(startup.rss) if startup and startup.rss else None
    out.append(
        f"| RSS at start ≤ 60 MB | {_f(rss_start, '{:.1f} MB')} | "
        f"{_verdict(None if rss_start is None else rss_start <= 60)} |"
    )
    for syntax in dict.fromkeys(s.syntax for s in scale):
        by_size = {s.events: s for s in scale if s.lookup is not None and s.syntax == syntax}
        small, big = by_size.get(1000), by_size.get(1_000_000)
        name = f"lookup latency at 1M events ≤ 1.2x at 1k (p50; {syntax} scenario)"
        if small and big and small.lookup and big.lookup:
            growth = big.lookup.p50_ms / small.lookup.p50_ms
            out.append(
                f"| {name} | {growth:.2f}x ({big.lookup.p50_ms:.2f} vs {small.lookup.p50_ms:.2f} ms) | "
                f"{_verdict(growth <= 1.2)} |"
            )
        else:
            largest = max(by_size) if by_size else None
            extra = ""
            if small and small.lookup and largest and largest != 1000:
                largest_lookup = by_size[largest].lookup
                assert largest_lookup is not None
                extra = f"; at {largest:,}: {largest_lookup.p50_ms / small.lookup.p50_ms:.2f}x"
            out.append(f"| {name} | 1M not measured{extra} | {_verdict(None)} |")
        load100k = next((s.load_s for s in scale if s.events == 100_000 and s.syntax == syntax), None)
        out.append(
            f"| a 100k-event scenario loads in ≤ 3 s ({syntax} syntax) | {_f(load100k, '{:.1f} s')} | "
            f"{_verdict(None if load100k is None else load100k <= 3)} |"
        )
    out.append("")
    out.append(
        "How to run: `make bench` (up to about 14 minutes, see `--time-budget`; installs wrk with apt-get if "
        "missing) or `make bench-anchors` (adds Prism and WireMock, installed with npm under `bench/.tools/`). "
        "Options: `.venv/bin/python bench/run.py --help`; hot spots: `bench/profile.py`."
    )
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    log(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


# --- main --------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sections",
        default="throughput,startup,sessions,scale",
        help="which parts to run (comma-separated; default all four)",
    )
    parser.add_argument("--anchors", action="store_true", help="also Prism and WireMock (npm, under bench/.tools/)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of load per measured row (default 10)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of unmeasured load before each row")
    parser.add_argument(
        "--anchor-warmup",
        type=float,
        default=15.0,
        help="warm-up of Prism and WireMock per row (WireMock's JIT needs ~15 s to reach speed)",
    )
    parser.add_argument("--connections", type=int, default=32)
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
    parser.add_argument("--startup-runs", type=int, default=5)
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
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--command", default=None, help="the command shown in the report (make passes its own)")
    args = parser.parse_args(argv)

    NICE[0] = args.nice
    TREE[0] = args.tree.resolve()
    t0 = time.monotonic()
    deadline = t0 + args.time_budget
    command = args.command or "python bench/run.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if PINNING:
        os.sched_setaffinity(0, {int(CLIENT_CORE)})  # the orchestrator stays off the server's core too
    else:
        log("fewer than 2 cores or no taskset: servers and wrk are NOT pinned")
    WORK.mkdir(exist_ok=True)
    shutil.rmtree(WORK / "logs", ignore_errors=True)  # the servers' output of the previous run
    wrk = ensure_wrk()
    specs = [
        mock_spec("mock default", note="`mock-server` with no options (log level warning, no access log)"),
        mock_spec("mock quiet", "--log-level", "critical", "--no-admin", note="`--log-level critical --no-admin`"),
        mock_spec(
            "mock --log-level info",
            "--log-level",
            "info",
            note="`--log-level info` as `make run` does: uvicorn's access log on, for reference",
        ),
        BARE,
    ]
    if args.anchors:
        ensure_anchor_tools()
        specs += [prism_spec(), wiremock_spec(write_wiremock_stubs())]

    def on_signal(signum: int, _frame: object) -> None:
        stop_all()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    rows: list[ServerRow] = []
    startup = None
    sessions = None
    scale: list[ScaleRow] = []
    try:
        sections = {s.strip() for s in args.sections.split(",")}
        if "throughput" in sections:
            rows = bench_servers(wrk, specs, args)
        if "startup" in sections and args.startup_runs > 0:
            startup = bench_startup(args.startup_runs)
        if "sessions" in sections and args.sessions_seconds > 0:
            sessions = bench_sessions(wrk, args.sessions_seconds, args.connections)
        if "scale" not in sections:
            args.scale = ""
        sizes = sorted(int(s) for s in args.scale.split(",") if s.strip())
        for syntax in [s.strip() for s in args.scale_syntax.split(",") if s.strip()]:
            scale += bench_scale(wrk, sizes, syntax, args, deadline)
    finally:
        stop_all()
    write_report(args.output, command, args, rows, startup, sessions, scale, time.monotonic() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
