"""Issue 16 item 6: the YAML state export is made off the event loop, from a snapshot no later write changes."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
import yaml

from mock_server.app import create_app
from mock_server.domain.models import LimitWindow
from mock_server.settings import Settings
from mock_server.state import export
from mock_server.state.export import state_document

WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}, {"start_time": "20:00:00-03:00", "amount": 300000}]


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


def test_a_yaml_export_does_not_stall_other_sessions(specs, monkeypatch):
    """The export's writing is held in its worker until a bystander session has been answered: had it run on
    the event loop, the loop would be stuck in it and the bystander never answered (the held writer gives up
    after 10 s and the test fails). No timing is measured."""
    app = create_app(Settings(), specs)
    writing, release = threading.Event(), threading.Event()
    write_yaml = export.yaml_text

    def held_writer(document: dict[str, Any], cancelled: threading.Event | None = None) -> str:
        writing.set()
        assert release.wait(10), "the bystander was never answered while the export was being written"
        return write_yaml(document, cancelled)

    monkeypatch.setattr(export, "yaml_text", held_writer)

    async def exchange() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as http:
            exporting = asyncio.create_task(
                http.get("/__mock/state", params={"format": "yaml"}, headers={"X-Mock-Session": "exporter"})
            )
            assert await asyncio.to_thread(writing.wait, 10), "the export never started writing"
            bystander = await http.get("/__mock/accounts/0001-123456", headers={"X-Mock-Session": "bystander"})
            assert bystander.status_code == 200
            assert not exporting.done()  # answered while the export was still being written
            release.set()
            answer = await exporting
            assert answer.status_code == 200
            assert "- account_id: 0001-123456" in answer.text

    asyncio.run(exchange())


@pytest.mark.parametrize("format_", [None, "yaml"])
def test_the_export_reads_the_same_in_both_formats(client, format_):
    params = {"format": format_} if format_ else {}
    answer = client.get("/__mock/state", params=params)
    assert answer.status_code == 200
    state = yaml.safe_load(answer.text) if format_ else answer.json()
    assert [a["account_id"] for a in state["accounts"]] == ["0001-123456", "0002-654321"]


def test_the_piecewise_yaml_is_what_dumping_the_whole_document_writes(client):
    from mock_server.state.export import _dumper, yaml_text

    client.post("/limits/account/0001-123456/limit_update_request", json={"pix": {"withdraw": WINDOWS[:1]}})
    document = client.get("/__mock/state").json()
    document["description"] = "a\u00e7\u00e3o\u2028 with a line separator, and a long description " * 4
    whole = yaml.dump(document, Dumper=_dumper(), sort_keys=False, allow_unicode=False)
    assert yaml_text(document) == whole
    assert yaml.safe_load(yaml_text(document)) == document
    assert yaml_text(document).isascii()
    empty = {"description": "empty", "events": [], "accounts": []}
    assert yaml_text(empty) == yaml.safe_dump(empty, sort_keys=False)
