"""The command line (CONTRACT 1), run for real: `python -m mock_server` in a subprocess, spoken to over HTTP."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import EXIT_TIMEOUT, REPOSITORY, run_command, server_command, server_env, start, stop_process
from tests.live_server import LiveServer as Server

PROBLEM = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+): (?P<path>\S+): (?P<message>.+)$")
_env = server_env
_command = server_command


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A command that must end by itself (check, or a start-up that fails)."""
    return run_command(*args, env=env)


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    """Starts servers; every one is terminated, and waited for, however the test ends."""
    started: list[Server] = []

    def start_one(*args: str, env: dict[str, str] | None = None) -> Server:
        server = start(*args, env=env)
        started.append(server)
        return server

    try:
        yield start_one
    finally:
        for server in started:
            stop_process(server.proc)


def stop(server: Server) -> tuple[str, str]:
    """Terminate the server and return what it wrote after the ready line."""
    return stop_process(server.proc)


BROKEN_EVENT = """\
description: broken on purpose
events:
  - extraordinary_event_conciliation_key: 9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11
    security_key: 3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90
    investment_key: 6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83
    amortization_type: early_amortization
    total_expected_amount: 1500.00
    status: payed
    reference_date: 2026-11-01
    due_date: 2026-11-30
    paid_at: null
    event_conciliation_list:
      - event_conciliation_key: 0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40
        installment_key: 4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11
"""
BROKEN_ACCOUNT = """\
description: another broken one
accounts:
  - account_id: "0001"
    registration_date: 2026-01-10T09:00:00-03:00
    limit:
      pix:
        withdraw:
          - {start_time: "06:00:00", amount: 500000}
        teleport:
          - {start_time: "06:00:00-03:00", amount: 1}
"""


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    directory = tmp_path / "broken"
    directory.mkdir()
    (directory / "default.yaml").write_text(BROKEN_EVENT, encoding="utf-8")
    (directory / "other.yaml").write_text(BROKEN_ACCOUNT, encoding="utf-8")
    return directory


def problems_of(text: str) -> list[re.Match[str]]:
    lines = [line for line in text.splitlines() if line.strip()]
    matches = [PROBLEM.match(line) for line in lines]
    assert all(matches), f"not FILE:LINE:COLUMN: PATH: message lines: {lines}"
    return matches  # type: ignore[return-value]


# --- serve ----------------------------------------------------------------------------------------


def test_port_0_prints_one_ready_line_and_serves(serve):
    server = serve("--port", "0")
    assert server.ready["host"] == "127.0.0.1"
    assert int(server.ready["port"]) > 0
    assert (server.ready["scenario"], server.ready["events"], server.ready["accounts"]) == ("default", "4", "2")
    with server.client() as http:
        health = http.get("/__mock/health")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "scenario": "default"}
        event = http.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
        assert event.status_code == 200
        assert event.json()["status"] == "pending_conciliation"
        assert http.get("/openapi.yaml").status_code == 200
    rest, _ = stop(server)
    assert rest == ""  # exactly one line on stdout


def test_serve_subcommand_is_the_default(serve):
    server = serve("serve", "--port", "0", "--scenario", "recipients")
    assert (server.ready["scenario"], server.ready["events"], server.ready["accounts"]) == ("recipients", "0", "3")
    with server.client() as http:
        assert http.get("/__mock/health").json() == {"status": "ok", "scenario": "recipients"}


def test_environment_variables(serve):
    env = _env(MOCK_SERVER_PORT="0", MOCK_SERVER_SCENARIO="payments", MOCK_SERVER_NO_ADMIN="1")
    server = serve(env=env)
    assert (server.ready["scenario"], server.ready["events"], server.ready["accounts"]) == ("payments", "6", "0")
    with server.client() as http:
        health = http.get("/__mock/health")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "scenario": "payments"}
        state = http.get("/__mock/state")
        assert state.status_code == 404
        assert state.json()["code"] == "not_found"
        # the public API works on the payments scenario
        event = http.get("/event_conciliation/extraordinary_event/cd613e30-d8f1-4adf-91b7-584a2265b1f5")
        assert event.status_code == 200
        assert len(event.json()["event_conciliation_list"]) == 3


def test_a_flag_wins_over_its_environment_variable(serve):
    server = serve("--port", "0", "--scenario", "empty", env=_env(MOCK_SERVER_SCENARIO="payments"))
    assert server.ready["scenario"] == "empty"


def test_admin_token_and_fixtures_from_the_environment(serve, tmp_path):
    (tmp_path / "only.yaml").write_text("description: one line\nevents: []\naccounts: []\n", encoding="utf-8")
    env = _env(
        MOCK_SERVER_PORT="0",
        MOCK_SERVER_ADMIN_TOKEN="s3cret",
        MOCK_SERVER_FIXTURES=str(tmp_path),
        MOCK_SERVER_SCENARIO="only",
    )
    server = serve(env=env)
    assert (server.ready["scenario"], server.ready["events"], server.ready["accounts"]) == ("only", "0", "0")
    with server.client() as http:
        refused = http.get("/__mock/scenarios")
        assert refused.status_code == 401
        assert refused.json()["code"] == "unauthorized"
        assert refused.headers["www-authenticate"].startswith("Bearer")
        allowed = http.get("/__mock/scenarios", headers={"Authorization": "Bearer s3cret"})
        assert allowed.status_code == 200
        assert allowed.json() == {"active": "only", "scenarios": [{"name": "only", "description": "one line"}]}
        assert http.get("/__mock/health").status_code == 200


def test_clock_option(serve):
    server = serve("--port", "0", "--clock", "2026-11-21T13:00:00Z")
    with server.client() as http:
        clock = http.get("/__mock/clock")
        assert clock.status_code == 200
        assert clock.json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
        other = http.get("/__mock/clock", headers={"X-Mock-Session": "other"})
        assert other.json() == {"now": "2026-11-21T10:00:00.000-03:00", "frozen": True}
        body = {
            "account_id": "c1",
            "registration_date": "2026-11-21T09:00:00-03:00",
            "limit": {"pix": {"change": [{"start_time": "06:00:00Z", "amount": 1}]}},
        }
        registered = http.post("/limits/account", json=body)
        assert registered.status_code == 201
        assert registered.json()["event_date"] == "2026-11-21T10:00:00.000-03:00"


def test_clock_from_the_environment(serve):
    server = serve(env=_env(MOCK_SERVER_PORT="0", MOCK_SERVER_CLOCK="2026-01-02T03:04:05-03:00"))
    with server.client() as http:
        assert http.get("/__mock/clock").json() == {"now": "2026-01-02T03:04:05.000-03:00", "frozen": True}


def _recipient_ids(server: Server) -> list[str]:
    with server.client(headers={"X-Mock-Session": "ci"}) as http:
        ids = []
        for document in ("529.982.247-25", "111.444.777-35"):
            added = http.post(
                "/limits/account/0001-123456/recipient_list/recipient", json={"document_number": document}
            )
            assert added.status_code == 201
            ids.append(added.json()["recipient_id"])
        return ids


def test_seed_option(serve):
    first = _recipient_ids(serve("--port", "0", "--seed", "7"))
    second = _recipient_ids(serve("--port", "0", "--seed", "7"))
    from_env = _recipient_ids(serve(env=_env(MOCK_SERVER_PORT="0", MOCK_SERVER_SEED="7")))
    other = _recipient_ids(serve("--port", "0", "--seed", "8"))
    assert first == second == from_env
    assert set(first).isdisjoint(other)


def test_logs_stay_off_stdout_at_log_level_info(serve):
    server = serve("--port", "0", "--log-level", "info")
    with server.client() as http:
        assert http.get("/__mock/health").status_code == 200
    rest, err = stop(server)
    assert rest == ""
    assert "GET /__mock/health" in err  # the access log goes to stderr


# --- start-up failures ----------------------------------------------------------------------------


def test_a_broken_scenario_directory_stops_start_up_with_exit_2(broken):
    result = run("--port", "0", "--fixtures", str(broken))
    assert result.returncode == 2
    assert "ready" not in result.stdout
    problems = problems_of(result.stderr)
    by_path = {p["path"]: p for p in problems}
    status = by_path["events[0].status"]
    assert status["file"] == str(broken / "default.yaml")
    assert (status["line"], status["column"]) == ("8", "13")
    assert "payed" in status["message"]
    assert "pending_conciliation" in status["message"]
    # the other file's problems are there too: every problem, not just the first
    assert {"accounts[0].limit.pix.withdraw[0].start_time", "accounts[0].limit.pix.teleport"} <= set(by_path)
    assert by_path["accounts[0].limit.pix.teleport"]["file"] == str(broken / "other.yaml")


def test_an_unknown_scenario_stops_start_up_with_exit_2():
    result = run("--port", "0", "--scenario", "nope")
    assert result.returncode == 2
    assert "ready" not in result.stdout
    assert "nope" in result.stderr


def test_a_fixtures_path_that_is_not_a_directory_exits_2(tmp_path):
    result = run("--port", "0", "--fixtures", str(tmp_path / "missing"))
    assert result.returncode == 2
    assert "missing" in result.stderr


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (("--clock", "2026-11-21T10:00:00"), {}),  # no offset
        (("--clock", "tomorrow"), {}),
        (("--port", "eighty"), {}),
        (("--log-level", "loud"), {}),
        ((), {"MOCK_SERVER_PORT": "eighty"}),
        ((), {"MOCK_SERVER_SEED": "x"}),
        ((), {"MOCK_SERVER_CLOCK": "2026-11-21T10:00:00"}),
        ((), {"MOCK_SERVER_LOG_LEVEL": "loud"}),
    ],
)
def test_a_bad_option_exits_2_with_a_usage_message(args, env):
    result = run(*args, env=_env(**env))
    assert result.returncode == 2
    assert "usage: mock-server" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_python_tag_is_reported_and_never_executed(tmp_path):
    directory = tmp_path / "evil"
    directory.mkdir()
    marker = tmp_path / "pwned"
    (directory / "default.yaml").write_text(
        f"description: evil\nevents: !!python/object/apply:os.system ['touch {marker}']\n", encoding="utf-8"
    )
    served = run("--port", "0", "--fixtures", str(directory))
    checked = run("check", "--fixtures", str(directory))
    assert served.returncode == 2
    assert checked.returncode == 2
    for output in (served.stderr, checked.stdout):
        (problem,) = problems_of(output)
        assert problem["file"] == str(directory / "default.yaml")
        assert problem["line"] == "2"
        assert "python/object/apply" in problem["message"]
    assert not marker.exists()


# --- check ----------------------------------------------------------------------------------------


def test_check_the_shipped_fixtures():
    result = run("check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 scenarios valid" in result.stdout
    for name in ("default", "payments", "recipients", "empty"):
        assert name in result.stdout


def test_check_the_repository_fixtures_explicitly():
    result = run("check", "--fixtures", str(REPOSITORY / "fixtures"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_reports_every_problem_and_exits_2(broken):
    result = run("check", "--fixtures", str(broken))
    assert result.returncode == 2
    problems = problems_of(result.stdout)
    files = {p["file"] for p in problems}
    assert files == {str(broken / "default.yaml"), str(broken / "other.yaml")}
    paths = {p["path"] for p in problems}
    assert {
        "events[0].status",
        "accounts[0].limit.pix.withdraw[0].start_time",
        "accounts[0].limit.pix.teleport",
    } <= paths


def test_check_reports_cross_check_problems(tmp_path):
    text = BROKEN_EVENT.replace("status: payed", "status: paid").replace(
        "description: broken on purpose", "description: paid without paid_at"
    )
    (tmp_path / "x.yaml").write_text(text, encoding="utf-8")
    result = run("check", "--fixtures", str(tmp_path))
    assert result.returncode == 2
    (problem,) = problems_of(result.stdout)
    assert problem["path"] == "events[0].paid_at"
    assert problem["line"] == "11"


def test_check_reports_a_yaml_syntax_error(tmp_path):
    (tmp_path / "x.yaml").write_text("description: [unclosed\nevents: []\n", encoding="utf-8")
    result = run("check", "--fixtures", str(tmp_path))
    assert result.returncode == 2
    (problem,) = problems_of(result.stdout)
    assert problem["file"] == str(tmp_path / "x.yaml")


def test_check_from_the_environment(broken):
    result = run("check", env=_env(MOCK_SERVER_FIXTURES=str(broken)))
    assert result.returncode == 2
    assert problems_of(result.stdout)


def test_check_from_another_directory_uses_the_shipped_fixtures(tmp_path):
    result = subprocess.run(
        _command("check"), cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=EXIT_TIMEOUT, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 scenarios valid" in result.stdout


def test_the_console_script_is_the_same_command(broken):
    script = Path(sys.executable).with_name("mock-server")
    if not script.exists():
        pytest.skip("the mock-server console script is not installed next to this interpreter")
    good = subprocess.run(
        [str(script), "check"], env=_env(), capture_output=True, text=True, timeout=EXIT_TIMEOUT, check=False
    )
    assert good.returncode == 0, good.stdout + good.stderr
    bad = subprocess.run(
        [str(script), "check", "--fixtures", str(broken)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT,
        check=False,
    )
    assert bad.returncode == 2
    assert problems_of(bad.stdout)


@pytest.mark.parametrize(
    "line, path",
    [
        ("description: d\nevents:\n  - reference_date: 2026-02-30\n", "events[0].reference_date"),
        ("description: d\nevents: []\naccounts: []\ntotal: .nan\n1: x\n", "1"),
        ("description: !!timestamp 2026-02-30\n", "(file)"),
    ],
)
def test_values_python_cannot_hold_stop_start_up_with_exit_2_not_a_traceback(tmp_path, line, path):
    (tmp_path / "default.yaml").write_text(line, encoding="utf-8")
    for args in (("--port", "0", "--fixtures", str(tmp_path)), ("check", "--fixtures", str(tmp_path))):
        result = run(*args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr + result.stdout
        assert path in {p["path"] for p in problems_of(result.stdout + result.stderr)}
