"""/__mock/ui in chromium: every flow a person uses, checked on the page and through the admin API."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from mock_server.pki import TestPki
from tests.browser.conftest import TOKEN, Server, Watch, open_page, screenshot, start_server, stop_server
from tests.default_scenario import PENDING_EVENT

pytestmark = pytest.mark.browser

PENDING = PENDING_EVENT  # the default scenario's events
PARTIAL = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"
PAID = "4b8e5d2f-9c1a-4f7b-8d6e-1a3c5e7f9b55"
ACCOUNT = "0001-123456"
NIGHT = {"start_time": "20:00:00-03:00", "amount": 300000}


def event_row(page: Page, key: str) -> Locator:
    return page.locator(f"#events tbody tr[data-key='{key}']")


def event_status(server: Server, key: str, session: str = "default") -> dict[str, object]:
    with server.client(session) as client:
        state = client.get("/__mock/state").json()
    return next(e for e in state["events"] if e["extraordinary_event_conciliation_key"] == key)


def open_dashboard(page: Page, server: Server, path: str = "/__mock/ui") -> None:
    page.goto(server.url + path)
    expect(page.locator("#events tbody tr[data-key]")).not_to_have_count(0)


def test_the_dashboard_shows_the_sessions_events_accounts_and_clock(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    expect(page.locator("#events tbody tr[data-key]")).to_have_count(4)
    expect(event_row(page, PENDING).locator(".badge")).to_have_text("pending conciliation")
    expect(event_row(page, PARTIAL).locator(".badge")).to_have_text("partially paid")
    expect(event_row(page, PAID).locator(".badge")).to_have_text("paid")
    expect(event_row(page, PAID).locator("button.pay")).to_be_disabled()
    expect(page.locator("#accounts article.account")).to_have_count(2)
    withdraw = page.locator(f"article[data-account='{ACCOUNT}'] .timeline[data-mode='withdraw'][data-source='account']")
    # 06:00 R$ 5.000,00; 20:00 R$ 3.000,00 drawn until midnight and again from midnight to 06:00.
    expect(withdraw.locator(".segment")).to_have_count(3)
    expect(withdraw.locator(".segment[data-start='06:00:00-03:00']")).to_have_text("R$ 5.000,00")
    expect(page.locator("#clock-now")).to_have_text("2026-11-21T10:00:00.000-03:00")
    expect(page.locator("#clock-mode")).to_have_text("frozen")


def test_amounts_dates_and_times_read_the_brazilian_way_in_a_us_browser(page: Page, server: Server) -> None:
    """The page's browser says en-US (conftest): amounts still read R$ 5.000,00, the clock's field dd/mm/aaaa and
    24-hour times, never a 12-hour picker or "R$ 5k" (issue 23)."""
    assert page.evaluate("navigator.language") == "en-US"
    open_dashboard(page, server)
    expect(event_row(page, PENDING).locator("td").nth(2)).to_have_text("R$ 1.500,00")
    expect(event_row(page, PARTIAL).locator("td").nth(4)).to_have_text("R$ 750,25")  # paid so far
    card = page.locator(f"article[data-account='{ACCOUNT}']")
    night = card.locator(".timeline[data-mode='withdraw'][data-source='account'] .segment[data-start='20:00:00-03:00']")
    expect(night.first).to_have_text("R$ 3.000,00")
    # Text fields in Brazil's layout: a native picker would show the browser's 12-hour, month-first format.
    clock = page.locator("#clock-at")
    expect(clock).to_have_attribute("type", "text")
    expect(clock).to_have_value("21/11/2026 10:00:00")
    time = card.locator("form.evaluate input[name=time]")
    expect(time).to_have_attribute("type", "text")
    expect(time).to_have_value("21:30")
    expect(card.locator("form.evaluate input[name=amount]")).to_have_value("1.000,00")
    assert page.locator("input[type=time], input[type=date], input[type=datetime-local]").count() == 0
    # A 24-hour time past noon and an afternoon clock, typed as a Brazilian types them.
    clock.fill("21/11/2026 21:45:00")
    page.locator("#clock-form button[type=submit]").click()
    expect(page.locator("#clock-now")).to_have_text("2026-11-21T21:45:00.000-03:00")
    expect(clock).to_have_value("21/11/2026 21:45:00")
    row = event_row(page, PENDING)
    row.locator("input.amount").fill("1.234,56")
    row.locator("button.pay-part").click()
    expect(row.locator("td").nth(4)).to_have_text("R$ 1.234,56")
    assert event_status(server, PENDING)["total_paid_amount"] == 1234.56
    expect(page.locator("#message")).to_have_text(
        f"Event {PENDING[:8]} is pending conciliation (paid R$ 1.234,56 of R$ 1.500,00)."
    )


def test_an_amount_that_is_not_reais_is_refused_on_the_page(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    row = event_row(page, PENDING)
    row.locator("input.amount").fill("1,2,3")
    row.locator("button.pay-part").click()
    expect(page.locator("#message")).to_have_text("Type an amount in reais, such as 1.500,00 or 100,50.")
    assert event_status(server, PENDING)["total_paid_amount"] == 0


def test_pay_pays_the_open_balance(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    event_row(page, PENDING).locator("button.pay").click()
    expect(event_row(page, PENDING).locator(".badge")).to_have_text("paid")
    expect(event_row(page, PENDING).locator("button.cancel")).to_be_disabled()
    assert event_status(server, PENDING)["status"] == "paid"
    assert event_status(server, PENDING)["total_paid_amount"] == 1500


def test_pay_part_pays_the_amount_typed(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    row = event_row(page, PENDING)
    row.locator("input.amount").fill("100,50")
    row.locator("button.pay-part").click()
    expect(row.locator(".badge")).to_have_text("partially paid")
    expect(row.locator("td").nth(4)).to_have_text("R$ 100,50")
    assert event_status(server, PENDING)["total_paid_amount"] == 100.5


def test_a_refused_payment_shows_the_servers_error(watched: tuple[Page, Watch], server: Server) -> None:
    page, watch = watched
    watch.expected_errors.append(r"status of 400")  # chromium logs the refused call
    open_dashboard(page, server)
    row = event_row(page, PENDING)
    row.locator("input.amount").fill("99999")  # more than the open balance
    row.locator("button.pay-part").click()
    expect(page.locator("#message")).to_contain_text("400")
    assert event_status(server, PENDING)["total_paid_amount"] == 0


def test_cancel_cancels(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    event_row(page, PARTIAL).locator("button.cancel").click()
    expect(event_row(page, PARTIAL).locator(".badge")).to_have_text("canceled")
    assert event_status(server, PARTIAL)["status"] == "canceled"


def test_the_evaluation_box_applies_the_window_rule_and_marks_the_time(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    card = page.locator(f"article[data-account='{ACCOUNT}']")
    box = card.locator("form.evaluate")
    box.locator("select[name=mode]").select_option("withdraw")
    box.locator("input[name=amount]").fill("3.500,00")
    box.locator("input[name=time]").fill("21:30")
    box.locator("button[type=submit]").click()
    expect(box.locator("output")).to_have_text(
        "capped at R$ 3.000,00 (window from 20:00, account): R$ 3.500,00 blocked"
    )
    marker = card.locator(".timeline[data-mode='withdraw'][data-source='account'] .marker")
    expect(marker).to_be_visible()
    left = re.fullmatch(r"left: ([0-9.]+)%;", marker.get_attribute("style") or "")
    assert left is not None and float(left[1]) == pytest.approx((21 * 60 + 30) / 1440 * 100, abs=0.001)
    # Before the day's first window, the previous day's last one applies.
    box.locator("input[name=time]").fill("05:59")
    box.locator("input[name=amount]").fill("2000")
    box.locator("button[type=submit]").click()
    expect(box.locator("output")).to_have_text(
        "capped at R$ 3.000,00 (window from 20:00, account): R$ 2.000,00 allowed"
    )


def test_the_evaluation_uses_the_recipient_lists_windows_for_a_listed_document(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    box = page.locator(f"article[data-account='{ACCOUNT}'] form.evaluate")
    box.locator("select[name=mode]").select_option("transaction")
    box.locator("input[name=amount]").fill("15.000,00")
    box.locator("input[name=time]").fill("10:00")
    box.locator("input[name=document_number]").fill("123.456.789-09")
    box.locator("button[type=submit]").click()
    expect(box.locator("output")).to_have_text(
        "capped at R$ 20.000,00 (window from 06:00, recipient list): R$ 15.000,00 allowed"
    )


def test_the_journal_shows_public_calls_as_they_happen(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    expect(page.locator("#journal-count")).to_have_text("0 requests")
    with server.client() as client:
        client.get(f"/event_conciliation/extraordinary_event/{PENDING}")
        client.get("/event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000")
    rows = page.locator("#journal tbody tr")
    expect(rows).to_have_count(2)  # newest first, polled every second
    expect(rows.nth(0)).to_have_class("failed")
    expect(rows.nth(0).locator("td").nth(4)).to_have_text("404")
    expect(rows.nth(1).locator("td.path")).to_have_text(f"/event_conciliation/extraordinary_event/{PENDING}")
    page.locator("#journal-clear").click()
    expect(page.locator("#journal-count")).to_have_text("0 requests")


@pytest.fixture(scope="module")
def proxied() -> Iterator[Server]:
    """A server behind a (pretend) TLS-terminating proxy on this machine: it reads the client certificate from the
    header such a proxy forwards it in."""
    running = start_server("--client-cert-header", "X-Client-Cert")
    yield running
    stop_server(running)


def test_the_journal_shows_the_client_certificates_cnpj(browser: Browser, proxied: Server, test_pki: TestPki) -> None:
    """A call that came with a client certificate shows its CNPJ, the rest of the certificate on hover; a call
    without one says so."""
    page, watch, context = open_page(browser, proxied.url)
    open_dashboard(page, proxied)
    with proxied.client() as client:
        certificate = quote(test_pki.client()[0].read_text())  # as nginx's $ssl_client_escaped_cert
        client.get(f"/event_conciliation/extraordinary_event/{PENDING}", headers={"X-Client-Cert": certificate})
        client.get(f"/event_conciliation/extraordinary_event/{PENDING}")
    rows = page.locator("#journal tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td.client")).to_have_text("none")
    expect(rows.nth(1).locator("td.client")).to_have_text("CNPJ 12345678000195")
    expect(rows.nth(1).locator("td.client")).to_have_attribute("title", re.compile(r"serialNumber=12345678000195"))
    context.close()
    assert not watch.foreign and not watch.errors, (watch.foreign, watch.errors)


def test_a_fault_made_on_the_page_hits_the_next_call(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    page.locator("#fault-operation").select_option("createLimitUpdateRequest")
    page.locator("#fault-status").fill("503")
    page.locator("#fault-times").fill("1")
    page.locator("#fault-form button[type=submit]").click()
    expect(page.locator("#faults tbody tr")).to_have_count(1)
    expect(page.locator("#faults tbody tr td").nth(1)).to_have_text("createLimitUpdateRequest")
    with server.client() as client:
        answer = client.post(
            f"/limits/account/{ACCOUNT}/limit_update_request",
            json={"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}},
        )
    assert answer.status_code == 503
    expect(page.locator("#faults tbody")).to_have_text("No faults armed.")  # used up, seen by the poll
    expect(page.locator("#journal tbody tr").first.locator("td").nth(4)).to_have_text("503")


def test_the_clock_controls_freeze_shift_and_release(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    page.locator("#clock-at").fill("01/12/2026 08:30:00")
    page.locator("#clock-form button[type=submit]").click()
    expect(page.locator("#clock-now")).to_have_text("2026-12-01T08:30:00.000-03:00")
    page.locator("#clock-form button[data-shift='3600']").click()
    expect(page.locator("#clock-now")).to_have_text("2026-12-01T09:30:00.000-03:00")
    with server.client() as client:
        assert client.get("/__mock/clock").json() == {"now": "2026-12-01T09:30:00.000-03:00", "frozen": True}
    page.locator("#clock-real").click()
    expect(page.locator("#clock-mode")).to_have_text("running")
    with server.client() as client:
        assert client.get("/__mock/clock").json()["frozen"] is False


def test_the_session_switcher_acts_on_the_session_chosen(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    page.locator("#session").fill("other")
    page.locator("#session-form button").click()
    expect(page.locator("#message")).to_have_text("Session other.")
    event_row(page, PENDING).locator("button.pay").click()
    expect(event_row(page, PENDING).locator(".badge")).to_have_text("paid")
    assert event_status(server, PENDING, "other")["status"] == "paid"
    assert event_status(server, PENDING, "default")["status"] == "pending_conciliation"
    page.reload()  # the choice lives in the tab's sessionStorage
    expect(page.locator("#session")).to_have_value("other")
    expect(event_row(page, PENDING).locator(".badge")).to_have_text("paid")


def test_reset_loads_the_scenario_chosen(page: Page, server: Server) -> None:
    open_dashboard(page, server)
    page.locator("#scenario").select_option("empty")
    page.locator("#reset-form button").click()
    expect(page.locator("#events tbody")).to_have_text("No events in this session.")
    expect(page.locator("#accounts")).to_have_text("No accounts in this session.")
    page.locator("#scenario").select_option("default")
    page.locator("#reset-form button").click()
    expect(page.locator("#events tbody tr[data-key]")).to_have_count(4)


def test_a_page_under_a_session_url_acts_on_that_session(page: Page, server: Server) -> None:
    with server.client("by-url") as client:
        client.post("/__mock/reset").raise_for_status()
    open_dashboard(page, server, "/__session/by-url/__mock/ui")
    expect(page.locator("#session")).to_have_value("by-url")
    event_row(page, PENDING).locator("button.cancel").click()
    expect(event_row(page, PENDING).locator(".badge")).to_have_text("canceled")
    assert event_status(server, PENDING, "by-url")["status"] == "canceled"
    assert event_status(server, PENDING, "default")["status"] == "pending_conciliation"


def test_with_an_admin_token_the_page_asks_for_it_and_then_works(browser: Browser, token_server: Server) -> None:
    page, watch, context = open_page(browser, token_server.url)
    watch.expected_errors.append(r"status of 401")  # the calls made before the token is typed
    try:
        page.goto(token_server.url + "/__mock/ui")
        expect(page.locator("#message")).to_contain_text("--admin-token")
        expect(page.locator("#events tbody tr[data-key]")).to_have_count(0)
        page.locator("#token").fill(TOKEN)
        page.locator("#token-form button").click()
        expect(page.locator("#events tbody tr[data-key]")).to_have_count(4)
        event_row(page, PENDING).locator("button.pay").click()
        expect(event_row(page, PENDING).locator(".badge")).to_have_text("paid")
    finally:
        context.close()
    assert event_status(token_server, PENDING)["status"] == "paid"
    assert not watch.foreign and not watch.errors, (watch.foreign, watch.errors)


def test_screenshot_of_a_busy_dashboard(watched: tuple[Page, Watch], server: Server) -> None:
    """The docs' picture (docs/getting-started.md): a partial payment, an evaluation, a fault and a few calls in
    the journal."""
    page, _ = watched
    with server.client() as client:
        client.get(f"/event_conciliation/extraordinary_event/{PENDING}")
        client.post(
            f"/limits/account/{ACCOUNT}/limit_update_request",
            json={"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 600000}, NIGHT]}},
        )
        client.post(f"/limits/account/{ACCOUNT}/recipient_list/recipient", json={"document_number": "123.456.789-00"})
    open_dashboard(page, server)
    row = event_row(page, PENDING)
    row.locator("input.amount").fill("400,00")
    row.locator("button.pay-part").click()
    expect(row.locator(".badge")).to_have_text("partially paid")
    page.locator("#fault-operation").select_option("addRecipient")
    page.locator("#fault-form button[type=submit]").click()
    expect(page.locator("#faults tbody tr td").nth(1)).to_have_text("addRecipient")
    box = page.locator(f"article[data-account='{ACCOUNT}'] form.evaluate")
    box.locator("input[name=amount]").fill("3.500,00")
    box.locator("button[type=submit]").click()
    expect(box.locator("output")).to_contain_text("blocked")
    expect(page.locator("#journal tbody tr")).to_have_count(3)
    path = screenshot(page, "dashboard.png")
    assert path.stat().st_size > 20_000
    assert re.search(r"partially paid", page.content())
