"""More than one core: the event lookup through nginx in front of 1 and then 2 mock-server processes.

The recipe measured is the one `make cluster-test` tests (scripts/cluster.py, deploy/nginx/mock-cluster.conf).
Here nothing is pinned: the processes, nginx and wrk share both cores, as they would on a 2-core CI runner;
the requests spread over 64 sessions, which the balancer hashes to the processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from bench.harness import PYTHON, ROOT, Harness, ServerSpec, WrkResult, log
from bench.sections import Load

CLUSTER_SCRIPT = ROOT / "scripts" / "cluster.py"
SESSIONS = 64  # bench/wrk/cluster_lookup.lua


@dataclass
class ClusterRow:
    processes: int
    result: WrkResult | None = None
    problem: str | None = None


def ensure_nginx() -> str | None:
    """nginx's path, installed with apt-get when missing (as wrk is); None when that fails."""
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found:
        return found
    log("nginx is missing: installing it with apt-get")
    apt = ["apt-get"] if os.geteuid() == 0 else ["sudo", "apt-get"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (["update", "-qq"], ["install", "-y", "-qq", "nginx"]):
        if subprocess.run([*apt, *step], env=env, timeout=600).returncode != 0:
            return None
    return shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


@contextmanager
def _every_core() -> Iterator[None]:
    """The orchestrator is pinned to the client core, and what it starts inherits that: lift it meanwhile."""
    saved = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    try:
        yield
    finally:
        os.sched_setaffinity(0, saved)


def cluster_spec(processes: int, nginx: str, harness: Harness) -> ServerSpec:
    return ServerSpec(
        f"cluster {processes}",
        (PYTHON, str(CLUSTER_SCRIPT), "--processes", str(processes), "--port", "{port}", "--nginx", nginx),
        note="scripts/cluster.py",
        cwd=harness.tree,
    )


def bench_cluster(harness: Harness, load: Load, counts: Sequence[int] = (1, 2)) -> list[ClusterRow]:
    rows = [ClusterRow(n) for n in counts]
    nginx = ensure_nginx()
    if nginx is None:
        for row in rows:
            row.problem = "nginx could not be installed"
        return rows
    with _every_core(), Harness(harness.wrk, nice=harness.nice, tree=harness.tree, pin=False) as free:
        for row in rows:
            try:
                with free.running(cluster_spec(row.processes, nginx, harness)) as cluster:
                    if load.warmup > 0:
                        free.run_wrk(cluster.port, "/", "cluster_lookup.lua", load.warmup, load.connections)
                    row.result = free.run_wrk(cluster.port, "/", "cluster_lookup.lua", load.duration, load.connections)
            except (RuntimeError, TimeoutError, OSError, subprocess.SubprocessError) as exc:
                row.problem = str(exc).splitlines()[0][:300]
                log(f"cluster {row.processes}: FAILED: {row.problem}")
                continue
            r = row.result
            log(
                f"cluster of {row.processes}: {r.rps:,.0f} req/s, p50 {r.p50_ms:.2f} ms, p99 {r.p99_ms:.2f} ms, "
                f"errors {r.errors}"
            )
    return rows


def cluster_section(rows: list[ClusterRow], load: Load) -> list[str]:
    one = next((r.result for r in rows if r.processes == 1 and r.result), None)
    out = [
        "## More than one core: N processes behind nginx\n",
        f"`scripts/cluster.py --processes N` (the recipe `make cluster-test` tests): N mock-server processes and "
        f"nginx (one worker) hashing each session to one process. wrk: 1 thread, {load.connections} connections, "
        f"{load.duration:.0f} s after a {load.warmup:.0f} s warm-up, event lookups over {SESSIONS} sessions "
        "(`X-Mock-Session`). Nothing pinned: the processes, nginx and wrk share the machine's cores.\n",
        "| processes | req/s | vs 1 process | p50 ms | p99 ms | errors |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if row.result is None:
            out.append(f"| {row.processes} | {row.problem or 'not measured'} | | | | |")
            continue
        r = row.result
        ratio = f"{r.rps / one.rps:.2f}x" if one else "n/a"
        out.append(f"| {row.processes} | {r.rps:,.0f} | {ratio} | {r.p50_ms:.2f} | {r.p99_ms:.2f} | {r.errors} |")
    out.append("")
    return out
