"""`mock-server verify-provider` and `mock-server --shadow` run for real: child processes against a real server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import REPOSITORY, live_server
from tests.provider.hostile import body, dripping, endless, gzip_bomb, hostile, large

TIMEOUT = 120


def verify_provider(*args: str, cwd: Path = REPOSITORY) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    command = [sys.executable, "-m", "mock_server", "verify-provider", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)


def test_a_clean_mock_on_the_default_scenario_agrees_twice_in_a_row(tmp_path: Path) -> None:
    with live_server() as server:
        first = verify_provider("--target", server.url, "--report", str(tmp_path / "first.xml"))
        second = verify_provider("--target", server.url, "--report", str(tmp_path / "second.xml"))
    for run in (first, second):
        assert run.returncode == 0, run.stdout + run.stderr
        assert "the provider agrees with the mock on every check" in run.stdout
    checks = [line for line in first.stdout.splitlines() if line.startswith("ok ")]
    root = ET.parse(tmp_path / "first.xml").getroot()
    assert len(root.findall("./testsuite/testcase")) == len(checks) == int(root.attrib["tests"]) > 60
    assert root.attrib["failures"] == "0"


def test_a_mock_on_another_scenario_differs_on_the_lookups_and_exits_1() -> None:
    with live_server("--scenario", "payments") as server:
        run = verify_provider("--target", server.url, "--quiet")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "operations that differ: getExtraordinaryEvent" in run.stdout
    assert "status: expected 200, got 404" in run.stdout


def test_an_unreachable_provider_exits_2() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = verify_provider("--target", f"http://127.0.0.1:{port}")
    assert run.returncode == 2
    assert "the provider cannot be reached" in run.stderr
    assert run.stdout == ""


def test_help_names_the_flags_and_the_exit_status() -> None:
    run = verify_provider("--help")
    assert run.returncode == 0
    for flag in ("--target", "--fixtures", "--scenario", "--report", "--noise", "--header", "--cert", "--key",
                 "--cacert", "--timeout", "--flows"):  # fmt: skip
        assert flag in run.stdout
    assert "Exit status: 0" in " ".join(run.stdout.split())


def test_shadow_mode_journals_the_divergent_call_of_a_real_backend() -> None:
    """A real mock on the payments scenario as the backend: the default scenario's event is not there."""
    with (
        live_server("--scenario", "payments") as backend,
        live_server("--shadow", backend.url) as front,
        httpx.Client(base_url=front.url, timeout=30) as client,
    ):
        answered = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
        client.get("/event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000")  # both 404
        found = client.get("/__mock/divergences").json()
    assert answered.status_code == 404 and answered.json()["code"] == "EVC100011"  # the backend's answer
    assert found["backend"] == backend.url
    assert [(d["path"], d["differences"]) for d in found["divergences"]] == [
        (f"/event_conciliation/extraordinary_event/{PENDING_EVENT}", ["status: expected 200, got 404"])
    ]


# --- bounded against a hostile backend or provider, at full size (issue 33) -------------------------------------

MEMORY_BOUND = 256 * 1024 * 1024  # what one hostile answer may add to the process, at most


def memory_kb(pid: int, field: str) -> int:
    """VmRSS (now) or VmHWM (the peak so far) of a process, in kB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(large(60_000_000), id="60MB"),
        pytest.param(body(gzip_bomb(200 * 1024 * 1024), Content_Encoding="gzip"), id="200KB-gzip-bomb"),
        pytest.param(endless, id="endless-chunked"),
    ],
)
def test_shadow_mode_reads_a_huge_answer_up_to_its_bound_only(answer) -> None:
    """The default bound (8 MiB decompressed): a 60 MB answer took the server from 66 MB to 1.9 GB, a 200 KB gzip
    bomb aborted it, an endless answer grew it until MemoryError."""
    with (
        hostile(answer) as backend,
        live_server("--shadow", backend) as front,
        httpx.Client(base_url=front.url, timeout=60) as client,
    ):
        client.get("/__mock/health").raise_for_status()
        before = memory_kb(front.proc.pid, "VmRSS")
        answered = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
        peak = memory_kb(front.proc.pid, "VmHWM")
        assert client.get("/__mock/health").status_code == 200  # still serving
        [divergence] = client.get("/__mock/divergences").json()["divergences"]
    assert answered.status_code == 502 and answered.json()["code"] == "backend_unreachable"
    assert "its body is larger than --shadow-max-body 8 MiB" in divergence["backend"]["error"]
    assert (peak - before) * 1024 < MEMORY_BOUND, f"{(peak - before) // 1024} MB added"


# The child's own peak (VmHWM), not getrusage's ru_maxrss: Linux carries ru_maxrss across exec from the process
# that forked it, so the child reported the test runner's size (439 MB once pytest had grown) as its own.
MEASURED = (
    "import sys\n"
    "from mock_server.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "peak = next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
    "print(f'maxrss {peak}', file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def test_verify_provider_against_40mb_answers_stays_bounded_and_prints_little() -> None:
    """40 MB answers took it to 1.35 GB and printed 84 MB of bodies."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    with hostile(large(40_000_000, declared=False)) as url:
        run = subprocess.run(
            [sys.executable, "-c", MEASURED, "verify-provider", "--target", url, "--flows", "8"],
            cwd=REPOSITORY, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
        )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert "an answer that cannot be used: its body is larger than --max-body 8 MiB" in run.stdout
    maxrss_kb = int(run.stderr.split("maxrss ")[1])
    assert maxrss_kb * 1024 < 70 * 1024 * 1024 + MEMORY_BOUND, f"{maxrss_kb // 1024} MB"  # 70 MB: the process at rest
    assert len(run.stdout) < 1_000_000


def test_verify_provider_against_a_provider_dripping_a_byte_every_2_s_ends() -> None:
    """`--timeout 2` is the whole call's: it ran for ever, a byte every 2 s never letting one read time out."""
    with hostile(dripping(2.0)) as url:
        run = verify_provider("--target", url, "--timeout", "2")
    assert run.returncode == 2 and run.stdout == ""
    assert (
        run.stderr
        == f"mock-server verify-provider: the provider cannot be reached: {url}: no whole answer within --timeout 2 s\n"
    )


def test_shadow_mode_answers_a_dripping_backend_within_its_timeout() -> None:
    with (
        hostile(dripping(2.0)) as backend,
        live_server("--shadow", backend, "--shadow-timeout", "3") as front,
        httpx.Client(base_url=front.url, timeout=60) as client,
    ):
        answered = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
    assert answered.status_code == 502
    assert answered.json()["message"].endswith("no whole answer within --shadow-timeout 3 s.")
