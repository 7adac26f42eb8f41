"""Issue 24 in chromium: a page on another origin can neither change nor read admin state on a default server (no
admin token), a page on a name rebound to 127.0.0.1 gets 403, and the dashboard on the server's own origin works.

The attacker's page comes from a second HTTP server on another port of this machine (another origin: `same-site`
from 127.0.0.1, `cross-site` from localhost), and tries what broke the admin API before: bodyless `no-cors`
fetches, a Blob typed JSON, forms (urlencoded, multipart, text/plain carrying JSON), CORS reads and calls that need
a preflight. DNS rebinding is played with chromium's `--host-resolver-rules` (evil.test resolves to 127.0.0.1) and
the attacker's document served by Playwright for that origin: its own requests then reach the mock as
`Host: evil.test:PORT`, same-origin in the browser's eyes.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import Browser, Playwright, Response, expect

from tests.browser.conftest import Server, open_page
from tests.default_scenario import PENDING_EVENT

pytestmark = pytest.mark.browser

PENDING = PENDING_EVENT
PARTIAL = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"
FAULT = {"operation_id": "getExtraordinaryEvent", "status": 503, "times": None}
REFUSALS = {"cross_origin_request", "admin_header_required", "host_not_allowed"}

# The attacker's page: every request it can make to the mock, each result written to window.results; forms post into
# hidden frames, so the page stays to report.
ATTACK_PAGE = """<!doctype html>
<html><body>
<iframe name="f1"></iframe><iframe name="f2"></iframe><iframe name="f3"></iframe><iframe name="f4"></iframe>
<form id="reset" target="f1" method="POST" action="MOCK/__mock/reset"><input name="scenario" value="default"></form>
<form id="pay" target="f2" method="POST" action="MOCK/__mock/events/PENDING/pay" enctype="multipart/form-data">
  <input name="amount" value="1"></form>
<form id="fault" target="f3" method="POST" action="MOCK/__mock/faults" enctype="text/plain">
  <input name='{"operation_id": "getExtraordinaryEvent", "status": 500, "x": "' value='"}'></form>
<form id="cancel" target="f4" method="POST" action="MOCK/__mock/events/PARTIAL/cancel"></form>
<script>
const mock = "MOCK";
window.results = {};
async function attempt(name, url, init) {
  try {
    const answer = await fetch(url, init);
    let text = null;
    try { text = await answer.text(); } catch (e) { text = null; }
    window.results[name] = {type: answer.type, status: answer.status, text: text};
  } catch (error) {
    window.results[name] = {type: "error", error: String(error)};
  }
}
window.attack = async function () {
  const json = new Blob([JSON.stringify({amount: 1})], {type: "application/json"});
  await attempt("pay", mock + "/__mock/events/PENDING/pay", {method: "POST", mode: "no-cors"});
  await attempt("cancel", mock + "/__mock/events/PARTIAL/cancel", {method: "POST", mode: "no-cors"});
  await attempt("reset", mock + "/__mock/reset", {method: "POST", mode: "no-cors"});
  await attempt("snapshot", mock + "/__mock/snapshots/attack", {method: "POST", mode: "no-cors"});
  await attempt("pay with a JSON blob", mock + "/__mock/events/PENDING/pay",
    {method: "POST", mode: "no-cors", body: json});
  await attempt("fault as text", mock + "/__mock/faults",
    {method: "POST", mode: "no-cors", body: JSON.stringify(FAULT), headers: {"Content-Type": "text/plain"}});
  await attempt("pay with the header", mock + "/__mock/events/PENDING/pay",
    {method: "POST", headers: {"X-Mock-Admin": "1"}});
  await attempt("clear faults", mock + "/__mock/faults", {method: "DELETE"});
  await attempt("read state", mock + "/__mock/state", {});
  await attempt("read state no-cors", mock + "/__mock/state", {mode: "no-cors"});
  await attempt("read journal", mock + "/__mock/requests", {});
  await attempt("read spec", mock + "/__mock/openapi.yaml", {});
  for (const id of ["reset", "pay", "fault", "cancel"]) { document.getElementById(id).submit(); }
  return window.results;
};
</script></body></html>
"""

# The same page, as a rebinding attacker serves it: same-origin with the mock once evil.test resolves to 127.0.0.1, so
# it may send any header and read every answer.
REBINDING_PAGE = """<!doctype html>
<html><body><script>
window.attack = async function () {
  const results = {};
  for (const [name, url, init] of [
    ["read state", "/__mock/state", {}],
    ["read journal", "/__mock/requests", {}],
    ["read spec", "/openapi.json", {}],
    ["pay", "/__mock/events/PENDING/pay",
      {method: "POST", headers: {"X-Mock-Admin": "1", "Content-Type": "application/json"}, body: "{}"}],
  ]) {
    try {
      const answer = await fetch(url, init);
      results[name] = {status: answer.status, text: await answer.text()};
    } catch (error) {
      results[name] = {status: 0, text: String(error)};
    }
  }
  return results;
};
</script></body></html>
"""


# Issue 33: a page that makes the browser look an event up, in a test's session named in the URL, as a page can
# without reading anything: images (the finding: three `<img>` lookups paid an `after_lookups` schedule) and no-cors
# fetches (`no-store`: no cache answers in the server's place).
LOOKUP_PAGE = """<!doctype html>
<html><body><script>
window.lookups = async function (session) {
  const url = "MOCK/__session/" + session + "/event_conciliation/extraordinary_event/PENDING";
  for (let i = 0; i < 3; i++) {
    await new Promise((done) => { const image = new Image(); image.onload = image.onerror = done; image.src = url; });
    await fetch(url, {mode: "no-cors", cache: "no-store"}).catch(() => null);
  }
  return true;
};
</script></body></html>
"""


def attack_page(mock: str) -> bytes:
    page = ATTACK_PAGE.replace("MOCK", mock).replace("PENDING", PENDING).replace("PARTIAL", PARTIAL)
    return page.replace("FAULT", json.dumps(FAULT)).encode()


@pytest.fixture(scope="module")
def attacker(server: Server) -> Iterator[int]:
    """Another HTTP server on this machine (another port: another origin), serving the attack page at /."""
    pages = {
        "/": attack_page(server.url),
        "/lookups.html": LOOKUP_PAGE.replace("MOCK", server.url).replace("PENDING", PENDING).encode(),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path, pages["/"])
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, name="attacker", daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


Seen = tuple[str, int, bool, str | None]  # "METHOD url", status, a CORS header?, the body's code


def seen(response: Response) -> Seen:
    """An answer the mock gave the page, read as it comes (a frame's navigation keeps no body for later); judged
    after the page closes (an assertion in Playwright's event handler would only be logged). The code is None where
    chromium keeps no body (an opaque answer)."""
    try:
        code = response.json().get("code")
    except Exception:
        code = None
    cors = any(name.startswith("access-control-") for name in response.headers)
    return f"{response.request.method} {response.url}", response.status, cors, code


def admin_world(server: Server) -> dict[str, Any]:
    """What the attacks aim at, read by a program: events, faults, snapshots and the clock of session default."""
    with server.client() as client:
        return {
            "state": client.get("/__mock/state").json(),
            "faults": client.get("/__mock/faults").json(),
            "snapshots": client.get("/__mock/snapshots").json(),
            "clock": client.get("/__mock/clock").json(),
        }


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["same-site (another port)", "cross-site"])
def test_a_page_on_another_origin_can_neither_change_nor_read_admin_state(
    browser: Browser, server: Server, attacker: int, host: str
) -> None:
    with server.client() as client:  # something for a reset to clear
        assert client.post("/__mock/faults", json=FAULT).status_code == 201
    before = admin_world(server)
    page, _, context = open_page(browser, server.url)
    answers: list[Seen] = []
    page.on(
        "response", lambda response: answers.append(seen(response)) if response.url.startswith(server.url) else None
    )
    try:
        page.goto(f"http://{host}:{attacker}/")
        results = page.evaluate("window.attack()")
        for frame in ("f1", "f2", "f3", "f4"):  # the forms' answers, which the page itself cannot read
            target = page.frame(name=frame)
            assert target is not None
            expect(target.locator("body")).to_contain_text("cross_origin_request")
    finally:
        context.close()

    assert admin_world(server) == before
    # Nothing the page read holds admin state: opaque, blocked, or a refusal.
    for name, result in results.items():
        text = result.get("text") or ""
        assert "extraordinary_event_conciliation_key" not in text and "openapi" not in text, (name, result)
        assert result["type"] in ("opaque", "error"), (name, result)
    # Every answer the page got from the mock is a 403 without a CORS permission, in the contract's body where
    # chromium keeps it: the six no-cors POSTs and the no-cors read (opaque to the page), and the four forms. The CORS
    # reads went out too, but chromium reports no answer the page may not see; the calls that need a preflight never
    # went out (the preflight got no permission).
    assert len(answers) >= 11, answers
    assert all(status == 403 and not cors for _, status, cors, _ in answers), answers
    assert all(code in REFUSALS for *_, code in answers if code is not None), answers
    assert len([code for *_, code in answers if code is not None]) >= 4, answers


@pytest.fixture
def rebinding_browser(playwright: Playwright) -> Iterator[Browser]:
    """Chromium in which evil.test resolves to 127.0.0.1, as after a DNS rebinding."""
    executable = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    assert executable is not None
    launched = playwright.chromium.launch(
        executable_path=executable,
        headless=True,
        # Chromium's own Local Network Access checks stop a public page reaching 127.0.0.1 too; off here, to play a
        # browser without them (Firefox, Safari, an older Chrome): the server must hold by itself.
        args=[
            "--no-sandbox",
            "--host-resolver-rules=MAP evil.test 127.0.0.1",
            "--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights",
        ],
    )
    yield launched
    launched.close()


def test_a_rebinding_page_gets_403_and_changes_nothing(rebinding_browser: Browser, server: Server) -> None:
    port = server.url.rsplit(":", 1)[1]
    origin = f"http://evil.test:{port}"
    before = admin_world(server)
    page, _, context = open_page(rebinding_browser, origin)
    document = REBINDING_PAGE.replace("PENDING", PENDING)
    page.route(
        f"{origin}/attack.html", lambda route: route.fulfill(status=200, content_type="text/html", body=document)
    )
    try:
        page.goto(f"{origin}/attack.html")
        results = page.evaluate("window.attack()")
    finally:
        context.close()
    for name, result in results.items():
        assert result["status"] == 403, (name, result)
        assert json.loads(result["text"])["code"] == "host_not_allowed", (name, result)
    assert admin_world(server) == before


def test_the_dashboard_still_works_from_its_own_origin(browser: Browser, server: Server) -> None:
    page, watch, context = open_page(browser, server.url)
    try:
        page.goto(server.url + "/__mock/ui")
        row = page.locator(f"#events tbody tr[data-key='{PARTIAL}']")
        row.locator("button.cancel").click()  # a bodyless POST: the page sends X-Mock-Admin
        expect(row.locator(".badge")).to_have_text("canceled")
    finally:
        context.close()
    assert not watch.errors, watch.errors
    with server.client() as client:
        assert client.get(f"/event_conciliation/extraordinary_event/{PARTIAL}").json()["status"] == "canceled"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"], ids=["same-site (another port)", "cross-site"])
def test_lookups_from_a_page_on_another_origin_neither_fire_a_schedule_nor_land_in_the_journal(
    browser: Browser, server: Server, attacker: int, host: str
) -> None:
    """Issue 33: three `<img>` lookups from http://localhost:OTHER paid the `after_lookups` schedule of a test's
    session and wrote three entries into its journal, which `verify` and the Pact then saw."""
    session = f"job-{host.replace('.', '-')}"
    with server.client(session) as client:
        assert client.post("/__mock/reset").status_code == 200
        schedule = {"action": "pay", "after_lookups": 3}
        assert client.post(f"/__mock/events/{PENDING}/schedule", json=schedule).status_code == 201
    page, _, context = open_page(browser, server.url)
    answers: list[Seen] = []
    page.on(
        "response", lambda response: answers.append(seen(response)) if response.url.startswith(server.url) else None
    )
    try:
        page.goto(f"http://{host}:{attacker}/lookups.html")
        page.evaluate("session => window.lookups(session)", session)
    finally:
        context.close()
    assert len(answers) >= 3, answers  # the browser did send them
    assert all(status == 403 and not cors for _, status, cors, _ in answers), answers
    with server.client(session) as client:
        assert client.get("/__mock/requests").json() == {"requests": []}
        (scheduled,) = client.get("/__mock/schedules").json()["schedules"]
        assert scheduled["state"] == "pending" and scheduled["lookups"] == 0, scheduled
        # the test's own three lookups find the event unpaid, and pay it at the third, as the schedule says
        statuses = [client.get(f"/event_conciliation/extraordinary_event/{PENDING}").json()["status"] for _ in "123"]
        assert statuses == ["pending_conciliation", "pending_conciliation", "paid"]
