"""state/persistence.py in process: what the state file keeps comes back the same through a fresh app, only what
moved is taken again, an older write never lands over a newer one, and a write is whole or nothing. The real
processes, SIGTERM and SIGKILL are tests/e2e/test_state_file.py's."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server import cli
from mock_server.app import create_app
from mock_server.probe import check_health
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state import persistence
from mock_server.state.bounds import Bounds
from mock_server.state.persistence import StateFile, write_atomically
from mock_server.state.sessions import Session
from tests.default_scenario import PARTIALLY_PAID_EVENT, PENDING_EVENT
from tests.threaded_server import threaded_server

JOB = {"X-Mock-Session": "job"}
WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}]
READS = ("/__mock/state", "/__mock/clock", "/__mock/schedules", "/__mock/snapshots", "/__mock/snapshots/loaded")


def _app(specs: Specs, path: Path, **options: Any) -> TestClient:
    return TestClient(create_app(Settings(state_file=path, seed=3, max_sessions=4, **options), specs))


def _writer(http: TestClient) -> StateFile:
    writer: StateFile = http.app.state.state_file  # type: ignore[attr-defined]
    return writer


def _register(http: TestClient, account_id: str, headers: dict[str, str] = JOB) -> None:
    body = {
        "account_id": account_id,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": WINDOWS}},
    }
    assert http.post("/limits/account", json=body, headers=headers).status_code == 201


def _everything(http: TestClient) -> dict[str, Any]:
    read: dict[str, Any] = {path: http.get(path, headers=JOB).json() for path in READS}
    listed = http.get("/__mock/sessions").json()
    read["sessions"] = [
        {key: s[key] for key in ("name", "scenario", "explicit", "created_at", "state_bytes")}
        for s in listed["sessions"]
    ]
    read["evicted"] = listed["evicted"]
    read["evictions"] = listed["evictions"]
    return read


def _fill(http: TestClient) -> None:
    assert http.post("/__mock/reset", headers={"X-Mock-Session": "gone"}).status_code == 200
    assert http.post("/__mock/reset", headers=JOB).status_code == 200
    assert http.put("/__mock/clock", json={"now": "2026-11-21T10:00:00.000001Z"}, headers=JOB).status_code == 200
    _register(http, "a-1")
    proposal = {"pix": {"change": WINDOWS}}
    assert http.post("/limits/account/a-1/limit_update_request", json=proposal, headers=JOB).status_code == 201
    assert http.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": 10.5}, headers=JOB).status_code == 200
    state = http.get("/__mock/state", headers=JOB).json()
    state["accounts"] = state["accounts"][:1]  # a state of its own, loaded: the live store and a snapshot share it
    assert http.put("/__mock/state", json=state, headers=JOB).status_code == 200
    _register(http, "a-2")
    assert http.post("/__mock/snapshots/loaded", headers=JOB).status_code == 201
    _register(http, "a-3")
    schedule = {"action": "pay", "after_lookups": 3}
    assert http.post(f"/__mock/events/{PARTIALLY_PAID_EVENT}/schedule", json=schedule, headers=JOB).status_code == 201
    lookup = f"/event_conciliation/extraordinary_event/{PARTIALLY_PAID_EVENT}"
    assert http.get(lookup, headers=JOB).status_code == 200
    timed = {"action": "cancel", "at": "2026-11-22T00:00:00Z"}
    assert http.post(f"/__mock/events/{PENDING_EVENT}/schedule", json=timed, headers=JOB).status_code == 201
    _register(http, "d-1", {})
    for name in ("x", "y"):  # `gone`, the least recently used, is evicted: its record must come back too
        assert http.post("/__mock/reset", headers={"X-Mock-Session": name}).status_code == 200


def test_what_the_file_keeps_comes_back_the_same(specs: Specs, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with _app(specs, path) as http:
        _fill(http)
        before = _everything(http)
        assert [e["name"] for e in before["evicted"]] == ["gone"]
        _writer(http).save()
        next_id = http.post(
            "/limits/account/a-2/limit_update_request", json={"pix": {"withdraw": WINDOWS}}, headers=JOB
        )
    with _app(specs, path) as again:
        assert _everything(again) == before
        again_id = again.post(
            "/limits/account/a-2/limit_update_request", json={"pix": {"withdraw": WINDOWS}}, headers=JOB
        )
        assert again_id.json()["limit_update_request_id"] == next_id.json()["limit_update_request_id"]  # --seed goes on
        assert again.get("/__mock/clock", headers={"X-Mock-Session": "gone"}).status_code == 410
        # the schedules go on where they were: two more lookups pay the event; the timed one comes due
        lookup = f"/event_conciliation/extraordinary_event/{PARTIALLY_PAID_EVENT}"
        statuses = [again.get(lookup, headers=JOB).json()["status"] for _ in range(2)]
        assert statuses == ["pending_conciliation", "paid"]
        moved = again.post("/__mock/clock/advance", json={"seconds": 86400}, headers=JOB)
        assert moved.json()["now"] == "2026-11-22T07:00:00.000-03:00"
        assert again.get("/__mock/accounts/d-1").status_code == 200
        restored = again.post("/__mock/snapshots/loaded/restore", headers=JOB)
        assert restored.status_code == 200
        accounts = [a["account_id"] for a in again.get("/__mock/state", headers=JOB).json()["accounts"]]
        assert "a-2" in accounts and "a-3" not in accounts


def test_a_loaded_state_shared_by_a_snapshot_is_written_once(specs: Specs, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with _app(specs, path) as http:
        _fill(http)
        _writer(http).save()
    lines = path.read_text().splitlines()
    (line,) = [json.loads(text.rstrip(",")) for text in lines if text.startswith('{"name":"job"')]
    assert len(line["states"]) == 1
    assert line["store"]["base"] == 0 and line["snapshots"][0]["store"]["base"] == 0


def test_nothing_is_written_when_nothing_moved_and_only_what_moved_is_taken_again(
    specs: Specs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    taken: list[str] = []
    real_capture = persistence.capture

    def counted(session: Session) -> persistence.SessionCapture:
        taken.append(session.name)
        return real_capture(session)

    monkeypatch.setattr(persistence, "capture", counted)
    with _app(specs, path) as http:
        _register(http, "a-1")
        _register(http, "b-1", {"X-Mock-Session": "other"})
        state_file = _writer(http)
        state_file.save()
        assert sorted(taken) == ["job", "other"]
        state_file.save()
        assert state_file.writes == 1  # nothing moved
        _register(http, "a-2")
        taken.clear()
        state_file.save()
        assert taken == ["job"]  # other's line is kept from the last write
        assert state_file.writes == 2
    with _app(specs, path) as again:
        assert again.get("/__mock/accounts/b-1", headers={"X-Mock-Session": "other"}).status_code == 200
        assert again.get("/__mock/accounts/a-2", headers=JOB).status_code == 200


def test_an_older_write_never_lands_over_a_newer_one(specs: Specs, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with _app(specs, path) as http:
        state_file = _writer(http)
        _register(http, "older")
        older = state_file._take()
        _register(http, "newer")
        newer = state_file._take()
        assert older is not None and newer is not None
        newer()
        older()  # its thread came to the lock late: skipped
    text = path.read_text()
    assert '"newer"' in text


def test_a_write_is_whole_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state.json"
    write_atomically(path, b"first")

    def failing_fsync(handle: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        write_atomically(path, b"second, never whole")
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # the temporary file is gone


# --- issue 33: symlinks, stale temporaries, the lock, a write that fails ------------------------------------------


def test_a_symlink_is_written_through(specs: Specs, tmp_path: Path) -> None:
    """The link stays a link (a volume's file it points to is the one updated), as `ln -s` users expect."""
    volume = tmp_path / "volume"
    volume.mkdir()
    real = volume / "state.json"
    link = tmp_path / "state.json"
    link.symlink_to(real)
    with _app(specs, link) as http:
        _register(http, "through-1")
        _writer(http).save()
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert '"through-1"' in real.read_text()
    with _app(specs, link) as again:
        assert again.get("/__mock/accounts/through-1", headers=JOB).status_code == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json", "volume"]  # no temporary beside the link


def test_stale_temporaries_of_this_file_and_only_they_are_found_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    left = [tmp_path / ".state.json.k2x_9a0q.tmp", tmp_path / ".state.json.00000000.tmp"]
    kept = [
        tmp_path / ".other.json.k2x_9a0q.tmp",  # another state file's
        tmp_path / ".state.json.tmp",
        tmp_path / "state.json.k2x_9a0q.tmp",
        tmp_path / ".state.json.k2x_9a0q.tmp.bak",
        tmp_path / "state.json",
    ]
    for file in left + kept:
        file.write_bytes(b"{")
    assert persistence.stale_temporaries(path) == sorted(left)
    assert persistence.remove_stale_temporaries(path) == sorted(left)
    assert sorted(tmp_path.iterdir()) == sorted(kept)
    # what write_atomically names its temporary files matches: one left by a write cut short is found
    real_mkstemp = tempfile.mkstemp
    made: list[str] = []

    def remembered(*args: Any, **kwargs: Any) -> tuple[int, str]:
        handle, name = real_mkstemp(*args, **kwargs)
        made.append(name)
        return handle, name

    monkeypatch.setattr(tempfile, "mkstemp", remembered)
    write_atomically(path, b"{}")
    monkeypatch.undo()
    (name,) = made
    Path(name).write_bytes(b"{")  # as a SIGKILL between the write and the rename leaves it
    assert persistence.stale_temporaries(path) == [Path(name)]


def test_the_lock_is_one_holders_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    first = persistence.StateFileLock.take(path)
    try:
        holder = (tmp_path / "state.json.lock").read_text()
        assert holder.startswith(f"pid {os.getpid()} on host ")
        with pytest.raises(persistence.StateFileInUse) as refused:
            persistence.StateFileLock.take(path)
        assert f"pid {os.getpid()} on host" in str(refused.value)
        link = tmp_path / "another-name.json"
        link.symlink_to(path)
        with pytest.raises(persistence.StateFileInUse):  # the same file by another name is the same lock
            persistence.StateFileLock.take(link)
    finally:
        first.release()
    second = persistence.StateFileLock.take(path)  # free again: the file left behind is no obstacle
    second.release()


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_lock_file_removed_or_replaced_stops_the_writes_and_shows_in_health(
    specs: Specs, tmp_path: Path, how: str
) -> None:
    """Issue 43 M5: flock holds the lock file's inode; with FILE.lock removed, a second server started on the same
    file, and after both stopped the first one's acknowledged write was gone. Now the first stops writing."""
    path = tmp_path / "state.json"
    lock_path = tmp_path / "state.json.lock"
    lock = persistence.StateFileLock.take(path)
    try:
        with _app(specs, path) as http:
            writer = _writer(http)
            writer.lock = lock
            _register(http, "before")
            asyncio.run(writer.turn())
            assert _degraded(http)["status"] == "ok" and lock.lost() is None
            written = path.read_bytes()
            if how == "removed":
                lock_path.unlink()
            else:
                (tmp_path / "other").write_text("")
                os.replace(tmp_path / "other", lock_path)
            health = _degraded(http)  # seen at once, before any write is due
            assert health["status"] == "degraded"
            error = health["state_file"]["error"]
            assert error.startswith(f"StateFileLockLost: the lock {lock_path} was {how}")
            assert "stopped writing it" in error and health["state_file"]["failing_since"] is not None
            second = persistence.StateFileLock.take(path)  # what a second server now manages
            try:
                _register(http, "after")
                asyncio.run(writer.turn())  # refused: the second server owns the file
                with pytest.raises(persistence.StateFileLockLost):
                    writer.save()  # the last write, at stop, too
            finally:
                second.release()
            assert path.read_bytes() == written
            health = _degraded(http)  # the lock file is the second server's now: still lost
            assert health["status"] == "degraded"
            assert health["state_file"]["error"].startswith(f"StateFileLockLost: the lock {lock_path} was ")
    finally:
        lock.release()


def test_the_size_bound_is_what_the_session_bounds_let_a_server_write(specs: Specs, tmp_path: Path) -> None:
    """A session filled to --max-session-bytes writes a line well within its share of the bound."""
    path = tmp_path / "state.json"
    bounds = Bounds(max_session_bytes=256 * 1024, max_accounts=10**6)
    with TestClient(create_app(Settings(state_file=path, bounds=bounds, max_sessions=1), specs)) as http:
        index = 0
        while True:
            body = {
                "account_id": f"full-{index:06d}",
                "registration_date": "2026-11-21T09:00:00-03:00",
                "limit": {"pix": {mode: WINDOWS * 2 for mode in ("withdraw", "change", "transaction")}},
            }
            if http.post("/limits/account", json=body).status_code != 201:
                break
            index += 1
        assert index > 10
        _writer(http).save()
    assert path.stat().st_size < persistence.max_file_bytes(bounds, 1)


def _degraded(http: TestClient) -> dict[str, Any]:
    health = http.get("/__mock/health")
    assert health.status_code == 200
    body: dict[str, Any] = health.json()
    return body


def test_a_failing_write_shows_in_health_until_one_succeeds(
    specs: Specs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    with _app(specs, path) as http:
        writer = _writer(http)
        assert _degraded(http) == {
            "status": "ok",
            "scenario": "default",
            "state_file": {"path": str(path), "written_at": None, "error": None, "failing_since": None},
        }
        _register(http, "first")
        asyncio.run(writer.turn())
        written_at = _degraded(http)["state_file"]["written_at"]
        assert written_at is not None

        def full(handle: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", full)
        _register(http, "lost-if-it-stops-now")
        asyncio.run(writer.turn())  # logged and kept, never raised: the writes go on
        health = _degraded(http)
        assert health["status"] == "degraded"
        assert health["state_file"]["error"] == f"OSError: [Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}"
        assert health["state_file"]["written_at"] == written_at
        since = health["state_file"]["failing_since"]
        asyncio.run(writer.turn())
        assert _degraded(http)["state_file"]["failing_since"] == since  # since the first failure
        monkeypatch.undo()
        asyncio.run(writer.turn())
        health = _degraded(http)
        assert health["status"] == "ok" and health["state_file"]["error"] is None
        assert health["state_file"]["written_at"] > written_at
    assert '"lost-if-it-stops-now"' in path.read_text()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a disk that fills up (root only; skipped where mounting is not allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=True)


def test_a_full_disk_shows_in_health_and_the_file_keeps_its_last_whole_state(specs: Specs, tiny_disk: Path) -> None:
    path = tiny_disk / "state.json"
    with _app(specs, path) as http:
        writer = _writer(http)
        _register(http, "fits")
        asyncio.run(writer.turn())
        assert _degraded(http)["status"] == "ok"
        kept = path.read_bytes()
        for index in range(200):  # far more than 64 KiB of state
            body = {
                "account_id": f"overflow-{index:03d}",
                "registration_date": "2026-11-21T09:00:00-03:00",
                "limit": {"pix": {mode: WINDOWS * 2 for mode in ("withdraw", "change", "transaction")}},
            }
            assert http.post("/limits/account", json=body, headers=JOB).status_code == 201
        asyncio.run(writer.turn())
        health = _degraded(http)
        assert health["status"] == "degraded", health
        assert "No space left on device" in health["state_file"]["error"]
        assert path.read_bytes() == kept
        assert persistence.stale_temporaries(path) == []  # the failed write's temporary is gone
        subprocess.run(["mount", "-o", "remount,size=4m", str(tiny_disk)], check=True)  # room made
        asyncio.run(writer.turn())
        assert _degraded(http)["status"] == "ok"
    assert '"overflow-199"' in path.read_text()


def test_the_healthcheck_fails_on_a_degraded_server_and_says_why(
    specs: Specs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mock-server healthcheck` (a container's HEALTHCHECK) reports what `/__mock/health` says, in one line."""
    app = create_app(Settings(state_file=tmp_path / "state.json"), specs)
    writer: StateFile = app.state.state_file
    with threaded_server(app) as port:
        url = f"http://127.0.0.1:{port}"
        assert check_health(url, 5).healthy
        with TestClient(app) as http:
            _register(http, "unsaved")

        def full(handle: int) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(os, "fsync", full)
        asyncio.run(writer.turn())
        verdict = check_health(url, 5)
    assert not verdict.healthy
    assert verdict.reason == (
        f"GET {url}/__mock/health: degraded: the state file cannot be written "
        f"(OSError: [Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)})"
    )


def test_a_lock_file_that_is_a_symlink_is_not_followed(tmp_path: Path) -> None:
    """A `FILE.lock` planted as a link elsewhere is refused, not written through (nor skipped: the CLI stops)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("kept")
    (tmp_path / "state.json.lock").symlink_to(elsewhere)
    with pytest.raises(OSError):
        persistence.StateFileLock.take(tmp_path / "state.json")
    assert elsewhere.read_text() == "kept"


def test_the_command_stops_when_it_cannot_lock_a_writable_directorys_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state.json.lock").symlink_to(tmp_path / "elsewhere")
    assert cli.main(["--port", "0", "--state-file", str(tmp_path / "state.json")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"mock-server: {tmp_path / 'state.json'}: cannot take its lock: ")
