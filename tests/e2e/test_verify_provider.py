"""`mock-server verify-provider` and `mock-server --shadow` run for real: child processes against a real server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx

from tests.default_scenario import PENDING_EVENT
from tests.live_server import REPOSITORY, live_server

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
