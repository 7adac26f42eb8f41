"""state/persistence.py in process: what the state file keeps comes back the same through a fresh app, only what
moved is taken again, an older write never lands over a newer one, and a write is whole or nothing. The real
processes, SIGTERM and SIGKILL are tests/e2e/test_state_file.py's."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state import persistence
from mock_server.state.persistence import StateFile, write_atomically
from mock_server.state.sessions import Session
from tests.default_scenario import PARTIALLY_PAID_EVENT, PENDING_EVENT

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
