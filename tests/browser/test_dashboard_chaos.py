"""The dashboard's faults view shows a fault's chance (probability, seed, firings) and a quota (issue 45), and its
form arms a fault with a probability and a seed."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import Server
from tests.default_scenario import PENDING_EVENT

pytestmark = pytest.mark.browser

SESSION = "chaos-view"
PENDING = PENDING_EVENT


def test_the_faults_table_shows_chance_and_quotas_and_the_form_arms_a_fault_by_chance(
    page: Page, server: Server
) -> None:
    with server.client(SESSION) as client:
        assert client.post("/__mock/reset").status_code == 200
        for fault in (
            {"operation_id": "getExtraordinaryEvent", "status": 503, "probability": 0.5, "seed": 7, "times": None},
            {"operation_id": "addRecipient", "kind": "quota", "limit": 5, "window_s": 60, "seed": 3},
            {"operation_id": "registerAccountLimit", "status": 500},
        ):
            assert client.post("/__mock/faults", json=fault).status_code == 201
        statuses = [client.get(f"/event_conciliation/extraordinary_event/{PENDING}").status_code for _ in range(4)]
    fired = statuses.count(503)
    page.goto(f"{server.url}/__session/{SESSION}/__mock/ui")
    rows = page.locator("#faults tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0).locator("td").nth(5)).to_have_text(f"p 0.5, seed 7: fired {fired} of 4")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("429 past 5 per 60 s (0 this window)")
    expect(rows.nth(1).locator("td").nth(5)).to_have_text("p 1, seed 3: fired 0 of 0")
    expect(rows.nth(2).locator("td").nth(5)).to_have_text("always")
    page.select_option("#fault-operation", "removeRecipient")
    page.fill("#fault-probability", "0.25")
    page.fill("#fault-seed", "42")
    page.click("#fault-form button[type=submit]")
    expect(rows).to_have_count(4)
    expect(rows.nth(3).locator("td").nth(5)).to_have_text("p 0.25, seed 42: fired 0 of 0")
