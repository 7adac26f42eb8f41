"""How the benchmark runs things: servers pinned to one core, wrk pinned to the other, and what they cost.

A `Harness` owns every process it starts (and stops them all when it closes), the priority and pinning
they run with, and the checkout whose `mock_server/` is measured. The rest of this module is stateless:
paths, /proc readings, one HTTP call.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent  # the repository
BENCH = ROOT / "bench"
WRK_DIR = BENCH / "wrk"
TOOLS = BENCH / ".tools"  # Prism and WireMock (npm; ignored by git)
WORK = ROOT / ".bench"  # generated scenarios, logs, WireMock stubs, profiles (ignored by git)
PYTHON = sys.executable
HOST = "127.0.0.1"
SERVER_CORE = "0"
CLIENT_CORE = "1"
CAN_PIN = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def http_call(port: int, method: str, path: str, body: str | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


# --- /proc readings ----------------------------------------------------------------------------------


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    """VmRSS (or VmHWM, the peak) of the process, in MB (10^6 bytes), or None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024 / 1e6
    except OSError:
        return None
    return None


def tree_pids(pid: int) -> list[int]:
    """The process and its descendants (worker processes), from /proc's children lists."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
    return found


def tree_pss_mb(pid: int) -> float:
    """The proportional set size of the process and its descendants, in MB: forked workers share their
    parent's pages, which a sum of RSS would count once per process."""
    total = 0
    for member in tree_pids(pid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
    return total * 1024 / 1e6


def cpu_seconds(pid: int) -> float | None:
    """CPU time of the process and of its children it has waited for (its worker processes), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime, stime, cutime, cstime


class TreeMemory:
    """Samples the proportional memory of a process tree every `every` seconds, in a thread, for its peak."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        self.peak_mb = 0.0
        self._pid = pid
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, tree_pss_mb(self._pid))
            self._stop.wait(self._every)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak_mb


def mem_available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024 / 1e6
    return 0.0


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
    """CPU time of this process and of its children that have been waited for, in clock ticks."""
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


# --- what is started and what comes back ---------------------------------------------------------------


@dataclass(frozen=True)
class ServerSpec:
    label: str
    argv: tuple[str, ...]  # with {port} to fill in
    ready_path: str = "/__mock/health"
    note: str = ""
    start_timeout: float = 60.0
    cwd: Path = ROOT  # where it runs: `python -m mock_server` imports the mock_server/ found there first


@dataclass
class Running:
    spec: ServerSpec
    process: subprocess.Popen[bytes]
    port: int
    ready_after: float  # seconds from launch to the first 200 on ready_path
    log_path: Path
    load_cpu_s: float | None = None  # CPU seconds of the process and its waited-for children until ready
    tree_peak_mb: float | None = None  # peak proportional memory of the process tree until ready (sampled)


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


def _stop(process: subprocess.Popen[Any]) -> None:
    """The process's own group (it was started in a new session), TERM then KILL."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


class Harness:
    """Starts servers and wrk, each in a session of its own, pinned and prioritized; stops them all on close.

    `nice` below 0 needs root. `tree` is the checkout whose `mock_server/` the mock's servers import."""

    def __init__(self, wrk: str, nice: int = 0, tree: Path = ROOT, pin: bool = CAN_PIN) -> None:
        self.wrk = wrk
        self.nice = nice
        self.tree = tree
        self.pin = pin
        self._processes: set[subprocess.Popen[Any]] = set()
        self._cpf_base = 200_000_000

    def __enter__(self) -> Harness:
        WORK.mkdir(exist_ok=True)
        if self.pin:
            os.sched_setaffinity(0, {int(CLIENT_CORE)})  # the orchestrator stays off the server's core too
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop_all()

    def stop_all(self) -> None:
        for process in list(self._processes):
            self.stop(process)

    def stop(self, process: subprocess.Popen[Any]) -> None:
        _stop(process)
        self._processes.discard(process)

    def pinned(self, core: str, argv: Sequence[str]) -> list[str]:
        """argv pinned to one core (when the machine has two) and run at the harness's priority."""
        prefix = ["taskset", "-c", core] if self.pin else []
        if self.nice:
            prefix += ["nice", "-n", str(self.nice)]
        return [*prefix, *argv]

    def _prioritize(self, pid: int) -> None:
        """Give a process started in its own session the harness's priority. With the kernel's autogroups on,
        the scheduler shares a core between sessions first and only then by nice value inside each, so the
        session's autogroup is what has to get it (CAP_SYS_NICE, i.e. root, for a negative value)."""
        if self.nice:
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/autogroup").write_text(str(self.nice))

    def _start(self, argv: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
        process: subprocess.Popen[Any] = subprocess.Popen(argv, start_new_session=True, **popen)
        self._processes.add(process)
        self._prioritize(process.pid)
        return process

    def launch(
        self, spec: ServerSpec, timeout: float | None = None, poll: float = 0.005, every_core: bool = False
    ) -> Running:
        """Start the server pinned to the server core; wait for the first 200 on its readiness path.

        `every_core`: it starts on every core, so that a big scenario's worker processes can pack it in
        parallel, its process tree's memory is sampled until it is ready, and then it is pinned to the
        server core like any other server."""
        port = free_port()
        core = f"0-{(os.cpu_count() or 1) - 1}" if every_core else SERVER_CORE
        argv = self.pinned(core, [a.format(port=port) for a in spec.argv])
        log_path = WORK / "logs" / f"{spec.label.replace(' ', '_').replace('/', '_')}-{port}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("wb") as out:
            started = time.perf_counter()
            process = self._start(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=spec.cwd)
        memory = TreeMemory(process.pid) if every_core else None
        deadline = started + (timeout if timeout is not None else spec.start_timeout)
        try:
            while True:
                if process.poll() is not None:
                    tail = log_path.read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"{spec.label} exited with {process.returncode} before it was ready:\n{tail}")
                with contextlib.suppress(OSError):
                    status, _ = http_call(port, "GET", spec.ready_path, timeout=2)
                    if status == 200:
                        ready_after = time.perf_counter() - started
                        running = Running(spec, process, port, ready_after, log_path, cpu_seconds(process.pid))
                        if memory is not None:
                            running.tree_peak_mb = memory.stop()
                            if self.pin:  # every thread of it, from now on, on the server core
                                subprocess.run(
                                    ["taskset", "-a", "-p", "-c", SERVER_CORE, str(process.pid)],
                                    check=True,
                                    capture_output=True,
                                )
                        return running
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"{spec.label} was not ready within {deadline - started:.0f} s")
                time.sleep(poll)
        except BaseException:
            self.stop(process)
            raise
        finally:
            if memory is not None:
                memory.stop()

    def run_pinned(
        self, core: str, argv: Sequence[str], timeout: float, **popen: Any
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        """Run a bounded command to its end on `core`, at the harness's priority, in a session of its own: its
        result (output as text) and its wall time in seconds, launch to exit."""
        started = time.perf_counter()
        process = self._start(
            self.pinned(core, argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            seconds = time.perf_counter() - started
        finally:
            self.stop(process)
        return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), seconds

    @contextlib.contextmanager
    def running(self, spec: ServerSpec, timeout: float | None = None, every_core: bool = False) -> Iterator[Running]:
        server = self.launch(spec, timeout, every_core=every_core)
        try:
            yield server
        finally:
            self.stop(server.process)

    def next_cpf_base(self) -> str:
        """Every wrk run that adds recipients gets its own range of CPFs (1M each): a document already in
        the list answers 409."""
        self._cpf_base += 1_000_000
        return str(self._cpf_base)

    def run_wrk(
        self,
        port: int,
        path: str,
        script: str,
        seconds: float,
        connections: int,
        script_args: Sequence[str] = (),
        server_pid: int | None = None,
    ) -> WrkResult:
        """One bounded wrk run (one thread) on the client core; `server_pid` also measures the foreign load."""
        argv = self.pinned(
            CLIENT_CORE,
            [
                self.wrk,
                "-t1",
                f"-c{connections}",
                f"-d{max(1, round(seconds))}s",  # wrk takes whole seconds
                "--timeout",
                "5s",
                "-s",
                str(WRK_DIR / script),
                f"http://{HOST}:{port}{path}",
            ],
        )
        if script_args:
            argv += ["--", *script_args]
        load = ForeignLoad(server_pid) if server_pid is not None and self.pin else None
        process = self._start(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "BENCH_WRK_DIR": str(WRK_DIR)},
        )
        try:
            stdout, stderr = process.communicate(timeout=seconds + 60)
        finally:
            self.stop(process)
        foreign = load.finish() if load else None
        line = next((ln for ln in stdout.splitlines() if ln.startswith("WRKJSON ")), None)
        if process.returncode != 0 or line is None:
            raise RuntimeError(f"wrk failed ({process.returncode}): {stdout[-1500:]} {stderr[-1500:]}")
        return parse_wrk(line, foreign)


def parse_wrk(line: str, foreign: tuple[float, float] | None = None) -> WrkResult:
    """The `WRKJSON {...}` line of bench/wrk/report.lua."""
    raw = json.loads(line.removeprefix("WRKJSON "))
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
