"""The `pix_mock` fixture's sessions and connections, seen as an integrator sees them: pytester writes a test
project and runs pytest on it in a subprocess (the plugin from the installed package's `pytest11` entry point),
against a real `mock-server` (tests/live_server.py) whose session list is read after the run, or on the plugin's
in-process server, where the sessions are made and deleted in the server's event loop rather than over HTTP.

Each test's session is made for it and deleted after it, passed or failed; a failed test's is kept, and named in
its report, when --mock-server-keep-failed (or its ini and environment twins) asks. Every test's client shares
one connection pool a run: the run builds one SSL context, not one a test."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import LiveServer, live_server, stop_process

pytest_plugins = ["pytester"]

INI = """
[pytest]
filterwarnings = error
addopts = -p no:cacheprovider
{extra}
"""
SETTINGS = ("URL", "SCENARIO", "FIXTURES", "SEED", "CLOCK", "ADMIN_TOKEN", "KEEP_FAILED")
PENDING = PENDING_EVENT
KEPT = re.compile(r"session (pytest-main-[0-9a-f]{8}-\d+) is kept on (\S+), for --mock-server-keep-failed")

MANY = f"""
import pytest

@pytest.mark.parametrize("n", range(40))
def test_many(pix_mock, n):
    assert pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}").status_code == 200

def test_fails(pix_mock):
    pix_mock.pay("{PENDING}", amount=1)
    pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}")
    assert False, "the code under test did something wrong"

@pytest.mark.mock_server(clock="not a time")
def test_errors_in_setup(pix_mock):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in SETTINGS:
        monkeypatch.delenv(f"MOCK_SERVER_{name}", raising=False)
    pytester.makeini(INI.format(extra=""))
    return pytester


@pytest.fixture
def server() -> Iterator[LiveServer]:
    """A server of its own a test, with a small cap: a fixture that leaked sessions would fill it."""
    with live_server("--max-sessions", "8") as running:
        yield running


def sessions(server: LiveServer) -> dict[str, Any]:
    listing: dict[str, Any] = httpx.get(f"{server.url}/__mock/sessions", timeout=10).json()
    return listing


def names(server: LiveServer) -> list[str]:
    return [session["name"] for session in sessions(server)["sessions"]]


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one process", "xdist -n 2"])
def test_every_session_is_deleted_after_its_test_passed_or_failed(project, server, workers):
    project.makepyfile(test_many=MANY)
    result = project.runpytest_subprocess("--mock-server-url", server.url, *workers)
    result.assert_outcomes(passed=40, failed=1, errors=1)
    listing = sessions(server)
    assert len(listing["sessions"]) <= 3
    assert [s["name"] for s in listing["sessions"] if s["name"].startswith("pytest-")] == []
    assert listing["evictions"] == 0  # 42 tests, a cap of 8: none had to go
    assert "mock-server session kept" not in result.stdout.str()


def test_a_failed_tests_session_is_kept_and_named_when_asked(project, server):
    project.makepyfile(test_many=MANY)
    result = project.runpytest_subprocess("--mock-server-url", server.url, "--mock-server-keep-failed")
    result.assert_outcomes(passed=40, failed=1, errors=1)
    output = result.stdout.str()
    result.stdout.fnmatch_lines([f"mock-server: external {server.url}; scenario the server's default; *kept"])
    kept = KEPT.findall(output)
    assert len(kept) == 2 and {where for _, where in kept} == {server.url}  # the failure and the setup error
    assert sorted(names(server)) == sorted(name for name, _ in kept)  # the 40 that passed: deleted
    (failed,) = re.findall(r"^session (\S+) at \S+: 1 request\(s\)$", output, re.MULTILINE)  # its journal
    assert failed in dict(kept)
    assert f"DELETE {server.url}/__mock/sessions/{failed}" in output
    # What was left is the failed test's state, as it failed: the payment it made is there.
    state = httpx.get(f"{server.url}/__session/{failed}/__mock/state", timeout=10).json()
    event = next(e for e in state["events"] if e["extraordinary_event_conciliation_key"] == PENDING)
    assert event["total_paid_amount"] == 1
    assert f"DELETE {server.url}/__mock/sessions/{failed} (and the header X-Mock-Admin: 1)" in output
    deleted = httpx.delete(f"{server.url}/__mock/sessions/{failed}", headers={"X-Mock-Admin": "1"}, timeout=10)
    assert deleted.status_code == 204


ONE_FAILS = """
def test_fails(pix_mock):
    assert False
"""


@pytest.mark.parametrize(
    ("ini", "env", "flag", "kept"),
    [
        ("true", None, False, True),
        ("true", "0", False, False),
        ("false", "yes", False, True),
        (None, "off", True, True),
        (None, None, False, False),
    ],
)
def test_keeping_flag_wins_over_environment_over_ini(project, server, monkeypatch, ini, env, flag, kept):
    if ini:
        project.makeini(INI.format(extra=f"mock_server_keep_failed = {ini}"))
    if env:
        monkeypatch.setenv("MOCK_SERVER_KEEP_FAILED", env)
    project.makepyfile(test_one=ONE_FAILS)
    result = project.runpytest_subprocess("--mock-server-url", server.url, *(["--mock-server-keep-failed"] * flag))
    result.assert_outcomes(failed=1)
    assert len(KEPT.findall(result.stdout.str())) == int(kept)
    assert len([n for n in names(server) if n.startswith("pytest-")]) == int(kept)


def test_a_keeping_setting_that_is_no_yes_or_no_is_a_usage_error(project, monkeypatch):
    monkeypatch.setenv("MOCK_SERVER_KEEP_FAILED", "maybe")
    project.makepyfile(test_one=ONE_FAILS)
    result = project.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*MOCK_SERVER_KEEP_FAILED='maybe'*"])


def test_in_process_a_kept_session_lives_as_long_as_the_process(project):
    project.makepyfile(test_one=ONE_FAILS)
    result = project.runpytest_subprocess("--mock-server-keep-failed")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*- mock-server session kept -*", "*(in-process: until this pytest process ends)*"])


SHARED = """
import ssl

import pytest

import mock_server.pytest_plugin

MADE = []
_create = ssl.create_default_context


def counted(*args, **kwargs):
    MADE.append(1)
    return _create(*args, **kwargs)


ssl.create_default_context = counted  # what httpx builds an SSL context that verifies with


@pytest.mark.parametrize("n", range(8))
def test_shared(pix_mock, n):
    assert pix_mock.client._transport is pix_mock.transport
    assert pix_mock.state()["events"]
    print("TRANSPORT", id(pix_mock.transport), "CONTEXTS", len(MADE))
    if n == 3:
        pix_mock.client.close()  # a test closing its client closes nothing of the next tests'
"""


def test_every_tests_client_shares_one_pool_and_one_ssl_context(project):
    project.makepyfile(test_shared=SHARED)
    result = project.runpytest_subprocess("-s")
    result.assert_outcomes(passed=8)
    seen = re.findall(r"TRANSPORT (\d+) CONTEXTS (\d+)", result.stdout.str())
    assert len(seen) == 8
    assert len({transport for transport, _ in seen}) == 1  # the same object in every test
    assert {contexts for _, contexts in seen} == {"0"}  # over plain http the run's pool reads no CA bundle


SLOW = f"""
import time

import pytest

@pytest.mark.parametrize("n", range(3))
def test_after_a_pause(pix_mock, n):
    assert pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}").status_code == 200
    time.sleep(0.6)  # longer than the server keeps an idle connection open
"""


def test_the_server_closing_idle_connections_between_tests_is_no_error(project):
    with live_server("--idle-timeout", "0.2") as running:
        project.makepyfile(test_slow=SLOW)
        result = project.runpytest_subprocess("--mock-server-url", running.url)
        result.assert_outcomes(passed=3)
        assert [n for n in names(running) if n.startswith("pytest-")] == []


IN_PROCESS_MANY = """
import httpx
import pytest

@pytest.mark.parametrize("n", range(30))
def test_many(pix_mock, n):
    pix_mock.cancel("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")

def test_fails(pix_mock):
    assert False

def test_last(pix_mock):  # the in-process server, as the run ends: only this test's session is left
    listing = httpx.get(pix_mock.server_url + "/__mock/sessions").json()
    assert [s["name"] for s in listing["sessions"]] == [pix_mock.name]
    assert listing["sessions"][0]["explicit"] is True
"""


def test_in_process_every_session_is_deleted_after_its_test(project):
    project.makepyfile(test_many=IN_PROCESS_MANY)
    project.runpytest_subprocess("-p", "no:randomly").assert_outcomes(passed=31, failed=1)


REFUSED = """
import pytest

@pytest.mark.mock_server(scenario="nope")
def test_no_such_scenario(pix_mock):
    pass

@pytest.mark.mock_server(seed=-1)
def test_a_negative_seed(pix_mock):
    pass
"""


@pytest.mark.parametrize("where", ["in-process", "external"])
def test_a_session_the_server_refuses_to_make_is_a_setup_error_naming_why(project, request, where):
    project.makepyfile(test_refused=REFUSED)
    options = ["--mock-server-url", request.getfixturevalue("server").url] if where == "external" else []
    result = project.runpytest_subprocess(*options)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "E   *MockServerError: POST http://127.0.0.1:*/__mock/sessions answered 404 scenario_not_found: "
            "No scenario named 'nope'; the scenarios are default, empty, payments, recipients.",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "E   *MockServerError: POST http://127.0.0.1:*/__mock/sessions answered 400 invalid_request: *",
            "E   *  seed: must be at least 0 (got -1)",
        ]
    )


# --- one server for the run under xdist (issue 34 item 2) -----------------------------------------------------

SUITE_OF_200 = f"""
import os, pathlib
import pytest

@pytest.mark.parametrize("n", range(200))
def test_lookup(pix_mock, n):
    assert pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}").status_code == 200
    (pathlib.Path(os.environ["SEEN_DIR"]) / f"{{n}}").write_text(pix_mock.url)
"""

# Counts the in-process servers started, in whichever process starts one (none should: the run's server is a process
# of its own), and, in the controller once every worker is done (the run's server still up), notes that server's
# process and parent, and asks it for its sessions over HTTP.
COUNTING_CONFTEST = """
import json, os, pathlib, urllib.request

import mock_server.pytest_plugin as plugin

SEEN = pathlib.Path(os.environ["SEEN_DIR"])
started = plugin._InProcessServer.__init__


def counted(self, *args, **kwargs):
    with open(SEEN.parent / "starts", "a") as out:
        out.write(f"{os.getpid()}\\n")
    started(self, *args, **kwargs)


plugin._InProcessServer.__init__ = counted


def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        (SEEN.parent / "controller").write_text(str(os.getpid()))


def pytest_terminal_summary(config):
    if hasattr(config, "workerinput"):
        return
    process = config.stash[plugin._SHARED].process
    parent = next(line for line in open(f"/proc/{process.pid}/status") if line.startswith("PPid:")).split()[1]
    (SEEN.parent / "server").write_text(f"{process.pid} {parent}")
    base = {p.read_text().split("/__session/")[0] for p in SEEN.iterdir()}.pop()
    with urllib.request.urlopen(base + "/__mock/sessions", timeout=10) as answer:
        (SEEN.parent / "sessions.json").write_text(answer.read().decode())
"""


def test_under_xdist_one_server_serves_the_run_and_no_session_is_left(project, monkeypatch):
    seen = project.path / "seen"
    seen.mkdir()
    monkeypatch.setenv("SEEN_DIR", str(seen))
    project.makeconftest(COUNTING_CONFTEST)
    project.makepyfile(test_suite=SUITE_OF_200)
    result = project.runpytest_subprocess("-n", "4")
    result.assert_outcomes(passed=200)
    urls = [path.read_text() for path in seen.iterdir()]
    assert len(urls) == len(set(urls)) == 200  # a session of its own a test
    assert len({url.split("/__session/")[0] for url in urls}) == 1  # one server's URL for all of them
    workers = {url.split("/__session/pytest-")[1].split("-")[0] for url in urls}
    assert len(workers) >= 2 and workers <= {"gw0", "gw1", "gw2", "gw3"}  # the tests of several workers
    assert not (project.path / "starts").exists()  # no server thread in any process, the workers' or the controller's
    server, parent = (project.path / "server").read_text().split()
    assert parent == (project.path / "controller").read_text()  # one server process, the controller's child
    listing = json.loads((project.path / "sessions.json").read_text())
    assert listing["sessions"] == [] and listing["evictions"] == 0  # nothing left behind
    result.stdout.fnmatch_lines(
        [
            "mock-server: one server for the run, started in the xdist controller at * "
            f"(process {server}); sessions none left"
        ]
    )


# In-process, each test's session is deleted in the same trip to the server's thread that makes the next test's
# (on the run's scenario and seed); a test on another scenario gets its own, and the last one made is deleted when
# the run ends. Read after every pix_mock teardown, by a fixture set up before the plugin's run and torn down after.
LISTING_CONFTEST = """
import json, os, pathlib, urllib.request

import pytest


@pytest.fixture(scope="session", autouse=True)
def listing(pix_mock_server):
    yield
    with urllib.request.urlopen(pix_mock_server + "/__mock/sessions", timeout=10) as answer:
        pathlib.Path(os.environ["LISTING"]).write_text(answer.read().decode())
"""


def paying(tests: int, marker: str) -> str:
    """A test file: `tests` tests that each find the pending event unpaid and pay it, and one on the empty scenario
    (`marker`: the rest of its mock_server marker's arguments)."""
    return f"""
import pytest

@pytest.mark.parametrize("n", range({tests}))
def test_pays(pix_mock, n):
    event = pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}").json()
    assert event["status"] == "pending_conciliation"  # a session of its own: the last test's payment is not here
    pix_mock.pay("{PENDING}")

@pytest.mark.mock_server(scenario="empty"{marker})
def test_on_another_scenario(pix_mock):
    assert pix_mock.client.get("/__mock/scenarios").json()["active"] == "empty"
"""


MIXED = (
    paying(3, ", seed=3")
    + """
def test_back_on_the_default(pix_mock):
    assert pix_mock.client.get("/__mock/scenarios").json()["active"] == "default"
    sessions = pix_mock.client.get("/__mock/sessions").json()["sessions"]
    assert [s["name"] for s in sessions] == [pix_mock.name]  # no other test's, made or left
"""
)


def test_in_process_no_session_is_left_when_the_run_ends(project, tmp_path, monkeypatch):
    listing = tmp_path / "listing.json"
    monkeypatch.setenv("LISTING", str(listing))
    project.makeconftest(LISTING_CONFTEST)
    project.makepyfile(test_mixed=MIXED)
    project.runpytest_subprocess().assert_outcomes(passed=5)
    assert json.loads(listing.read_text())["sessions"] == []


# Read once the run's fixtures are torn down (pytest_unconfigure comes after): whether a server thread still runs.
THREADS_CONFTEST = """
import os, pathlib, threading


def pytest_unconfigure(config):
    alive = [thread.name for thread in threading.enumerate() if thread.name == "mock-server"]
    pathlib.Path(os.environ["THREADS"]).write_text(",".join(alive) or "none")
"""


def test_in_process_the_servers_thread_has_ended_before_the_process_exits(project, tmp_path, monkeypatch):
    """A server thread whose uvloop still ran when the interpreter finalized crashed the process at its exit (a
    segmentation fault, exit status 139, one run in ten): the run's end halts the server and waits for its thread."""
    threads = tmp_path / "threads"
    monkeypatch.setenv("THREADS", str(threads))
    project.makeconftest(THREADS_CONFTEST)
    project.makepyfile(test_lookups=ONE_GET_EACH)
    result = project.runpytest_subprocess("-W", "error")
    result.assert_outcomes(passed=12)
    assert result.ret == 0
    assert threads.read_text() == "none"


# --- in another process: one lifecycle call a test; the run's server process ends with its controller ---------

ONE_GET_EACH = f"""
import pytest

@pytest.mark.parametrize("n", range(12))
def test_lookup(pix_mock, n):
    assert pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}").status_code == 200
"""


def test_against_another_process_a_test_costs_one_lifecycle_call(project):
    """Each teardown ends its test's session and makes the next test's in one POST (`replacing`): 12 tests, 13 POSTs
    and the one DELETE of the session made for a test that never came (24 calls before)."""
    with live_server("--log-level", "info") as server:
        project.makepyfile(test_lookups=ONE_GET_EACH)
        result = project.runpytest_subprocess("--mock-server-url", server.url)
        result.assert_outcomes(passed=12)
        left = names(server)
        _, log = stop_process(server.proc)
    assert left == []
    calls = re.findall(r'"([A-Z]+) (\S+) HTTP/1.1"', log)
    assert [method for method, path in calls if "/event_conciliation/" in path] == ["GET"] * 12
    lifecycle = [method for method, path in calls if path.startswith("/__mock/sessions") and method != "GET"]
    assert lifecycle == ["POST"] * 13 + ["DELETE"]


# Under xdist, on the run's own server: sessions made and deleted a batch at a time (PATCH /__mock/sessions), each
# worker's lifecycle calls noted by a conftest that wraps the plugin's HTTP connection for them.
BATCHED = paying(40, "")

CALLS_CONFTEST = """
import json, os, pathlib

import mock_server.client as client

sent = client.LifecycleConnection.call


def noted(self, method, path, body=None):
    with open(pathlib.Path(os.environ["CALLS_DIR"]) / str(os.getpid()), "a") as out:
        out.write(json.dumps([method, path, body]) + "\\n")
    return sent(self, method, path, body)


client.LifecycleConnection.call = noted
"""


def test_under_xdist_sessions_are_made_and_deleted_a_batch_at_a_time(project, tmp_path, monkeypatch):
    monkeypatch.setenv("CALLS_DIR", str(tmp_path))
    project.makeconftest(CALLS_CONFTEST)
    project.makepyfile(test_batched=BATCHED)
    result = project.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=41)
    result.stdout.fnmatch_lines(["mock-server: one server for the run, * sessions none left"])
    workers = [[json.loads(line) for line in path.read_text().splitlines()] for path in tmp_path.iterdir()]
    calls = [call for worker in workers for call in worker]
    # the test on another scenario: a session made for it alone; every other one came in a batch
    assert [(m, b["scenario"]) for m, _, b in calls if m == "POST"] == [("POST", "empty")]
    assert {(m, p) for m, p, _ in calls if m != "POST"} == {("PATCH", "/__mock/sessions")}
    made = [item["name"] for _, _, body in calls if body and "create" in body for item in body["create"]]
    deleted = [name for _, _, body in calls if body and "delete" in body for name in body["delete"]]
    assert len(made) == len(set(made)) >= 40 and sorted(deleted) == sorted([*made, *post_names(calls)])
    # A batch of 16 every 16 tests of a worker and one at its end, whatever the split: at most 4 + 2 PATCHes, and
    # the one POST (one call a test would be 41 and more).
    assert len(calls) <= 7


def post_names(calls: list[Any]) -> list[str]:
    return [body["name"] for method, _, body in calls if method == "POST"]


HANGING = """
import os, pathlib, time

def test_waits(pix_mock):
    pathlib.Path(os.environ["STARTED"]).write_text(pix_mock.url)
    time.sleep(120)
"""


def _children(pid: int) -> list[tuple[int, str]]:
    """The processes whose parent is `pid`, with their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1]
        if parent == str(pid):
            found.append((int(entry.name), command))
    return found


def _gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            state = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line[:6] == "State:")
        except (OSError, StopIteration):
            return True
        if "Z" in state.split()[1]:
            return True  # a zombie: ended, waiting for its (new) parent to read its status
        time.sleep(0.05)
    return False


def test_under_xdist_the_runs_server_ends_when_the_controller_is_killed(project, tmp_path):
    started = tmp_path / "started"
    project.makepyfile(test_hanging=HANGING)
    controller = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-n", "1", "-p", "no:cacheprovider", str(project.path)],
        cwd=project.path,
        env={**os.environ, "STARTED": str(started)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and controller.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the test never ran"
        (server,) = [pid for pid, command in _children(controller.pid) if "mock_server.shared_server" in command]
        assert httpx.get(started.read_text().split("/__session/")[0] + "/__mock/health", timeout=10).status_code == 200
        controller.kill()  # SIGKILL: no unconfigure, no cleanup of its own
        controller.wait(timeout=10)
        assert _gone(server, 10), "the run's server outlived its controller"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(controller.pid, signal.SIGKILL)  # the orphaned worker


BROKEN_SCENARIO = "events:\n  - this is not an event\n"


def test_under_xdist_a_server_that_cannot_start_fails_the_tests_at_once_and_says_why(project, tmp_path):
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "default.yaml").write_text(BROKEN_SCENARIO)
    project.makepyfile(test_lookups=ONE_GET_EACH)
    result = project.runpytest_subprocess("-n", "2", "--mock-server-fixtures", str(fixtures), timeout=120)
    result.assert_outcomes(errors=12)
    result.stdout.fnmatch_lines(["*no answer*is the mock server up?*"])
    result.stdout.fnmatch_lines(
        [
            "mock-server: the run's server at http://127.0.0.1:* did not start: "
            "its process ended with status 1: *default.yaml*"
        ]
    )


THREAD_FALLBACK_CONFTEST = """
import os

import mock_server.pytest_plugin as plugin

plugin.CHILD_PROCESS = False  # as on a system without pass_fds (Windows)


def pytest_terminal_summary(config):
    shared = config.stash.get(plugin._SHARED, None)
    if shared is not None:
        print(f"\\nserved by a thread: {shared.server is not None and shared.process is None}")
"""


def test_under_xdist_without_a_child_process_the_controller_serves_in_a_thread(project):
    project.makeconftest(THREAD_FALLBACK_CONFTEST)
    project.makepyfile(test_lookups=ONE_GET_EACH)
    result = project.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(
        ["mock-server: one server for the run, started in the xdist controller at *; sessions none left"]
    )
    result.stdout.fnmatch_lines(["served by a thread: True"])
