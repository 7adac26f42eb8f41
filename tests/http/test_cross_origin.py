"""The mock against web pages (http/cross_origin.py, issues 24 and 33): what a browser sends for a page on another
origin is refused, by the admin plane and the public API alike, and an admin call that changes state needs what no
simple cross-origin request can carry. Through HTTP in process, with a client that sends only what each test names
(the `client` fixture sends X-Mock-Admin)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mock_server.http.cross_origin import (
    ADMIN_BODY_TYPES,
    foreign_origin,
    foreign_page,
    from_a_browser,
    lacks_admin_header,
)
from mock_server.spec.openapi import Specs, load_specs
from tests.default_scenario import FULL_ACCOUNT, PARTIALLY_PAID_EVENT, PENDING_EVENT, PENDING_EVENT_PATH
from tests.helpers import WatchedTestClient, assert_error

# What a page on http://evil.test sends with fetch(..., {mode: "no-cors"}) or a form, as chromium writes it.
CROSS_SITE = {"Origin": "http://evil.test", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
SAME_SITE = {"Origin": "http://testserver:9000", "Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "no-cors"}
# GETs that read admin state, and the world a refused call must leave as it was.
WORLD = ("/__mock/state", "/__mock/snapshots", "/__mock/sessions", "/__mock/faults", "/__mock/schedules",
         "/__mock/clock", "/__mock/requests", "/__mock/coverage")  # fmt: skip
PATH_VALUES = {"extraordinary_event_conciliation_key": PENDING_EVENT, "account_id": FULL_ACCOUNT, "name": "snap"}


@pytest.fixture
def bare(app: Starlette) -> Iterator[WatchedTestClient]:
    """A client that adds no header of its own."""
    app.state.sessions.clear()
    with WatchedTestClient(app, raise_server_exceptions=True) as client:
        yield client


def world(client: WatchedTestClient) -> list[tuple[int, Any]]:
    """What the admin API shows of the server, but what moves by itself: when each session was last used (reading it
    uses it) and a running clock's reading. Read unwatched: no error of these reads is checked, and the client's
    read of the state before each doubled the ~35 calls of a test."""
    with client.unwatched():
        answers = [client.get(path, headers={"X-Mock-Session": "default"}) for path in WORLD]
    seen = [(answer.status_code, answer.json()) for answer in answers]
    for _, body in seen:
        for session in body.get("sessions", []):
            session.pop("last_used", None)
        if body.get("frozen") is False:
            body.pop("now")
    return seen


def state_changing_calls(specs: Specs) -> list[tuple[str, str]]:
    """Every admin operation that changes state, as (method, concrete path)."""
    calls = []
    for op in specs.admin.operations.values():
        if op.method not in ("GET", "HEAD"):
            path = re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES[m.group(1)], op.path)
            calls.append((op.method, path))
    return calls


CALLS = state_changing_calls(load_specs())


# --- rule 2: a call that changes state carries what no simple request can ----------------------------------------


# What an old browser sends with a page's form or no-cors fetch: no Origin, no Sec-Fetch-*, but its User-Agent.
OLD_BROWSER = {"User-Agent": "Mozilla/5.0 (Windows NT 6.1; rv:60.0) Gecko/20100101 Firefox/60.0"}


@pytest.mark.parametrize(("method", "path"), CALLS, ids=[f"{m} {p}" for m, p in CALLS])
def test_a_browsers_bodyless_call_that_changes_state_needs_the_admin_header(
    bare: WatchedTestClient, method: str, path: str
) -> None:
    before = world(bare)
    body = assert_error(bare.request(method, path, headers=OLD_BROWSER), 403, "admin_header_required")
    assert "X-Mock-Admin: 1" in body["message"]
    assert world(bare) == before


@pytest.mark.parametrize(
    "marks",
    [
        OLD_BROWSER,
        {"User-Agent": "Opera/9.80 (Windows NT 6.1) Presto/2.12.388 Version/12.18"},
        {"Origin": "http://testserver"},  # this very origin: rule 1 lets it through, rule 2 still holds
        {"Referer": "http://evil.test/page.html"},
        {"Sec-Fetch-Mode": "no-cors"},
        {"Sec-Fetch-Dest": "empty"},
        {"Sec-Fetch-Site": "same-origin"},
    ],
    ids=["old Firefox", "old Opera", "Origin", "Referer", "Sec-Fetch-Mode", "Sec-Fetch-Dest", "Sec-Fetch-Site"],
)
def test_each_mark_of_a_browser_alone_holds_the_call_to_the_rule(
    bare: WatchedTestClient, marks: dict[str, str]
) -> None:
    before = world(bare)
    assert_error(
        bare.post("/__mock/reset", headers={"User-Agent": "curl/8.5.0", **marks}), 403, "admin_header_required"
    )
    assert world(bare) == before


@pytest.mark.parametrize(
    "agent", ["curl/8.5.0", "python-httpx/0.28.1", "python-requests/2.32.3", "Java-http-client/17.0.13", None]
)
def test_a_program_resets_and_pays_without_the_header_as_the_contract_says(
    bare: WatchedTestClient, agent: str | None
) -> None:
    """CONTRACT.md: POST /__mock/reset takes an optional body. A program sends none of a browser's marks: it could send
    X-Mock-Admin as easily as anything, so the rule asks nothing of it."""
    headers = {} if agent is None else {"User-Agent": agent}
    if agent is None:
        bare.headers.pop("user-agent", None)
    assert bare.post("/__mock/reset", headers=headers).status_code == 200
    paid = bare.post(f"/__mock/events/{PENDING_EVENT}/pay", headers=headers)
    assert paid.status_code == 200, paid.text
    assert bare.get(PENDING_EVENT_PATH).json()["status"] == "paid"


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_body_a_form_can_send_does_not_count(bare: WatchedTestClient, content_type: str) -> None:
    before = world(bare)
    for path in ("/__mock/reset", f"/__mock/events/{PENDING_EVENT}/pay"):
        response = bare.post(path, content=b'{"amount": 1}', headers={"Content-Type": content_type, **OLD_BROWSER})
        assert_error(response, 403, "admin_header_required")
    assert world(bare) == before


@pytest.mark.parametrize(
    "headers",
    [{"X-Mock-Admin": "1"}, {"X-Mock-Admin": ""}, {"X-Mock-Session": "default"}, {"Content-Type": "application/json"}],
    ids=["X-Mock-Admin", "X-Mock-Admin empty", "X-Mock-Session", "a JSON Content-Type"],
)
def test_what_no_page_can_send_to_another_origin_lets_the_call_in(
    bare: WatchedTestClient, headers: dict[str, str]
) -> None:
    paid = bare.post(f"/__mock/events/{PENDING_EVENT}/pay", headers=headers)
    assert paid.status_code == 200, paid.text
    assert bare.get(PENDING_EVENT_PATH).json()["status"] == "paid"


@pytest.mark.parametrize(
    "content_type",
    ["text/ping", "application/csp-report", "application/reports+json", "application/x-unknown", "image/png"],
)
def test_only_a_body_of_a_type_the_operation_takes_counts(bare: WatchedTestClient, content_type: str) -> None:
    """Issue 33: `<a ping>` sends text/ping and a CSP report application/csp-report, with no preflight; the fallback
    once took any type but the form's, and such a call canceled an event and took and restored a snapshot."""
    before = world(bare)
    headers = {"Content-Type": content_type, **OLD_BROWSER}
    for path in (f"/__mock/events/{PARTIALLY_PAID_EVENT}/cancel", "/__mock/snapshots/pinged"):
        assert_error(bare.post(path, content=b"PING", headers=headers), 403, "admin_header_required")
    bare.post("/__mock/snapshots/kept", headers={"X-Mock-Admin": "1"})
    restore = bare.post("/__mock/snapshots/kept/restore", content=b"PING", headers=headers)
    assert_error(restore, 403, "admin_header_required")
    bare.delete("/__mock/snapshots/kept", headers={"X-Mock-Admin": "1"})
    assert world(bare) == before


def test_the_bodies_that_count_are_the_ones_the_admin_spec_takes(specs: Specs) -> None:
    taken = {media_type.lower() for op in specs.admin.operations.values() for media_type in op.body_media_types}
    assert taken == ADMIN_BODY_TYPES
    assert not {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"} & taken


def test_a_body_counts_only_for_an_operation_that_takes_it(bare: WatchedTestClient) -> None:
    """YAML stands in for the header where a state document is loaded, not on a bodyless cancel."""
    yaml = {"Content-Type": "application/yaml", **OLD_BROWSER}
    assert_error(bare.post(f"/__mock/events/{PENDING_EVENT}/cancel", headers=yaml), 403, "admin_header_required")
    document = bare.get("/__mock/state", params={"format": "yaml"}).text
    assert bare.put("/__mock/state", content=document.encode(), headers=yaml).status_code == 200


def test_a_json_body_is_enough(bare: WatchedTestClient) -> None:
    assert bare.post("/__mock/reset", json={}).status_code == 200
    assert bare.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent"}).status_code == 201


def test_a_yaml_state_document_is_enough(bare: WatchedTestClient) -> None:
    document = bare.get("/__mock/state", params={"format": "yaml"}).text
    loaded = bare.put("/__mock/state", content=document.encode(), headers={"Content-Type": "application/yaml"})
    assert loaded.status_code == 200, loaded.text


def test_the_admin_token_is_enough(make_client: Any) -> None:
    with make_client(admin_token="s3cret") as guarded:
        guarded.headers.pop("X-Mock-Admin")
        cancel = f"/__mock/events/{PENDING_EVENT}/cancel"
        assert_error(guarded.post(cancel, headers=OLD_BROWSER), 401, "unauthorized")  # the token is asked for first
        assert guarded.post(cancel, headers={"Authorization": "Bearer s3cret", **OLD_BROWSER}).status_code == 200


def test_a_session_in_the_url_needs_the_header_too(app: Starlette, bare: WatchedTestClient) -> None:
    before = world(bare)
    with TestClient(app) as plain:  # not watched: reading the state first would make the session
        refused = plain.post("/__session/job-1/__mock/reset", headers=OLD_BROWSER)
        assert_error(refused, 403, "admin_header_required")
        assert world(bare) == before  # no session job-1 was made
        allowed = plain.post("/__session/job-1/__mock/reset", headers={"X-Mock-Admin": "1", **OLD_BROWSER})
        assert allowed.status_code == 200


def test_reads_need_no_header(bare: WatchedTestClient) -> None:
    for path in WORLD:
        assert bare.get(path).status_code == 200, path


def test_the_public_api_needs_no_header(bare: WatchedTestClient) -> None:
    assert bare.get(PENDING_EVENT_PATH).status_code == 200
    removal = "/limits/account/0001-123456/recipient_list/recipient/5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f"
    assert bare.delete(removal).status_code == 204


# --- rule 1: a browser's request for a page on another origin ----------------------------------------------------


@pytest.mark.parametrize("page", [CROSS_SITE, SAME_SITE], ids=["cross-site", "same-site (another port)"])
def test_a_page_on_another_origin_cannot_change_state_even_with_the_header(
    bare: WatchedTestClient, page: dict[str, str]
) -> None:
    before = world(bare)
    for method, path in CALLS:
        response = bare.request(method, path, headers={**page, "X-Mock-Admin": "1"})
        assert_error(response, 403, "cross_origin_request")
    assert world(bare) == before


@pytest.mark.parametrize("path", WORLD)
def test_a_page_on_another_origin_cannot_read_admin_state(bare: WatchedTestClient, path: str) -> None:
    body = assert_error(bare.get(path, headers=CROSS_SITE), 403, "cross_origin_request")
    assert "Sec-Fetch-Site: cross-site" in body["message"]


@pytest.mark.parametrize("origin", ["http://evil.test", "null", "http://testserver.evil.test", "http://testserver:81"])
def test_an_origin_that_is_not_the_host_is_refused_where_sec_fetch_site_is_missing(
    bare: WatchedTestClient, origin: str
) -> None:
    response = bare.post("/__mock/reset", json={}, headers={"Origin": origin})
    assert_error(response, 403, "cross_origin_request")


def test_the_servers_own_pages_get_through(bare: WatchedTestClient) -> None:
    """What the dashboard's fetch sends from http://testserver/__mock/ui."""
    own = {
        "Origin": "http://testserver",
        "Sec-Fetch-Site": "same-origin",
        "Sec-Fetch-Mode": "cors",
        "X-Mock-Admin": "1",
    }
    assert bare.post(f"/__mock/events/{PENDING_EVENT}/cancel", headers=own).status_code == 200
    assert bare.post("/__mock/reset", headers={"Origin": "http://testserver", "X-Mock-Admin": "1"}).status_code == 200
    assert bare.get("/__mock/state", headers={"Sec-Fetch-Site": "none"}).status_code == 200  # an address typed


def test_a_link_from_another_site_still_opens_a_page(bare: WatchedTestClient) -> None:
    navigation = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    for path in ("/__mock/ui", "/__mock/docs", "/__mock/health"):
        assert bare.get(path, headers=navigation).status_code == 200, path


def test_another_site_cannot_frame_a_page(bare: WatchedTestClient) -> None:
    framed = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
    assert_error(bare.get("/__mock/ui", headers=framed), 403, "cross_origin_request")
    posted = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    assert_error(bare.post("/__mock/reset", headers=posted), 403, "cross_origin_request")  # a form's navigation


def test_no_answer_carries_a_cors_permission(bare: WatchedTestClient) -> None:
    preflight = bare.options(
        "/__mock/reset", headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "POST"}
    )
    assert preflight.status_code == 405
    for response in (preflight, bare.get("/__mock/state"), bare.get(PENDING_EVENT_PATH, headers=CROSS_SITE)):
        assert not [name for name in response.headers if name.lower().startswith("access-control-")]


# --- the public API: rule 1, navigations included -----------------------------------------------------------------

# What chromium sends for `<img src="http://127.0.0.1:8000/event_conciliation/...">` on a page of http://localhost:5173.
IMAGE = {
    "Sec-Fetch-Site": "cross-site",
    "Sec-Fetch-Mode": "no-cors",
    "Sec-Fetch-Dest": "image",
    "Referer": "http://localhost:5173/",
    "Accept": "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
    "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Safari/537.36",
}
PUBLIC_CALLS = [
    ("GET", PENDING_EVENT_PATH, None),
    ("POST", "/limits/account", {"account_id": "page-1", "registration_date": "2026-11-21T09:00:00-03:00",
                                 "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}}}),
    ("POST", f"/limits/account/{FULL_ACCOUNT}/limit_update_request", {"pix": {"withdraw": [
        {"start_time": "06:00:00-03:00", "amount": 1}]}}),
    ("POST", "/limits/account/0001-123456/recipient_list/recipient", {"document_number": "529.982.247-25"}),
    ("DELETE", "/limits/account/0001-123456/recipient_list/recipient/5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f", None),
]  # fmt: skip


def public_world(client: WatchedTestClient, session: str) -> dict[str, Any]:
    """What a public call could change in `session`, read by a program: whether it exists, its journal, schedules,
    state."""
    headers = {"X-Mock-Session": session}
    with client.unwatched():  # as world(): reads whose errors no test checks
        names = [s["name"] for s in client.get("/__mock/sessions").json()["sessions"]]
        if session not in names:
            return {"exists": False}
        return {
            "exists": True,
            "requests": client.get("/__mock/requests", headers=headers).json(),
            "schedules": client.get("/__mock/schedules", headers=headers).json(),
            "state": client.get("/__mock/state", headers=headers).json(),
        }


def test_lookups_from_a_page_on_another_site_neither_fire_a_schedule_nor_land_in_the_journal(
    bare: WatchedTestClient,
) -> None:
    """Issue 33, as chromium did it: three `<img>` lookups from http://localhost:OTHER paid a test's `after_lookups`
    schedule and wrote three entries into its journal (so `verify` and the Pact saw them)."""
    job = {"X-Mock-Session": "job-7", "X-Mock-Admin": "1"}
    assert bare.post("/__mock/reset", headers=job).status_code == 200
    schedule = {"action": "pay", "after_lookups": 3}
    assert bare.post(f"/__mock/events/{PENDING_EVENT}/schedule", json=schedule, headers=job).status_code == 201
    before = public_world(bare, "job-7")
    for _ in range(3):
        refused = bare.get(f"/__session/job-7{PENDING_EVENT_PATH}", headers=IMAGE)
        body = assert_error(refused, 403, "cross_origin_request")
        assert "Sec-Fetch-Site: cross-site" in body["message"]
    assert public_world(bare, "job-7") == before
    assert before["requests"] == {"requests": []}
    # the test's own lookups, from a program, count as before: the third pays the event
    statuses = [bare.get(PENDING_EVENT_PATH, headers=job).json()["status"] for _ in range(3)]
    assert statuses == ["pending_conciliation", "pending_conciliation", "paid"]


@pytest.mark.parametrize(("method", "path", "body"), PUBLIC_CALLS, ids=[f"{m} {p}" for m, p, _ in PUBLIC_CALLS])
@pytest.mark.parametrize(
    "page",
    [
        CROSS_SITE,
        SAME_SITE,
        IMAGE,
        {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},  # a link
        {"Origin": "http://evil.test"},  # a browser that sends no Sec-Fetch-Site
        {"Origin": "null"},
    ],
    ids=["cross-site", "same-site", "image", "navigation", "Origin", "Origin null"],
)
def test_no_public_call_from_a_page_on_another_origin_acts(
    app: Starlette, bare: WatchedTestClient, method: str, path: str, body: Any, page: dict[str, str]
) -> None:
    before = public_world(bare, "page-target")
    with TestClient(app) as plain:  # not watched: reading the state first would make the session
        response = plain.request(method, f"/__session/page-target{path}", json=body, headers=page)
    assert_error(response, 403, "cross_origin_request")
    assert public_world(bare, "page-target") == before == {"exists": False}  # not even the session was made


@pytest.mark.parametrize(
    "own",
    [
        {},  # a program: curl, httpx, a server's client
        {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64)"},  # a script that borrows a browser's User-Agent
        {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors", "Origin": "http://testserver"},  # /__mock/docs
        {"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"},  # an address typed
        {"Origin": "http://testserver"},  # an older browser on the server's own page
    ],
    ids=["program", "browser User-Agent", "the docs page", "address typed", "own Origin"],
)
def test_programs_and_the_servers_own_pages_call_the_public_api(bare: WatchedTestClient, own: dict[str, str]) -> None:
    session = {"X-Mock-Session": "own", "X-Mock-Admin": "1"}
    bare.post("/__mock/reset", headers=session)
    assert bare.get(f"/__session/own{PENDING_EVENT_PATH}", headers=own).status_code == 200
    method, path, body = PUBLIC_CALLS[1]
    assert bare.request(method, f"/__session/own{path}", json=body, headers=own).status_code == 201
    journal = bare.get("/__mock/requests", headers=session).json()["requests"]
    assert [entry["status"] for entry in journal] == [200, 201]


def test_the_refusal_comes_before_the_body_is_judged(bare: WatchedTestClient) -> None:
    """A form's text/plain body from another site: refused as the page's, not judged (a 415 would say it was)."""
    response = bare.post("/limits/account", content=b"{}", headers={**CROSS_SITE, "Content-Type": "text/plain"})
    assert_error(response, 403, "cross_origin_request")


# --- the pure rules -----------------------------------------------------------------------------------------------


def test_the_public_rule_reads_the_raw_headers() -> None:
    assert foreign_page([]) is None
    assert foreign_page([(b"user-agent", b"curl/8.5.0"), (b"host", b"127.0.0.1:8000")]) is None
    assert foreign_page([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")]) is None
    assert foreign_page([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://localhost:8000")]) is not None
    assert foreign_page([(b"sec-fetch-site", b"Same-Origin"), (b"origin", b"http://elsewhere")]) is None
    assert foreign_page([(b"sec-fetch-site", b"none")]) is None
    navigation = [(b"sec-fetch-site", b"cross-site"), (b"sec-fetch-mode", b"navigate")]
    assert foreign_page(navigation) is not None  # unlike an admin page: a lookup acts in the session it names
    # the first of a repeated header, as everywhere else
    assert foreign_page([(b"sec-fetch-site", b"same-origin"), (b"sec-fetch-site", b"cross-site")]) is None


def test_programs_are_never_refused_by_rule_1() -> None:
    assert foreign_origin("POST", {}) is None
    assert foreign_origin("POST", {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"}) is None
    assert foreign_origin("POST", {"host": "LOCALHOST:8000", "origin": "http://localhost:8000"}) is None


def test_sec_fetch_site_wins_over_origin() -> None:
    own_origin = {"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"}
    assert foreign_origin("POST", {**own_origin, "sec-fetch-site": "cross-site"}) is not None
    assert foreign_origin("POST", {"host": "a", "origin": "http://b", "sec-fetch-site": "same-origin"}) is None


def test_rule_2_reads_the_content_type_as_the_fetch_standard_does() -> None:
    browser = {"user-agent": OLD_BROWSER["User-Agent"]}
    assert lacks_admin_header("POST", {**browser, "content-type": "TEXT/PLAIN ; charset=utf-8"}, False) is not None
    assert lacks_admin_header("POST", {**browser, "content-type": "application/json; charset=utf-8"}, False) is None
    assert lacks_admin_header("POST", {**browser, "content-type": "application/csp-report"}, False) is not None
    assert lacks_admin_header("POST", {**browser, "content-type": "text/ping"}, False) is not None
    assert lacks_admin_header("POST", {**browser, "content-type": "APPLICATION/YAML"}, False) is None
    assert lacks_admin_header("POST", {**browser, "content-type": "application/yaml"}, False, {"application/json"})
    assert lacks_admin_header("GET", browser, False) is None
    assert lacks_admin_header("DELETE", browser, True) is None  # the admin token was checked
    assert lacks_admin_header("POST", {"content-type": "text/plain"}, False) is None  # no browser's mark: a program


@pytest.mark.parametrize(
    ("headers", "browser"),
    [
        ({}, False),
        ({"user-agent": "curl/8.5.0"}, False),
        ({"user-agent": "  MOZILLA/5.0 (X11)"}, True),
        ({"user-agent": "python-httpx/0.28.1", "referer": "http://a/"}, True),
        ({"origin": "null"}, True),
        ({"sec-fetch-dest": "document"}, True),
    ],
)
def test_a_browser_is_known_by_its_marks(headers: dict[str, str], browser: bool) -> None:
    assert from_a_browser(headers) is browser
