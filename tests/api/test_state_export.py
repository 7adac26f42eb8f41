"""Issue 16 item 6: the YAML state export is made off the event loop, from a snapshot no later write changes."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import httpx
import pytest
import yaml

from mock_server.app import create_app
from mock_server.export import state_document
from mock_server.models import LimitWindow
from mock_server.settings import Settings
from tests.hostile_server import live_server

WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}, {"start_time": "20:00:00-03:00", "amount": 300000}]
MODES = ("withdraw", "change", "transaction", "transaction_natural_person", "transaction_legal_person")


def _big_scenario(directory: Path, accounts: int) -> Path:
    """A scenario of `accounts` accounts with every mode, in JSON syntax (loads fast)."""
    directory.mkdir()
    document = {
        "description": "many accounts",
        "accounts": [
            {
                "account_id": f"acc-{index:06d}",
                "registration_date": "2026-01-10T09:00:00-03:00",
                "limit": {"pix": {mode: WINDOWS for mode in MODES}},
            }
            for index in range(accounts)
        ],
    }
    (directory / "default.yaml").write_text(json.dumps(document), encoding="utf-8")
    return directory


def test_a_snapshot_does_not_change_with_later_writes(specs):
    app = create_app(Settings(), specs)
    session = app.state.sessions.get("snap")
    store = session.store
    window = (LimitWindow("06:00:00-03:00", 1),)
    store.request_limit_update("0001-123456", {"withdraw": window}, session.clock.now(), session.ids.new_uuid)
    events, accounts = store.snapshot()
    before = yaml.safe_dump(state_document("d", events, accounts))
    store.request_limit_update("0001-123456", {"change": window}, session.clock.now(), session.ids.new_uuid)
    store.add_recipient("0001-123456", "529.982.247-25", session.clock.now(), session.ids.new_uuid)
    assert yaml.safe_dump(state_document("d", events, accounts)) == before
    assert len(store.account("0001-123456").limit_update_requests) == 2


def test_a_big_yaml_export_does_not_stall_other_sessions(tmp_path):
    fixtures = _big_scenario(tmp_path / "big", 6000)
    with live_server("--fixtures", str(fixtures)) as server:
        latencies: list[float] = []
        exported: dict[str, object] = {}

        def export() -> None:
            with httpx.Client(base_url=server.url, timeout=120) as http:
                started = time.monotonic()
                answer = http.get("/__mock/state", params={"format": "yaml"}, headers={"X-Mock-Session": "exporter"})
                exported.update(status=answer.status_code, seconds=time.monotonic() - started, text=answer.text)

        worker = threading.Thread(target=export)
        with httpx.Client(base_url=server.url, timeout=120, headers={"X-Mock-Session": "bystander"}) as http:
            http.get("/__mock/health")
            worker.start()
            while worker.is_alive():
                started = time.monotonic()
                assert http.get("/__mock/accounts/acc-000001").status_code == 200
                latencies.append(time.monotonic() - started)
                time.sleep(0.01)
        worker.join()
        assert exported["status"] == 200
        assert str(exported["text"]).count("- account_id: acc-") == 6000
        print(f"export {exported['seconds']:.2f} s, {len(latencies)} bystander calls, slowest {max(latencies):.3f} s")
        assert exported["seconds"] > 1.0, "the export was too quick to show anything"  # type: ignore[operator]
        assert len(latencies) > 10
        assert max(latencies) < 0.5, (
            f"a bystander waited {max(latencies):.2f} s during a {exported['seconds']:.1f} s export"
        )


@pytest.mark.parametrize("format_", [None, "yaml"])
def test_the_export_reads_the_same_in_both_formats(client, format_):
    params = {"format": format_} if format_ else {}
    answer = client.get("/__mock/state", params=params)
    assert answer.status_code == 200
    state = yaml.safe_load(answer.text) if format_ else answer.json()
    assert [a["account_id"] for a in state["accounts"]] == ["0001-123456", "0002-654321"]


def test_the_piecewise_yaml_is_what_dumping_the_whole_document_writes(client):
    from mock_server.export import _Dumper, yaml_text

    client.post("/limits/account/0001-123456/limit_update_request", json={"pix": {"withdraw": WINDOWS[:1]}})
    document = client.get("/__mock/state").json()
    document["description"] = "a\u00e7\u00e3o\u2028 with a line separator, and a long description " * 4
    whole = yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=False)
    assert yaml_text(document) == whole
    assert yaml.safe_load(yaml_text(document)) == document
    assert yaml_text(document).isascii()
    empty = {"description": "empty", "events": [], "accounts": []}
    assert yaml_text(empty) == yaml.safe_dump(empty, sort_keys=False)
