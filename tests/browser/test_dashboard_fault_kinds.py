"""The dashboard shows what a fault of each kind answers, its match, and a reset call in the journal."""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Server
from tests.default_scenario import PENDING_EVENT

pytestmark = pytest.mark.browser

SESSION = "fault-kinds"
PENDING = PENDING_EVENT
ACCOUNT = "0001-123456"


def test_the_faults_table_says_each_kind_and_the_journal_shows_a_reset(page: Page, server: Server) -> None:
    with server.client(SESSION) as client:
        assert client.post("/__mock/reset").status_code == 200
        for fault in (
            {"operation_id": "getExtraordinaryEvent", "kind": "reset"},
            {"operation_id": "addRecipient", "kind": "malformed", "match": {"path": {"account_id": ACCOUNT}}},
            {"operation_id": "removeRecipient", "kind": "slow_body", "delay_ms": 10},
            {"operation_id": "registerAccountLimit", "delay_ms": 10},
        ):
            assert client.post("/__mock/faults", json=fault).status_code == 201
    page.goto(f"{server.url}/__session/{SESSION}/__mock/ui")
    rows = page.locator("#faults tbody tr")
    expect(rows).to_have_count(4)
    expect(rows.nth(0).locator("td").nth(2)).to_have_text("reset (no answer)")
    expect(rows.nth(1).locator("td").nth(0)).to_have_text("fault-2 (match)")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("201 malformed")
    expect(rows.nth(2).locator("td").nth(2)).to_have_text("real answer, slow body")
    expect(rows.nth(3).locator("td").nth(2)).to_have_text("(delay only)")
    with server.client(SESSION) as client, pytest.raises(httpx.TransportError):
        client.get(f"/event_conciliation/extraordinary_event/{PENDING}")
    expect(page.locator("#journal tbody tr").first.locator("td").nth(4)).to_have_text("reset")
    expect(rows).to_have_count(3)
