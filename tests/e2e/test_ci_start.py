"""A CI start that cannot hang (issue 11): `mock-server wait` / `healthcheck`, the server's exit codes, and the
README's shell recipe run for real against an unknown scenario, a busy port and a missing binary."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.live_server import READY, live_server, run_command, spawn

REPOSITORY = Path(__file__).resolve().parents[2]
RECIPES = REPOSITORY / "docs" / "from-tests.md"  # the shell recipe, in "Shell, in CI"
BIN = Path(sys.executable).parent  # the venv's bin: mock-server's console script lives beside the interpreter
TIMEOUT = 60.0  # a test's own bound on a command; the commands' own timeouts are far below it


def _env(**overrides: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_SERVER_", "MOCK_PORT"))}
    env.update(overrides)
    return env


def mock_server(
    *args: str, env: dict[str, str] | None = None, timeout: float = TIMEOUT
) -> subprocess.CompletedProcess[str]:
    return run_command(*args, env=env or _env(), timeout=timeout)


@pytest.fixture
def server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A running `mock-server --port 0` and its URL; terminated afterwards."""
    with live_server() as running:
        yield running.proc, running.url


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_forever(sock: socket.socket, answer: bytes | None) -> None:
    """Accept connections on `sock`; answer each with `answer`, or (None) never answer at all."""
    held = []
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            break
        held.append(conn)
        if answer is not None:
            conn.recv(65536)
            conn.sendall(answer)
            conn.close()
    for conn in held:
        conn.close()


@pytest.fixture
def fake_http() -> Iterator[Callable[[bytes | None], str]]:
    sockets: list[socket.socket] = []

    def start(answer: bytes | None) -> str:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        sockets.append(sock)
        threading.Thread(target=_serve_forever, args=(sock, answer), daemon=True).start()
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    yield start
    for sock in sockets:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()


# --- exit codes of serve --------------------------------------------------------------------------------------


def test_a_busy_port_exits_2_saying_so(busy_port):
    """A port in use is a usage problem with one clear line (issue 43), not uvicorn's bare `Errno 98` and exit 3."""
    result = mock_server("--port", str(busy_port))
    assert result.returncode == 2
    assert f"port {busy_port} on 127.0.0.1 is in use" in result.stderr
    assert "ready" not in result.stdout


def test_an_unknown_scenario_exits_2():
    result = mock_server("--port", "0", "--scenario", "nope")
    assert result.returncode == 2
    assert "nope" in result.stderr


def test_sigterm_finishes_and_ends_by_the_signal(server):
    proc, _ = server
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == -signal.SIGTERM  # a shell reports 143
    assert b"Traceback" not in err


def test_sigint_stops_cleanly_with_status_0(server):
    """Ctrl-C is how a server in a terminal is stopped: a clean stop, not a failure (`make run` said Error 130)."""
    proc, _ = server
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0
    assert b"Traceback" not in err
    assert b"KeyboardInterrupt" not in err


def test_sigint_stops_with_status_0_when_the_shell_ignores_it(tmp_path):
    """A background job of a non-interactive shell starts with SIGINT ignored: uvicorn still stops on it. The
    signal is sent once the server says it is ready (a fixed sleep lost the race on a loaded machine: a SIGINT
    before uvicorn's handlers exist is ignored, as the shell asked, and the server ran on)."""
    log = tmp_path / "mock.log"
    script = (
        f'"{sys.executable}" -m mock_server --port 0 > "{log}" 2>&1 & pid=$!; '
        f'until grep -q "ready on" "{log}"; do kill -0 $pid || exit 99; sleep 0.05; done; '
        "kill -INT $pid; wait $pid"
    )
    result = subprocess.run(["bash", "-c", script], env=_env(), timeout=TIMEOUT, check=False)
    assert result.returncode == 0


def _children(pid: int) -> list[int]:
    children: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return children


@pytest.mark.parametrize("whom", ["the terminal's Ctrl-C, to the whole group", "kill -INT of the server alone"])
def test_ctrl_c_on_make_run_ends_without_make_reporting_an_error(whom):
    """`make run`, stopped as a person stops it: make reports no `Error 130` (the server's status is 0). A
    terminal sends SIGINT to make and the server alike; make then ends by the signal, saying nothing."""
    make = subprocess.Popen(
        # -o: the venv counts as installed (the test runs from it), whatever the age of pyproject.toml
        ["make", "--no-print-directory", "-o", ".venv/.installed-stamp", "run", "PORT=0"],
        cwd=REPOSITORY,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal's foreground job has
    )
    try:
        assert make.stdout is not None
        lines = [make.stdout.readline() for _ in range(2)]  # make's echo of the command, then the ready line
        assert READY.match(lines[-1]), lines
        (server,) = _children(make.pid)
        if whom.startswith("kill"):
            os.kill(server, signal.SIGINT)
        else:
            os.killpg(make.pid, signal.SIGINT)
        _, err = make.communicate(timeout=TIMEOUT)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGTERM)
            make.communicate(timeout=TIMEOUT)
    assert "***" not in err, err  # make: *** [Makefile:..: run] Error 130 / Interrupt
    assert "Traceback" not in err
    if whom.startswith("kill"):
        assert make.returncode == 0
    else:
        assert make.returncode in (0, -signal.SIGINT)


# --- healthcheck ----------------------------------------------------------------------------------------------


def test_healthcheck_of_a_running_server_by_url_flags_and_environment(server):
    _, url = server
    port = url.rsplit(":", 1)[1]
    assert mock_server("healthcheck", url).returncode == 0
    assert mock_server("healthcheck", "--port", port).returncode == 0
    assert mock_server("healthcheck", env=_env(MOCK_SERVER_PORT=port)).returncode == 0
    # the host a server binds to all interfaces with is probed on loopback
    assert mock_server("healthcheck", env=_env(MOCK_SERVER_PORT=port, MOCK_SERVER_HOST="0.0.0.0")).returncode == 0


def test_healthcheck_with_nothing_listening_exits_1_with_the_reason():
    result = mock_server("healthcheck", "--port", str(free_port()))
    assert result.returncode == 1
    assert "connection refused" in result.stderr
    assert result.stderr.count("\n") == 1


def test_healthcheck_of_port_0_says_it_cannot_be_probed():
    result = mock_server("healthcheck", env=_env(MOCK_SERVER_PORT="0"))
    assert result.returncode == 1
    assert "port 0" in result.stderr


def test_healthcheck_is_bounded_when_the_server_never_answers(fake_http):
    url = fake_http(None)
    result = mock_server("healthcheck", url, "--timeout", "0.5")  # a hang would be TimeoutExpired (TIMEOUT)
    assert result.returncode == 1
    assert "no answer within the timeout" in result.stderr  # its own timeout ended the attempt


def test_healthcheck_of_something_that_is_not_a_mock_server_exits_1(fake_http):
    not_found = fake_http(b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope")
    result = mock_server("healthcheck", not_found)
    assert result.returncode == 1
    assert "answered 404" in result.stderr
    other = fake_http(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    result = mock_server("healthcheck", other)
    assert result.returncode == 1
    assert "not a mock server's health" in result.stderr


@pytest.mark.parametrize("url", ["ftp://127.0.0.1:1", "127.0.0.1:8000", "http://127.0.0.1:99999"])
def test_healthcheck_of_a_url_that_cannot_be_probed_exits_1(url):
    result = mock_server("healthcheck", url)
    assert result.returncode == 1
    assert result.stderr.startswith("mock-server healthcheck: ")


# --- wait -----------------------------------------------------------------------------------------------------


def test_wait_prints_the_url_once_healthy(server):
    _, url = server
    result = mock_server("wait", url + "/", "--timeout", "10")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{url}\n"


def test_wait_gives_up_after_its_timeout():
    url = f"http://127.0.0.1:{free_port()}"
    result = mock_server("wait", url, "--timeout", "1")
    assert result.returncode == 1
    assert "not healthy within 1s" in result.stderr  # --timeout 1 ended it (its deadline: tests/cli/test_probe_wait.py)
    assert "connection refused" in result.stderr
    assert result.stdout == ""


def test_wait_is_bounded_when_the_server_never_answers(fake_http):
    url = fake_http(None)
    result = mock_server("wait", url, "--timeout", "1")
    assert result.returncode == 1
    assert "no answer within the timeout" in result.stderr


def test_wait_stops_as_soon_as_the_server_process_is_gone(tmp_path):
    log = tmp_path / "mock.log"
    with log.open("w") as out:
        proc = spawn("--port", "0", "--scenario", "nope", stdout=out)
    result = mock_server("wait", "--ready-file", str(log), "--pid", str(proc.pid), "--timeout", "50")
    proc.wait(timeout=TIMEOUT)
    assert result.returncode == 1
    # The process, not the 50 s timeout ("not healthy within 50s"), ended the wait.
    assert f"the server process {proc.pid} exited before it was healthy" in result.stderr


def test_wait_reads_the_url_from_the_ready_file(tmp_path):
    log = tmp_path / "mock.log"
    with log.open("w") as out:
        proc = spawn("--port", "0", stdout=out)
    try:
        result = mock_server("wait", "--ready-file", str(log), "--pid", str(proc.pid), "--timeout", "30")
        assert result.returncode == 0, result.stderr
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+\n", result.stdout)
        assert mock_server("healthcheck", result.stdout.strip()).returncode == 0
    finally:
        proc.terminate()
        proc.wait(timeout=TIMEOUT)


@pytest.mark.parametrize("args", [(), ("http://x", "--ready-file", "f"), ("http://x", "--timeout", "0")])
def test_wait_usage_errors_exit_2(args):
    result = mock_server("wait", *args)
    assert result.returncode == 2
    assert "usage: mock-server wait" in result.stderr


# --- the docs' recipe ------------------------------------------------------------------------------------------


def readme_recipe() -> str:
    text = RECIPES.read_text(encoding="utf-8")
    match = re.search(r"^#+ Shell, in CI[^\n]*\n\n```sh\n(?P<script>.*?)```", text, re.DOTALL | re.MULTILINE)
    assert match, "docs/from-tests.md: the CI shell recipe is gone"
    return match["script"]


@pytest.fixture
def recipe(tmp_path: Path):
    """Runs the docs' recipe in a fresh directory with a stand-in `pytest` that checks the mock it is given."""
    fake_bin = tmp_path / "fake-bin"
    fake_bin.mkdir()
    seen = tmp_path / "pytest-saw"
    (fake_bin / "pytest").write_text(
        f'#!/bin/sh\n"{sys.executable}" -m mock_server healthcheck "$MOCK_SERVER_URL"'
        f' && echo "$MOCK_SERVER_URL" > "{seen}"\n'
        'exit "${FAKE_PYTEST_STATUS:-0}"\n'
    )
    (fake_bin / "pytest").chmod(0o755)
    work = tmp_path / "ci"
    work.mkdir()
    script = readme_recipe()

    def run(with_mock_server: bool = True, **env: str) -> tuple[subprocess.CompletedProcess[str], str | None]:
        path = [str(fake_bin), "/usr/local/bin", "/usr/bin", "/bin"]
        if with_mock_server:
            path.insert(1, str(BIN))
        else:
            assert shutil.which("mock-server", path=os.pathsep.join(path)) is None
        result = subprocess.run(
            ["bash", "-c", script],
            cwd=work,
            env=_env(PATH=os.pathsep.join(path), **env),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        return result, seen.read_text().strip() if seen.exists() else None

    return run


def test_the_recipe_runs_the_tests_against_a_healthy_server(recipe):
    result, tested_url = recipe()
    assert result.returncode == 0, result.stderr
    assert tested_url is not None and re.fullmatch(r"http://127\.0\.0\.1:\d+", tested_url)


def test_the_recipe_exits_with_the_tests_status_when_they_fail(recipe):
    result, tested_url = recipe(FAKE_PYTEST_STATUS="4")
    assert result.returncode == 4
    assert tested_url is not None


def test_the_recipe_fails_fast_on_an_unknown_scenario(recipe):
    result, tested_url = recipe(MOCK_SERVER_SCENARIO="nope")
    assert result.returncode != 0
    assert "no scenario named 'nope'" in result.stderr
    assert "exited before it was healthy" in result.stderr  # the server's exit, not the 30 s timeout, ended the wait
    assert tested_url is None


def test_the_recipe_fails_fast_on_a_busy_port(recipe, busy_port):
    result, tested_url = recipe(MOCK_PORT=str(busy_port))
    assert result.returncode != 0
    assert f"port {busy_port} on 127.0.0.1 is in use" in result.stderr
    assert "exited before it was healthy" in result.stderr  # not "not healthy within 30s"
    assert tested_url is None


def test_the_recipe_fails_fast_without_the_binary(recipe):
    result, tested_url = recipe(with_mock_server=False)
    assert result.returncode == 127  # `set -e` stopped at the first command that is not found: nothing waited
    assert "mock-server: command not found" in result.stderr
    assert tested_url is None
