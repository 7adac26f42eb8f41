"""`make attack`: issue 24's attacks (and issue 33's cross-origin ones) replayed against one real `mock-server` on
loopback, each bounded in time, so the next adversarial round starts from a green list. One test per attack, named
by the issue's item; each asserts the attack failed, that the refusal is the contract's JSON body, and that the
state it aimed at is as it was.

Only HTTP here, as an attacker has it: no import of the server's modules. What a browser adds to a page's request
is written out as chromium sends it; tests/browser/test_cross_origin.py runs the same attacks in chromium itself.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import LiveServer, live_server, read_response

pytestmark = pytest.mark.e2e

TIMEOUT = 10.0  # seconds any one exchange may take: a hang is a failure, never a wait
PENDING = PENDING_EVENT
PARTIALLY_PAID = "2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"
CLOCK = "2026-11-21T10:00:00-03:00"
# What chromium adds to a page's fetch(url, {method: "POST", mode: "no-cors"}) from http://evil.test, and to a form's
# submit: no header the page could choose, and no Content-Type but the three a form can send.
NO_CORS = {"Origin": "http://evil.test", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}
FORM = {**NO_CORS, "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
ERROR_KEYS = {"code", "message", "details"}


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server("--seed", "1") as running:
        yield running


@pytest.fixture
def http(server: LiveServer) -> Iterator[httpx.Client]:
    """A program's client (no browser headers), on a session reset before the test."""
    with httpx.Client(base_url=server.url, timeout=TIMEOUT, headers={"X-Mock-Admin": "1"}) as client:
        assert client.post("/__mock/reset", json={}).status_code == 200
        client.delete("/__mock/snapshots/attack")
        yield client


@pytest.fixture
def page(server: LiveServer) -> Iterator[httpx.Client]:
    """What a web page on another origin gets the browser to send: nothing but what a simple request carries."""
    with httpx.Client(base_url=server.url, timeout=TIMEOUT) as client:
        client.headers.clear()
        client.headers.update({"Accept": "*/*", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome"})
        yield client


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The contract's error: the status, application/json, {code, message[, details]} and this code."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json", response.headers
    body: dict[str, Any] = response.json()
    assert set(body) <= ERROR_KEYS and body["code"] == code and body["message"], body
    assert not [name for name in response.headers if name.lower().startswith("access-control-")]
    return body


def raw(server: LiveServer, request: bytes) -> tuple[int, dict[str, str], Any]:
    """One raw request on its own connection: status, headers and JSON body of the answer."""
    with server.connect(timeout=TIMEOUT) as sock:
        sock.sendall(request)
        status, headers, body = read_response(sock, timeout=TIMEOUT)
    return status, headers, json.loads(body) if body else None


def event_status(http: httpx.Client, key: str) -> str:
    status: str = http.get(f"/event_conciliation/extraordinary_event/{key}").json()["status"]
    return status


# --- item 1: a page on another origin drives the admin API (no token set, the default) --------------------------


def test_item_1_a_bodyless_no_cors_post_pays_nothing(http: httpx.Client, page: httpx.Client) -> None:
    for headers in (NO_CORS, {}):  # a current browser, and one that sends neither Origin nor Sec-Fetch-*
        answer = page.post(f"/__mock/events/{PENDING}/pay", headers=headers)
        refused(answer, 403, "cross_origin_request" if headers else "admin_header_required")
    assert event_status(http, PENDING) == "pending_conciliation"


def test_item_1_a_bodyless_no_cors_post_cancels_nothing(http: httpx.Client, page: httpx.Client) -> None:
    for headers in (NO_CORS, {}):
        answer = page.post(f"/__mock/events/{PARTIALLY_PAID}/cancel", headers=headers)
        refused(answer, 403, "cross_origin_request" if headers else "admin_header_required")
    assert event_status(http, PARTIALLY_PAID) == "pending_conciliation"


def test_item_1_a_no_cors_reset_resets_nothing(http: httpx.Client, page: httpx.Client) -> None:
    armed = http.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503, "times": None})
    assert armed.status_code == 201
    for headers in (NO_CORS, {}):
        refused(
            page.post("/__mock/reset", headers=headers),
            403,
            "cross_origin_request" if headers else "admin_header_required",
        )
    assert len(http.get("/__mock/faults").json()["faults"]) == 1  # a reset would have cleared it


def test_item_1_a_no_cors_post_takes_no_snapshot(http: httpx.Client, page: httpx.Client) -> None:
    for headers in (NO_CORS, {}):
        refused(
            page.post("/__mock/snapshots/attack", headers=headers),
            403,
            "cross_origin_request" if headers else "admin_header_required",
        )
    assert http.get("/__mock/snapshots").json()["snapshots"] == []


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/x-www-form-urlencoded", b"amount=1"),
        ("multipart/form-data; boundary=x", b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--\r\n'),
        ("text/plain", b'{"operation_id": "getExtraordinaryEvent", "status": 503, "x": "="}'),  # enctype=text/plain
    ],
    ids=["urlencoded form", "multipart form", "text/plain form carrying JSON"],
)
def test_item_1_a_form_post_changes_nothing(
    http: httpx.Client, page: httpx.Client, content_type: str, body: bytes
) -> None:
    for headers in (FORM, {}):
        for path in (f"/__mock/events/{PENDING}/pay", "/__mock/faults", "/__mock/reset"):
            answer = page.post(path, content=body, headers={**headers, "Content-Type": content_type})
            refused(answer, 403, "cross_origin_request" if headers else "admin_header_required")
    assert event_status(http, PENDING) == "pending_conciliation"
    assert http.get("/__mock/faults").json()["faults"] == []


def test_item_1_a_page_on_another_origin_reads_no_admin_state(page: httpx.Client) -> None:
    cors_fetch = {"Origin": "http://evil.test", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors"}
    for path in ("/__mock/state", "/__mock/requests", "/__mock/sessions", "/__mock/openapi.yaml"):
        refused(page.get(path, headers=cors_fetch), 403, "cross_origin_request")


@pytest.mark.own_protocol  # the Host rule is the protocol's
def test_item_1_a_rebinding_host_reads_nothing(server: LiveServer) -> None:
    for path in ("/__mock/state", "/__mock/requests", "/openapi.yaml", "/__mock/openapi.yaml", "/openapi.json"):
        request = f"GET {path} HTTP/1.1\r\nHost: evil.test:{server.port}\r\n\r\n".encode()
        status, headers, body = raw(server, request)
        assert (status, headers["content-type"], body["code"]) == (403, "application/json", "host_not_allowed"), body


@pytest.mark.own_protocol  # the Host rule is the protocol's
def test_item_1_a_rebinding_host_changes_nothing(http: httpx.Client, server: LiveServer) -> None:
    request = (
        f"POST /__mock/events/{PENDING}/pay HTTP/1.1\r\nHost: evil.test:{server.port}\r\nX-Mock-Admin: 1\r\n"
        "Content-Length: 0\r\n\r\n"
    ).encode()
    status, _, body = raw(server, request)
    assert (status, body["code"]) == (403, "host_not_allowed")
    assert event_status(http, PENDING) == "pending_conciliation"


def test_item_1_no_cors_permission_is_given(page: httpx.Client) -> None:
    preflight = page.options(
        "/__mock/reset", headers={"Origin": "http://evil.test", "Access-Control-Request-Method": "POST"}
    )
    assert not [name for name in preflight.headers if name.lower().startswith("access-control-")]
    assert preflight.status_code >= 400


def test_item_1_a_program_still_drives_it(http: httpx.Client) -> None:
    assert http.post(f"/__mock/events/{PENDING}/pay").status_code == 200  # X-Mock-Admin: 1
    assert http.post("/__mock/reset", json={}, headers={"X-Mock-Admin": ""}).status_code == 200  # a JSON body


# --- items 5, 6 and 9: names and counts --------------------------------------------------------------------------


@pytest.mark.parametrize("step", [".", ".."])
def test_item_5_a_dot_session_never_reaches_the_default_one(http: httpx.Client, server: LiveServer, step: str) -> None:
    body = json.dumps({"now": CLOCK}).encode()
    request = (
        f"PUT /__session/{step}/__mock/clock HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    status, _, answer = raw(server, request)
    assert (status, answer["code"]) == (400, "invalid_request"), answer
    refused(http.put("/__mock/clock", json={"now": CLOCK}, headers={"X-Mock-Session": step}), 400, "invalid_request")
    refused(http.post("/__mock/sessions", json={"name": step}), 400, "invalid_request")
    assert http.get("/__mock/clock").json()["frozen"] is False


def test_item_6_fault_times_past_2_53_is_refused(http: httpx.Client) -> None:
    fault = {"operation_id": "getExtraordinaryEvent", "status": 503, "times": 2**70}
    refused(http.post("/__mock/faults", json=fault), 400, "invalid_request")
    assert http.get("/__mock/faults").json()["faults"] == []


@pytest.mark.parametrize(
    "name", ["a%0Ab", "%3Cb%3E", "x" * 5000, "%FF", "%FE"], ids=["newline", "<b>", "5,000 characters", "%FF", "%FE"]
)
def test_item_9_a_snapshot_name_outside_the_session_name_rule_is_refused(http: httpx.Client, name: str) -> None:
    refused(http.post(f"/__mock/snapshots/{name}"), 400, "invalid_request")
    assert http.get("/__mock/snapshots").json()["snapshots"] == []


# --- item 8: HTTP hygiene ------------------------------------------------------------------------------------------


@pytest.mark.own_protocol  # the Host rule is the protocol's
@pytest.mark.parametrize(
    "head",
    ["Host: 127.0.0.1\r\nHost: 127.0.0.1\r\n", "Host: 127.0.0.1\r\nHost: evil.test\r\n", ""],
    ids=["two Hosts", "two different Hosts", "no Host"],
)
def test_item_8_http_1_1_needs_exactly_one_host(server: LiveServer, head: str) -> None:
    status, headers, body = raw(server, f"GET /__mock/health HTTP/1.1\r\n{head}\r\n".encode())
    assert (status, headers["content-type"], body["code"]) == (400, "application/json", "malformed_http"), body


@pytest.mark.own_protocol  # the upgrade refusal is the protocol's
def test_item_8_a_websocket_upgrade_gets_the_contracts_body(server: LiveServer) -> None:
    request = (
        b"GET /__mock/state HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Origin: http://evil.test\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    status, headers, body = raw(server, request)
    assert status == 400 and headers["content-type"] == "application/json", (status, headers)
    assert set(body) <= ERROR_KEYS and body["code"] == "invalid_request", body


def test_item_8_the_server_still_serves_after_every_attack(http: httpx.Client, server: LiveServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=TIMEOUT):
        pass
    assert http.get("/__mock/health").json()["status"] == "ok"


# --- issue 33 -------------------------------------------------------------------------------------------------------

# What chromium sends for <img src="http://127.0.0.1:PORT/event_conciliation/..."> on a page of http://localhost:OTHER.
IMAGE = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image",
         "Referer": "http://localhost:5173/", "Accept": "image/avif,image/webp,image/*,*/*;q=0.8"}  # fmt: skip


def test_issue_33_image_lookups_from_another_site_neither_pay_a_schedule_nor_are_journaled(
    http: httpx.Client, page: httpx.Client
) -> None:
    job = {"X-Mock-Session": "attack-33"}
    assert http.post("/__mock/reset", headers=job).status_code == 200
    scheduled = http.post(f"/__mock/events/{PENDING}/schedule", json={"action": "pay", "after_lookups": 3}, headers=job)
    assert scheduled.status_code == 201
    for _ in range(3):
        refused(page.get(f"/__session/attack-33/event_conciliation/extraordinary_event/{PENDING}", headers=IMAGE), 403,
                "cross_origin_request")  # fmt: skip
    assert http.get("/__mock/requests", headers=job).json() == {"requests": []}
    assert http.get("/__mock/schedules", headers=job).json()["schedules"][0]["lookups"] == 0
    assert http.get(f"/event_conciliation/extraordinary_event/{PENDING}", headers=job).json()["status"] == (
        "pending_conciliation"
    )


@pytest.mark.parametrize("content_type", ["text/ping", "application/csp-report"])
def test_issue_33_a_ping_or_a_csp_report_neither_cancels_nor_snapshots(
    http: httpx.Client, page: httpx.Client, content_type: str
) -> None:
    """What `<a ping>` and a CSP report send without a preflight, from a browser that sends no Origin."""
    headers = {"Content-Type": content_type}
    refused(page.post(f"/__mock/events/{PARTIALLY_PAID}/cancel", content=b"PING", headers=headers), 403,
            "admin_header_required")  # fmt: skip
    refused(page.post("/__mock/snapshots/attack", content=b"PING", headers=headers), 403, "admin_header_required")
    assert event_status(http, PARTIALLY_PAID) == "pending_conciliation"
    assert http.get("/__mock/snapshots").json()["snapshots"] == []
