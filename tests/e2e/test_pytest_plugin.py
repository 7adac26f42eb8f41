"""The pytest plugin (issue 11), run the way an integrator runs it: pytester writes a test project and runs pytest
on it in a subprocess, with the plugin loaded from the installed package's `pytest11` entry point."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.default_scenario import PENDING_EVENT

pytest_plugins = ["pytester"]

READY = re.compile(r"^mock-server ready on (?P<url>\S+) ")
INI = """
[pytest]
filterwarnings = error
addopts = -p no:cacheprovider
{extra}
"""
PENDING = PENDING_EVENT


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("URL", "SCENARIO", "FIXTURES", "SEED", "CLOCK", "ADMIN_TOKEN", "KEEP_FAILED", "TLS"):
        monkeypatch.delenv(f"MOCK_SERVER_{name}", raising=False)
    pytester.makeini(INI.format(extra=""))
    return pytester


@pytest.fixture
def external_server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mock_server", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = READY.match(proc.stdout.readline())
        assert match
        yield match["url"]
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def test_the_plugin_loads_pytest_only():
    """Nor http.client and ssl (the lifecycle calls' client) or secrets: pytest loads the plugin in every run."""
    code = (
        "import sys; import mock_server.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mock_server', 'starlette', 'uvicorn', 'httpx', 'yaml', 'jsonschema', 'orjson', 'anyio', 'http', 'ssl', "
        "'secrets')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == "['mock_server', 'mock_server.client', 'mock_server.pytest_plugin']"


def test_options_are_in_a_help_group_with_ini_and_env_twins(project):
    result = project.runpytest_subprocess("--help")
    assert result.ret == 0
    text = result.stdout.str()
    assert "mock server of the PIX limits interface (pix_mock fixture):" in text
    for name in ("url", "scenario", "fixtures", "seed", "clock", "admin-token", "keep-failed", "pact", "pact-consumer"):
        assert f"--mock-server-{name}" in text
        assert f"mock_server_{name.replace('-', '_')}" in text
        assert f"MOCK_SERVER_{name.upper().replace('-', '_')}" in text
    assert "@pytest.mark.mock_server" in project.runpytest_subprocess("--markers").stdout.str()


FIXTURE_API = f"""
import datetime

KEY = "{PENDING}"

def test_the_fixture(pix_mock):
    assert pix_mock.url.startswith("http://127.0.0.1:") and "/__session/pytest-" in pix_mock.url
    event = pix_mock.client.get(f"/event_conciliation/extraordinary_event/{{KEY}}").json()
    assert event["status"] == "pending_conciliation"
    assert pix_mock.pay(KEY, amount=500)["total_paid_amount"] == 500
    assert pix_mock.cancel(KEY)["status"] == "canceled"
    assert pix_mock.fault("getExtraordinaryEvent", status=503)["status"] == 503
    assert pix_mock.client.get(f"/event_conciliation/extraordinary_event/{{KEY}}").status_code == 503
    at = datetime.datetime(2026, 11, 21, 13, 0, tzinfo=datetime.timezone.utc)
    assert pix_mock.freeze(at) == {{"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}}
    assert [e["status"] for e in pix_mock.requests()] == [200, 503]
    assert pix_mock.state()["events"][0]["status"] == "canceled"
    assert pix_mock.reset()["status"] == "ok"
    assert pix_mock.requests() == []
    assert pix_mock.state()["events"][0]["status"] == "pending_conciliation"
"""


def test_the_fixture_in_process_with_a_report_header_and_no_warnings(project):
    project.makepyfile(test_api=FIXTURE_API)
    result = project.runpytest_subprocess("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["mock-server: in-process (uvicorn on 127.0.0.1, *); scenario the server's default"])
    assert "warnings" not in result.parseoutcomes()


ISOLATION = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_registers_the_same_account(pix_mock, n):
    body = {"account_id": "0003-1", "registration_date": "2026-11-21T09:00:00-03:00",
            "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}}}
    assert pix_mock.client.post("/limits/account", json=body).status_code == 201
    import os, pathlib
    (pathlib.Path(os.environ["SEEN_DIR"]) / f"{n}").write_text(pix_mock.url)
"""


def _seen(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The session URL each ISOLATION test used, read after the run."""
    seen = project.path / "seen"
    seen.mkdir()
    monkeypatch.setenv("SEEN_DIR", str(seen))
    return lambda: [p.read_text() for p in sorted(seen.iterdir())]


def test_each_test_gets_a_clean_session(project, monkeypatch):
    urls = _seen(project, monkeypatch)
    project.makepyfile(test_isolation=ISOLATION)
    project.runpytest_subprocess().assert_outcomes(passed=6)
    assert len(set(urls())) == 6
    assert len({url.split("/__session/")[0] for url in urls()}) == 1  # one server for the run


def test_under_xdist_the_workers_share_the_controllers_server(project, monkeypatch):
    urls = _seen(project, monkeypatch)
    project.makepyfile(test_isolation=ISOLATION)
    result = project.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=6)
    assert len({url.split("/__session/")[0] for url in urls()}) == 1  # two workers, one server for the run
    assert {url.split("/__session/pytest-")[1].split("-")[0] for url in urls()} == {"gw0", "gw1"}
    result.stdout.fnmatch_lines(["mock-server: one server for the run, started in the xdist controller at *"])


def test_against_an_external_server(project, external_server):
    project.makepyfile(test_api=FIXTURE_API)
    result = project.runpytest_subprocess("--mock-server-url", external_server)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"mock-server: external {external_server}; scenario the server's default"])


def test_external_server_from_the_environment_under_xdist(project, external_server, monkeypatch):
    urls = _seen(project, monkeypatch)
    project.makepyfile(test_isolation=ISOLATION)
    monkeypatch.setenv("MOCK_SERVER_URL", external_server)
    result = project.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=6)  # one server, sessions per worker and test: no 409
    assert {url.split("/__session/")[0] for url in urls()} == {external_server}
    assert len(set(urls())) == 6


SCENARIO_SEEN = """
def test_scenario(pix_mock):
    print("ACTIVE", pix_mock.client.get("/__mock/scenarios").json()["active"])
"""


@pytest.mark.parametrize(
    ("ini", "env", "flag", "expected"),
    [
        ("empty", None, None, "empty"),
        ("empty", "payments", None, "payments"),
        ("empty", "payments", "recipients", "recipients"),
    ],
)
def test_flag_wins_over_environment_over_ini(project, monkeypatch, ini, env, flag, expected):
    if ini:
        project.makeini(INI.format(extra=f"mock_server_scenario = {ini}"))
    if env:
        monkeypatch.setenv("MOCK_SERVER_SCENARIO", env)
    project.makepyfile(test_scenario=SCENARIO_SEEN)
    result = project.runpytest_subprocess("-s", *(("--mock-server-scenario", flag) if flag else ()))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*ACTIVE {expected}*"])


MARKED = """
import pytest

@pytest.mark.mock_server(scenario="payments", clock="2026-11-21T10:00:00-03:00", seed=7)
def test_marked(pix_mock):
    assert pix_mock.client.get("/__mock/scenarios").json()["active"] == "payments"
    assert pix_mock.client.get("/__mock/clock").json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
    event = pix_mock.client.post("/__mock/events", json=EVENT).json()["extraordinary_event_conciliation_key"]
    pix_mock.reset(seed=7)
    assert pix_mock.client.post("/__mock/events", json=EVENT).json()["extraordinary_event_conciliation_key"] == event
    print("ID", event)

@pytest.mark.mock_server(seed=7)
def test_marked_again(pix_mock):  # another session, another name: the same ids
    print("ID", pix_mock.client.post("/__mock/events", json=EVENT).json()["extraordinary_event_conciliation_key"])

def test_unmarked_is_back_to_the_defaults(pix_mock):
    assert pix_mock.client.get("/__mock/scenarios").json()["active"] == "default"
    assert pix_mock.client.get("/__mock/clock").json()["frozen"] is False

@pytest.mark.mock_server(scenarios="typo")
def test_a_misspelt_argument(pix_mock):
    pass

EVENT = {
    "security_key": "3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
    "investment_key": "6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
    "amortization_type": "early_amortization",
    "total_expected_amount": 10,
    "reference_date": "2026-11-01",
    "due_date": "2026-11-30",
    "event_conciliation_list": [
        {"event_conciliation_key": "0c7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d41",
         "installment_key": "4d8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c12"}
    ],
}
"""


def test_the_marker_sets_scenario_clock_and_seed(project):
    project.makepyfile(test_marked=MARKED)
    result = project.runpytest_subprocess("-s")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*takes scenario, clock, seed and consumer, not ?'scenarios'?*"])
    ids = re.findall(r"ID ([0-9a-f-]{36})", result.stdout.str())
    assert len(ids) == 2 and ids[0] == ids[1]


FAILING = f"""
def test_fails(pix_mock):
    pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}")
    pix_mock.client.post("/limits/account", json={{"account_id": "x"}})
    assert False, "the code under test did something wrong"

def test_passes(pix_mock):
    pix_mock.client.get("/event_conciliation/extraordinary_event/{PENDING}")
"""


def test_a_failed_test_carries_its_sessions_journal(project):
    project.makepyfile(test_failing=FAILING)
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- mock-server journal -*",
            "session pytest-main-* at http://127.0.0.1:*/__session/pytest-main-*: 2 request(s)",
            f"* GET /__session/pytest-main-*/event_conciliation/extraordinary_event/{PENDING} -> 200",
            "* POST /__session/pytest-main-*/limits/account -> 400",
            '    request:  {"account_id": "x"}',
            '    response: {"code": "invalid_request"*',
        ]
    )
    assert result.stdout.str().count("mock-server journal") == 1  # the passing test carries none


def test_the_admin_token_is_required_in_process_and_sent_by_the_fixture(project):
    project.makepyfile(
        test_token="""
import httpx

def test_token(pix_mock):
    assert pix_mock.state()["events"]
    assert httpx.get(pix_mock.url + "/__mock/state").status_code == 401
"""
    )
    project.runpytest_subprocess("--mock-server-admin-token", "s3cret").assert_outcomes(passed=1)
