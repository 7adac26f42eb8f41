"""The Host rule (http/hosts.py, issue 24): a DNS-rebinding page's Host is 403 on every route, RFC 9112's one Host
per HTTP/1.1 request is a 400, and a WebSocket upgrade gets the contract's body. Pure rules first, then over a real
connection to an app of this process (tests/threaded_server.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from mock_server.app import create_app
from mock_server.domain.errors import HostNotAllowed, MalformedHttp
from mock_server.http.hosts import HostPolicy, allowed_host_entry, host_name
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT_PATH
from tests.helpers import error_problems
from tests.threaded_server import exchange, threaded_server

pytestmark = pytest.mark.own_protocol  # the Host rule, the upgrade refusals, the JSON 400 for broken HTTP

# --- the pure rules ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "host"),
    [
        ("localhost", "localhost"),
        ("LocalHost:8000", "localhost"),
        ("localhost.:80", "localhost"),
        ("127.0.0.1:18200", "127.0.0.1"),
        ("[::1]:8000", "[::1]"),
        ("[::1]", "[::1]"),
        ("mock.example.test", "mock.example.test"),
        ("a b", None),
        ("evil.test/path", None),
        ("x:y:z", None),
        ("::1", None),  # an IPv6 address needs its brackets
        ("[zz]", None),
        ("[::1]x", None),
        ("host:port", None),
        ("", None),
        ("user@host", None),
    ],
)
def test_host_name_reads_host_and_port(value: str, host: str | None) -> None:
    assert host_name(value) == host


@pytest.mark.parametrize(
    "host",
    ["localhost", "app.localhost", "127.0.0.1", "127.1.2.3", "[::1]", "10.0.0.7", "0.0.0.0", "[fe80::1]"],
)
def test_loopback_names_and_every_address_are_answered_by_default(host: str) -> None:
    assert HostPolicy().allows(host)


@pytest.mark.parametrize(
    "host", ["evil.test", "localhost.evil.test", "127.0.0.1.nip.io", "mock", "2130706433", "notlocalhost"]
)
def test_any_other_name_is_not(host: str) -> None:
    assert not HostPolicy().allows(host)


def test_the_bound_name_and_the_allowed_hosts_are_answered() -> None:
    policy = HostPolicy.build(["mock", ".example.com"], "mock.internal")
    for host in ("mock.internal", "mock", "example.com", "api.example.com", "a.b.example.com"):
        assert policy.allows(host), host
    for host in ("mock.internal.evil", "mockx", "badexample.com", "example.com.evil"):
        assert not policy.allows(host), host
    assert HostPolicy.build(["*"], None).allows("anything.at.all")


@pytest.mark.parametrize("entry", ["http://mock", "mock:8000", "", "a b", "*.example.com", "..x"])
def test_an_allowed_hosts_entry_that_is_no_name_is_refused_saying_what_is(entry: str) -> None:
    with pytest.raises(ValueError, match="is not a host name: give a name"):
        allowed_host_entry(entry)


def test_one_host_per_http_1_1_request() -> None:
    policy = HostPolicy()
    assert policy.refusal([b"127.0.0.1"], "1.1") is None
    assert policy.refusal([], "1.0") is None  # HTTP/1.0 needs none
    for hosts, version in (([b"127.0.0.1", b"127.0.0.1"], "1.1"), ([], "1.1"), ([b"a", b"b"], "1.0")):
        assert isinstance(policy.refusal(hosts, version), MalformedHttp), (hosts, version)
    assert isinstance(policy.refusal([b"bad host"], "1.1"), MalformedHttp)
    refusal = policy.refusal([b"evil.test:8000"], "1.1")
    assert isinstance(refusal, HostNotAllowed)
    assert "'evil.test'" in refusal.message and "--allowed-hosts" in refusal.message


# --- over a real connection -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(specs: Specs) -> Starlette:
    return create_app(Settings(), specs)


@pytest.fixture(scope="module")
def port(app: Starlette) -> Iterator[int]:
    with threaded_server(app) as serving:
        yield serving


Answer = tuple[int, dict[str, str], Any, bool]  # status, headers, JSON body, whether the connection was closed


@pytest.fixture
def send(port: int) -> Callable[[bytes], Answer]:
    """The one answer to a raw request on a new connection."""
    return lambda raw: _parse(*exchange(port, raw))


def _parse(received: bytes, closed: bool) -> Answer:
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    return int(lines[0].split(" ")[1]), headers, json.loads(body[:length]) if length else None, closed


def request(path: str, *headers: str, version: str = "1.1", method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/{version}\r\n".encode() + b"".join(f"{h}\r\n".encode() for h in headers) + b"\r\n"


def assert_refusal(answer: Answer, status: int, code: str) -> dict[str, Any]:
    got, headers, body, closed = answer
    assert (got, body["code"]) == (status, code), body
    assert headers["content-type"] == "application/json"
    assert error_problems(body) == [], body
    assert closed and headers["connection"] == "close"
    return dict(body)


@pytest.mark.parametrize("path", ["/__mock/state", "/__mock/requests", "/openapi.yaml", "/__mock/openapi.yaml"])
def test_a_rebinding_host_reads_nothing(path: str, send: Callable[[bytes], Answer]) -> None:
    body = assert_refusal(send(request(path, "Host: evil.test:8000")), 403, "host_not_allowed")
    assert "evil.test" in body["message"]


def test_a_rebinding_host_is_refused_on_the_public_api_and_for_writes_too(send: Callable[[bytes], Answer]) -> None:
    lookup = PENDING_EVENT_PATH
    assert_refusal(send(request(lookup, "Host: evil.test")), 403, "host_not_allowed")
    raw = request("/__mock/reset", "Host: evil.test", "X-Mock-Admin: 1", "Content-Length: 0", method="POST")
    assert_refusal(send(raw), 403, "host_not_allowed")


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:1", "[::1]:8000", "app.localhost", "10.0.0.7:80"])
def test_loopback_names_and_addresses_are_served(host: str, send: Callable[[bytes], Answer]) -> None:
    status, _, body, _ = send(request("/__mock/health", f"Host: {host}", "Connection: close"))
    assert (status, body["status"]) == (200, "ok")


def test_the_served_spec_names_only_a_host_the_server_answers_to(send: Callable[[bytes], Answer]) -> None:
    status, _, body, _ = send(request("/openapi.json", "Host: localhost:8000", "Connection: close"))
    assert (status, [server["url"] for server in body["servers"]]) == (200, ["http://localhost:8000"])


@pytest.mark.parametrize(
    "headers",
    [("Host: 127.0.0.1", "Host: 127.0.0.1"), ("Host: 127.0.0.1", "Host: evil.test"), ()],
    ids=["two Hosts", "two different Hosts", "no Host"],
)
def test_http_1_1_needs_exactly_one_host(headers: tuple[str, ...], send: Callable[[bytes], Answer]) -> None:
    assert_refusal(send(request("/__mock/health", *headers)), 400, "malformed_http")


def test_a_host_that_is_not_host_and_port_is_400(send: Callable[[bytes], Answer]) -> None:
    assert_refusal(send(request("/__mock/health", "Host: a b")), 400, "malformed_http")


def test_a_header_values_trailing_whitespace_is_no_part_of_it(send: Callable[[bytes], Answer]) -> None:
    """RFC 9110 section 5.5, on every uvicorn release the protocol knows (0.30 to 0.54 passed it on: a 400 here)."""
    status, _, body, _ = send(request(PENDING_EVENT_PATH, "Host: 127.0.0.1 ", "X-Mock-Session: default \t"))
    assert (status, body["status"]) == (200, "pending_conciliation"), body


def test_http_1_0_needs_no_host(send: Callable[[bytes], Answer]) -> None:
    status, _, body, _ = send(request("/__mock/health", version="1.0"))  # 1.0: closed after the answer
    assert (status, body["status"]) == (200, "ok")


def test_a_websocket_upgrade_gets_the_contracts_body(send: Callable[[bytes], Answer]) -> None:
    raw = request(
        "/__mock/state",
        "Host: 127.0.0.1",
        "Connection: Upgrade",
        "Upgrade: websocket",
        "Sec-WebSocket-Version: 13",
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    )
    body = assert_refusal(send(raw), 400, "invalid_request")
    assert body["details"] == [{"field": "Upgrade", "message": "websocket is not supported on any route"}]


def test_a_websocket_upgrade_without_its_key_gets_the_contracts_body_too(send: Callable[[bytes], Answer]) -> None:
    raw = request("/", "Host: 127.0.0.1", "Connection: Upgrade", "Upgrade: websocket")
    assert_refusal(send(raw), 400, "invalid_request")


def test_an_upgrade_the_server_ignores_is_answered_and_its_connection_closed(port: int) -> None:
    """HTTP/2's h2c upgrade (Java's HttpClient sends it on http:// URLs): answered as HTTP/1.1, as RFC 9110 7.8
    allows; the parser stops at an upgrade, so the connection closes rather than leave a next request unanswered."""
    h2c = request(
        "/__mock/health",
        "Host: 127.0.0.1",
        "Connection: Upgrade, HTTP2-Settings",
        "Upgrade: h2c",
        "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA",
    )
    received, closed = exchange(port, h2c + request("/__mock/health", "Host: 127.0.0.1"))
    assert received.startswith(b"HTTP/1.1 200 OK\r\n") and b"connection: close\r\n" in received
    assert received.count(b"HTTP/1.1") == 1 and closed


def test_a_refused_request_pipelined_behind_another_is_answered_in_turn(port: int) -> None:
    received, _ = exchange(
        port, request("/__mock/health", "Host: 127.0.0.1") + request("/__mock/health", "Host: evil.test")
    )
    first, _, second = received.partition(b"HTTP/1.1 403")
    assert first.startswith(b"HTTP/1.1 200 OK") and b'"host_not_allowed"' in second


def test_allowed_hosts_open_the_server_to_a_deployments_names(app: Starlette) -> None:
    with threaded_server(app, ["pix-mock", ".svc.cluster.local"]) as port:
        for host in ("pix-mock:8000", "mock-balancer.tests.svc.cluster.local"):
            status, _, body, _ = _parse(
                *exchange(port, request("/__mock/health", f"Host: {host}", "Connection: close"))
            )
            assert (status, body["status"]) == (200, "ok"), host
        status, _, body, _ = _parse(*exchange(port, request("/__mock/health", "Host: evil.test")))
        assert (status, body["code"]) == (403, "host_not_allowed")


def test_the_threat_model_page_shows_what_the_server_answers_a_rebinding_host(send: Callable[[bytes], Answer]) -> None:
    """docs/threat-model.md quotes the answer to `curl -s -H 'Host: evil.example:8000' .../__mock/state` in a text
    block (the page's console blocks are replayed in process, where no connection judges the Host)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "threat-model.md").read_text(encoding="utf-8")
    assert "curl -s -H 'Host:\nevil.example:8000' http://127.0.0.1:8000/__mock/state" in page
    shown = re.search(r"```text\n(?P<body>\{.*?\})\n```", page, re.DOTALL)
    assert shown is not None
    status, _, body, _ = send(request("/__mock/state", "Host: evil.example:8000"))
    assert status == 403
    assert json.loads(shown["body"]) == body


def test_a_host_once_answered_is_answered_again_without_reading_it_and_a_refused_one_is_never_remembered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from mock_server.http import hosts as hosts_module

    policy = HostPolicy()
    assert policy.refusal([b"127.0.0.1:8000"], "1.1") is None
    assert isinstance(policy.refusal([b"evil.example:8000"], "1.1"), HostNotAllowed)

    def unread(value: str) -> str | None:
        raise AssertionError(f"{value!r} read again")

    monkeypatch.setattr(hosts_module, "host_name", unread)
    assert policy.refusal([b"127.0.0.1:8000"], "1.1") is None  # remembered: not read again
    with pytest.raises(AssertionError):
        policy.refusal([b"evil.example:8000"], "1.1")  # never remembered: read (and refused) every time
    assert isinstance(policy.refusal([b"127.0.0.1:8000", b"127.0.0.1:8000"], "1.1"), MalformedHttp)  # two: 400


def test_the_hosts_remembered_are_bounded() -> None:
    from mock_server.http.hosts import MAX_ANSWERED

    policy = HostPolicy()
    for port in range(MAX_ANSWERED * 3):
        assert policy.refusal([b"127.0.0.1:%d" % port], "1.1") is None
    assert len(policy._answered) == MAX_ANSWERED
