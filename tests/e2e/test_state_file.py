"""Issue 24: `--state-file` with real processes. The server's state survives a SIGTERM whole, and a SIGKILL but
for the last `--state-interval` seconds: sessions, accounts, paid events, the frozen clock, snapshots, schedules,
the records of evicted sessions. A file the server cannot read back stops the start with a placed message (exit 2)
and stays byte for byte as it was."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.default_scenario import PAID_EVENT, PENDING_EVENT
from tests.live_server import REPOSITORY, LiveServer, live_server

pytestmark = pytest.mark.e2e

SESSION = {"X-Mock-Session": "job-42"}
WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}]
EVENT_PATH = "/event_conciliation/extraordinary_event/{}"


def _write_state(http: httpx.Client) -> dict[str, Any]:
    """Writes of every kind in session job-42 (and a little in the default session); what they should read back."""
    assert http.post("/__mock/reset", headers=SESSION).status_code == 200
    frozen = http.put("/__mock/clock", json={"now": "2026-11-21T10:00:00.250123-03:00"}, headers=SESSION)
    assert frozen.status_code == 200
    for index in range(3):
        body = {"account_id": f"kept-{index}", "registration_date": "2026-11-21T09:00:00-03:00"}
        registered = http.post(
            "/limits/account", json={**body, "limit": {"pix": {"withdraw": WINDOWS}}}, headers=SESSION
        )
        assert registered.status_code == 201, registered.text
    proposal = http.post(
        "/limits/account/kept-0/limit_update_request", json={"pix": {"change": WINDOWS}}, headers=SESSION
    )
    assert proposal.status_code == 201
    assert http.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": 1500}, headers=SESSION).status_code == 200
    assert http.post("/__mock/snapshots/paid", headers=SESSION).status_code == 201
    assert http.post(f"/__mock/events/{PAID_EVENT}/cancel", headers=SESSION).status_code == 409
    scheduled = http.post(
        "/__mock/events/2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44/schedule",
        json={"action": "pay", "after_lookups": 2},
        headers=SESSION,
    )
    assert scheduled.status_code == 201
    assert http.get(EVENT_PATH.format("2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"), headers=SESSION).status_code == 200
    assert (
        http.post(
            "/limits/account",
            json={
                "account_id": "in-default",
                "registration_date": "2026-11-21T09:00:00-03:00",
                "limit": {"pix": {"withdraw": WINDOWS}},
            },
        ).status_code
        == 201
    )
    return _read_state(http)


def _read_state(http: httpx.Client) -> dict[str, Any]:
    read = {
        path: http.get(path, headers=SESSION).json()
        for path in (
            "/__mock/state",
            "/__mock/clock",
            "/__mock/schedules",
            "/__mock/snapshots",
            "/__mock/snapshots/paid",
        )
    }
    read["default"] = http.get("/__mock/accounts/in-default").json()
    read["event"] = http.get(EVENT_PATH.format(PENDING_EVENT), headers=SESSION).json()
    sessions = http.get("/__mock/sessions").json()["sessions"]
    read["sessions"] = sorted((s["name"], s["explicit"]) for s in sessions)
    return read


def _client(server: LiveServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=10)


def _stopped(server: LiveServer, how: signal.Signals) -> int:
    server.proc.send_signal(how)
    server.proc.communicate(timeout=30)
    return server.proc.returncode


def test_the_state_round_trips_through_sigterm(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    with live_server("--state-file", str(state_file), "--state-interval", "3600") as server, _client(server) as http:
        written = _write_state(http)
        assert written["event"]["status"] == "paid"
        assert written["/__mock/clock"]["now"] == "2026-11-21T10:00:00.250-03:00"
        assert _stopped(server, signal.SIGTERM) == -signal.SIGTERM  # no write came meanwhile: an hour apart
    assert json.loads(state_file.read_text())["format"] == "mock-server-state"
    with live_server("--state-file", str(state_file)) as server, _client(server) as http:
        assert _read_state(http) == written
        # and the session goes on: the schedule's second lookup pays the event, the clock still moves by microseconds
        looked_up = http.get(EVENT_PATH.format("2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"), headers=SESSION).json()
        assert looked_up["status"] == "paid"
        advanced = http.post("/__mock/clock/advance", json={"seconds": 0.75}, headers=SESSION).json()
        assert advanced["now"] == "2026-11-21T10:00:01.000-03:00"  # .250123 + .75: nothing was cut off
        restored = http.post("/__mock/snapshots/paid/restore", headers=SESSION)
        assert restored.status_code == 200
        assert http.get(EVENT_PATH.format(PENDING_EVENT), headers=SESSION).json()["status"] == "paid"


def test_a_sigkill_loses_at_most_the_last_interval(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    with live_server("--state-file", str(state_file), "--state-interval", "0.5") as server, _client(server) as http:
        written = _write_state(http)
        time.sleep(1.5)  # three intervals: the writes above are on disk
        assert _stopped(server, signal.SIGKILL) == -signal.SIGKILL
    with live_server("--state-file", str(state_file)) as server, _client(server) as http:
        assert _read_state(http) == written


def test_an_evicted_session_still_answers_410_after_a_restart(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    args = ("--state-file", str(state_file), "--max-sessions", "2")
    with live_server(*args) as server, _client(server) as http:
        for name in ("first", "second", "third"):
            assert http.post("/__mock/reset", headers={"X-Mock-Session": name}).status_code == 200
        assert http.get("/__mock/clock", headers={"X-Mock-Session": "first"}).status_code == 410
    with live_server(*args) as server, _client(server) as http:
        assert http.get("/__mock/clock", headers={"X-Mock-Session": "first"}).status_code == 410
        assert http.get("/__mock/clock", headers={"X-Mock-Session": "third"}).status_code == 200


def _start(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    return subprocess.run(
        [sys.executable, "-m", "mock_server", "--port", "0", *args],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _a_written_state_file(tmp_path: Path) -> Path:
    state_file = tmp_path / "state.json"
    with live_server("--state-file", str(state_file)) as server, _client(server) as http:
        _write_state(http)
    return state_file


@pytest.mark.parametrize(
    "damage",
    ["cut short", "a byte flipped", "not UTF-8", "empty", "a field of the wrong type", "an unknown scenario"],
)
def test_a_damaged_state_file_stops_the_start_with_its_place_and_is_never_written_over(tmp_path, damage):
    state_file = _a_written_state_file(tmp_path)
    text = state_file.read_bytes()
    lines = text.split(b"\n")
    if damage == "cut short":
        broken = text[: len(text) * 2 // 3]
    elif damage == "a byte flipped":
        broken = text.replace(b'"explicit":true', b'"explicit":trve', 1)
    elif damage == "not UTF-8":
        broken = text.replace(b"kept-1", b"kept-\xff", 1)
    elif damage == "empty":
        broken = b""
    elif damage == "a field of the wrong type":
        broken = text.replace(b'"added_recipients":0', b'"added_recipients":"none"', 1)
    else:
        broken = text.replace(b'"scenario":"default"', b'"scenario":"gone"', 1)
    assert broken != text
    state_file.write_bytes(broken)
    before = state_file.stat()

    result = _start("--state-file", str(state_file), "--state-interval", "0.1")

    assert result.returncode == 2, result.stderr
    assert "ready" not in result.stdout
    assert "Traceback" not in result.stderr
    (first, *_) = result.stderr.strip().splitlines()
    assert first.startswith(f"{state_file}:"), result.stderr
    _, line, column, *_ = first.split(":")
    assert int(line) >= 1 and int(column) >= 1
    if damage in ("a byte flipped", "a field of the wrong type", "an unknown scenario", "not UTF-8"):
        assert int(line) > 1  # the session's own line, not the head's
        assert int(line) <= len(lines)
    if damage == "a field of the wrong type":
        assert "sessions[0].store.added_recipients: must be an integer" in first or "added_recipients" in first
    if damage == "an unknown scenario":
        assert "no scenario 'gone'" in first
    assert state_file.read_bytes() == broken  # untouched: byte for byte
    assert state_file.stat().st_mtime_ns == before.st_mtime_ns
    # and no temporary file left beside it (the lock file of the server that stopped stays: see test_one_server_...)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json", "state.json.lock"]


def test_an_unreadable_state_file_stops_the_start(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    state_file = _a_written_state_file(tmp_path)
    state_file.chmod(0)
    result = _start("--state-file", str(state_file))
    assert result.returncode == 2
    assert "cannot be written (or read)" in result.stderr


def test_a_state_file_in_a_missing_directory_stops_the_start(tmp_path: Path) -> None:
    result = _start("--state-file", str(tmp_path / "no-such-directory" / "state.json"))
    assert result.returncode == 2
    assert "there is no directory" in result.stderr


def test_the_docs_show_what_the_server_prints_for_a_damaged_file(tmp_path: Path) -> None:
    """docs/state-file.md's example, run for real in an empty directory: the same lines, byte for byte."""
    page = (REPOSITORY / "docs" / "state-file.md").read_text()
    block = page.split("## A file it cannot read back", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
    commands = [line[2:] for line in block.splitlines() if line.startswith("$ ")]
    shown = [line for line in block.splitlines() if not line.startswith("$ ")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    script = "\n".join(commands) + "\n"
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # as a terminal shows them: in order
        text=True,
        timeout=60,
    )
    assert result.stdout.splitlines() == shown


# --- issue 33: one server a file, a size bound before reading, stale temporaries -----------------------------------


def test_one_server_holds_a_state_file_and_a_second_exits_2_naming_it(tmp_path: Path) -> None:
    """Two servers on one file (`docker compose --scale`, two replicas on one volume) both started, each renaming its
    state over the other's: after a restart one server's acknowledged write was gone."""
    state_file = tmp_path / "state.json"
    link = tmp_path / "same-file.json"
    link.symlink_to(state_file)
    with live_server("--state-file", str(state_file)) as first, _client(first) as http:
        written = _write_state(http)
        for name in (state_file, link):  # by its name, and by another name for the same file
            second = _start("--state-file", str(name), "--state-interval", "0.1")
            assert second.returncode == 2, second.stderr
            assert "ready" not in second.stdout
            (line,) = second.stderr.strip().splitlines()  # one line, no traceback
            assert line.startswith(f"mock-server: {name}: another server uses this state file"), line
            assert f"pid {first.proc.pid} on host {socket.gethostname()}" in line, line
            assert f"{state_file}.lock" in line
        assert _read_state(http) == written  # the first server goes on, and its file is its own
    with live_server("--state-file", str(link)) as again, _client(again) as http:  # free once it stopped
        assert _read_state(http) == written


def test_a_removed_lock_file_stops_the_first_servers_writes_and_its_health_says_so(tmp_path: Path) -> None:
    """Issue 43 M5: with FILE.lock removed while server A ran, server B started on the same file; after both
    stopped, A's acknowledged write was gone (B's last write over it, or A's over B's). Now A stops writing at once
    and its health says why; B's file is B's."""
    state_file = tmp_path / "state.json"
    with live_server("--state-file", str(state_file), "--state-interval", "0.1") as first, _client(first) as http:
        _write_state(http)
        time.sleep(0.5)
        assert http.get("/__mock/health").json()["status"] == "ok"
        Path(f"{state_file}.lock").unlink()
        health = http.get("/__mock/health").json()
        assert health["status"] == "degraded"
        assert health["state_file"]["error"].startswith(f"StateFileLockLost: the lock {state_file}.lock was removed")
        with live_server("--state-file", str(state_file), "--state-interval", "0.1") as second:
            with _client(second) as other:
                registered = other.post(
                    "/limits/account",
                    json={
                        "account_id": "second-server",
                        "registration_date": "2026-11-21T09:00:00-03:00",
                        "limit": {"pix": {"withdraw": WINDOWS}},
                    },
                )
                assert registered.status_code == 201
            assert _stopped(second, signal.SIGTERM) == -signal.SIGTERM
        after_second = state_file.read_bytes()
        assert b"second-server" in after_second
        assert http.post("/__mock/reset", headers={"X-Mock-Session": "late"}).status_code == 200
        time.sleep(0.5)  # five of A's intervals: none writes
        assert http.get("/__mock/health").json()["status"] == "degraded"
        assert _stopped(first, signal.SIGTERM) == -signal.SIGTERM
    assert state_file.read_bytes() == after_second  # A's last write, at its stop, was refused too


def test_temporaries_left_by_killed_writes_are_removed_at_start(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    left = tmp_path / ".state.json.q1w2e3r4.tmp"  # what a SIGKILL between a write and its rename leaves
    other = tmp_path / ".other.json.q1w2e3r4.tmp"  # another state file's: not this server's to remove
    for file in (left, other):
        file.write_bytes(b'{"format": "mock-server-state", "ver')
    with live_server("--state-file", str(state_file)) as server, _client(server) as http:
        assert http.get("/__mock/health").json()["status"] == "ok"
        assert not left.exists()
        assert other.exists()


def _limited_start(memory: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`mock-server ARGS` in a process that may use `memory` bytes of address space: a container's memory limit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run(
        [sys.executable, "-m", "mock_server", "--port", "0", *args],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )


BIG = 3 * 1024**3  # a sparse file: no disk taken, but 3 GiB to read


def test_a_state_file_larger_than_the_bounds_allow_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """Issue 33: a 270 MB foreign file ran the start out of memory (a traceback, exit 1)."""
    state_file = tmp_path / "state.json"
    with state_file.open("wb") as out:
        out.truncate(BIG)
    result = _limited_start(
        1536 * 1024**2, "--state-file", str(state_file), "--max-sessions", "4", "--max-session-bytes", "16MiB"
    )
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{state_file}:1:1: ") and f"is {BIG:,} bytes, more than a server held to" in line, line
    assert state_file.stat().st_size == BIG


def test_a_state_file_too_big_for_the_memory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """Within the default bounds (256 sessions of 64 MiB), but more than the process may hold: still no traceback."""
    state_file = tmp_path / "state.json"
    with state_file.open("wb") as out:
        out.write(b'{"format": ')  # begins as a state file does, so it is read whole (a foreign one is not: below)
        out.truncate(BIG)
    result = _limited_start(1536 * 1024**2, "--state-file", str(state_file))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{state_file}:1:1: ") and "more than this process has the memory to read" in line, line


def test_a_large_foreign_state_file_is_refused_on_its_first_bytes_within_little_memory(tmp_path: Path) -> None:
    """A big file that is no JSON object is refused before it is read: under a memory limit far below its size."""
    state_file = tmp_path / "state.json"
    with state_file.open("wb") as out:
        out.truncate(BIG)
    result = _limited_start(1536 * 1024**2, "--state-file", str(state_file))
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{state_file}:1:1: ")
    assert "is not a state file (it does not begin with a JSON object" in line
