"""/__mock/docs in chromium: Swagger UI 5 from the package, both specs, "Try it out" reaching this server."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import TOKEN, Server, open_page, screenshot
from tests.default_scenario import PENDING_EVENT

pytestmark = pytest.mark.browser

PENDING = PENDING_EVENT


def test_try_it_out_calls_this_server_in_the_session_typed(page: Page, server: Server) -> None:
    with server.client("docs-try") as client:
        client.post("/__mock/reset").raise_for_status()
    page.goto(server.url + "/__mock/docs")
    page.locator("#session").fill("docs-try")
    expect(page.locator("#operations-extraordinary-events-getExtraordinaryEvent")).to_be_visible()
    screenshot(page, "docs.png", full_page=False)
    operation = page.locator("#operations-extraordinary-events-getExtraordinaryEvent")
    operation.locator(".opblock-summary").click()
    operation.locator("input[placeholder='extraordinary_event_conciliation_key']").fill(PENDING)
    operation.locator("button.execute").click()
    expect(operation.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")
    expect(operation.locator(".live-responses-table tbody .response-col_description")).to_contain_text(
        '"status": "pending_conciliation"'
    )
    # It reached this server (on its random port) and carried X-Mock-Session: the session's journal has it.
    with server.client("docs-try") as client:
        journal = client.get("/__mock/requests").json()["requests"]
    assert [(r["method"], r["path"], r["status"]) for r in journal] == [
        ("GET", f"/event_conciliation/extraordinary_event/{PENDING}", 200)
    ]


def test_the_admin_spec_is_there_too_and_its_calls_work(page: Page, server: Server) -> None:
    page.goto(server.url + "/__mock/docs?spec=admin")
    expect(page.locator(".topbar select option:checked")).to_have_text("Test-control API (/__mock)")
    operation = page.locator("#operations-clock-mockGetClock")
    operation.locator(".opblock-summary").click()
    operation.locator("button.execute").click()
    expect(operation.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")
    expect(operation.locator(".live-responses-table tbody .response-col_description")).to_contain_text('"frozen": true')


def test_the_spec_selector_switches_between_the_two_documents(page: Page, server: Server) -> None:
    page.goto(server.url + "/__mock/docs")
    expect(page.locator("#operations-limits-registerAccountLimit")).to_be_visible()
    page.locator(".topbar select").select_option("Test-control API (/__mock)")
    expect(page.locator("#operations-events-mockPayEvent")).to_be_visible()
    expect(page.locator("#operations-pages-mockDashboard")).to_be_visible()


def test_the_bar_holds_the_one_token_field(browser: Browser, token_server: Server) -> None:
    """Swagger UI's own Authorize button (and each operation's padlock) made a second token field beside the bar's
    (issue 23): only the bar's is left, and it is the one every call carries, the admin spec's fetch included."""
    page, watch, context = open_page(browser, token_server.url)
    try:
        page.goto(token_server.url + "/__mock/docs")
        expect(page.locator("#operations-limits-registerAccountLimit")).to_be_visible()
        page.locator("#token").fill(TOKEN)
        page.locator(".topbar select").select_option("Test-control API (/__mock)")  # fetched with the bar's token
        operation = page.locator("#operations-clock-mockGetClock")
        expect(operation).to_be_visible()
        expect(page.locator("input[type=password]")).to_have_count(1)
        expect(page.locator("#token")).to_be_visible()
        expect(page.locator(".auth-wrapper, button.authorize, button.authorization__btn")).to_have_count(0)
        operation.locator(".opblock-summary").click()
        expect(page.locator("input[type=password]")).to_have_count(1)  # none appears with the operation open
        operation.locator("button.execute").click()
        expect(operation.locator(".live-responses-table tbody .response-col_status")).to_have_text("200")
        watch.expected_errors.append(r"status of 401")  # the call made with the token cleared, next
        page.locator("#token").fill("")
        operation.locator("button.execute").click()
        expect(operation.locator(".live-responses-table tbody .response-col_status")).to_have_text("401")
    finally:
        context.close()
    assert not watch.foreign and not watch.errors, (watch.foreign, watch.errors)
