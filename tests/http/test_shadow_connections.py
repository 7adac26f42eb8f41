"""Shadow mode's connections to its backend (one httpx client per event loop, http/shadow.py), seen through HTTP: a
mock in shadow mode served for real in front of a backend on 127.0.0.1 that records each connection and each
request it gets."""

from __future__ import annotations

import asyncio
import http.client
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.http.shadow import request_target
from mock_server.pki import TestPki
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT
from tests.helpers import ADMIN_HEADERS
from tests.planted_defects import serve
from tests.provider.hostile import mock_over_mutual_tls

LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
ANSWER = b'{"from": "the backend"}'
SETTLE = 5.0  # seconds a test waits at most for the backend to see what the mock did


def answer(
    content: bytes = ANSWER, *extra: str, status: str = "200 OK", length: bool = True, chunked: bool = False
) -> bytes:
    """An HTTP/1.1 answer: its head (Content-Type JSON, the length unless not, `extra` header lines) and body."""
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", *extra]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
        content = b"%x\r\n%s\r\n0\r\n\r\n" % (len(content), content) if content else b"0\r\n\r\n"
    elif length:
        lines.append(f"Content-Length: {len(content)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + content


@dataclass
class Request:
    connection: int  # which connection brought it: 0, 1, ... in the order they were opened
    head: str  # the request line and headers


@dataclass
class Backend:
    """What the backend saw: each request, and which connections are closed."""

    url: str = ""
    requests: list[Request] = field(default_factory=list)
    opened: int = 0
    closed: set[int] = field(default_factory=set)

    def headers(self, index: int) -> dict[str, str]:
        lines = self.requests[index].head.split("\r\n")[1:]
        return {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines if line)}

    def target(self, index: int) -> str:
        return self.requests[index].head.split(" ")[1]

    def wait_closed(self, count: int) -> None:
        deadline = time.monotonic() + SETTLE
        while len(self.closed) < count and time.monotonic() < deadline:
            time.sleep(0.01)


Reply = Callable[[Request], tuple[bytes, bool]]  # a request -> the bytes answered, and whether to close then


@contextmanager
def backend(reply: Reply = lambda request: (answer(), False)) -> Iterator[Backend]:
    """A backend on 127.0.0.1 answering each request with `reply`, in a thread of its own, for one `with` block."""
    seen = Backend()
    started = threading.Event()
    control: dict[str, Any] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = seen.opened
        seen.opened += 1
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                length = next(
                    (
                        int(line.split(":")[1])
                        for line in head.lower().split("\r\n")
                        if line.startswith("content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                request = Request(number, head)
                seen.requests.append(request)
                data, close = reply(request)
                writer.write(data)
                await writer.drain()
                if close:
                    break
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
            seen.closed.add(number)

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        seen.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        control["stop"] = (asyncio.get_running_loop(), stop := asyncio.Event())
        started.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="backend", daemon=True)
    thread.start()
    assert started.wait(20), "the backend did not start"
    try:
        yield seen
    finally:
        loop, stop = control["stop"]
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=20)


@contextmanager
def mock_in_front(seen: Backend, specs: Specs, base: str | None = None, **settings: Any) -> Iterator[httpx.Client]:
    """The mock in shadow mode in front of `seen`, served for real (stopped when the block ends): a client of it.
    `settings`: more of the mock's settings (shadow_timeout is 5 s unless given)."""
    app = create_app(Settings(shadow=base or seen.url, **{"shadow_timeout": 5.0, **settings}), specs)
    with serve(app) as url, httpx.Client(base_url=url, headers=ADMIN_HEADERS, timeout=10) as client:
        yield client


def test_calls_through_shadow_mode_reach_the_backend_over_one_connection(specs: Specs) -> None:
    """A connection is opened once and kept: it was a client and a connection per call (the most of shadow mode's
    cost: bench/record_cost.py)."""
    with backend() as seen, mock_in_front(seen, specs) as client:
        for _ in range(3):
            response = client.get(LOOKUP)
            assert response.status_code == 200 and response.content == ANSWER
        response = client.post("/limits/account/shadow-0001/limit_update_request", json={"pix": {}})
        assert response.status_code == 200 and response.content == ANSWER
    assert [request.connection for request in seen.requests] == [0, 0, 0, 0]
    assert seen.opened == 1


def test_a_backend_that_closes_its_kept_connection_still_gets_the_next_call(specs: Specs) -> None:
    """The backend answers as if it kept the connection (HTTP/1.1, a length, no `Connection: close`), then closes
    it: the next call goes over a new one, not into the closed one."""
    with backend(lambda request: (answer(), True)) as seen, mock_in_front(seen, specs) as client:
        for expected in (1, 2, 3):
            response = client.get(LOOKUP)
            assert response.status_code == 200 and response.content == ANSWER
            seen.wait_closed(expected)
    assert [request.connection for request in seen.requests] == [0, 1, 2]


def closing_unanswered_at_the_second_call() -> Reply:
    """A backend that closes each connection, unanswered, when its second request comes: as a server closing an
    idle connection at the moment the next call goes out over it."""
    calls: dict[int, int] = {}

    def reply(request: Request) -> tuple[bytes, bool]:
        calls[request.connection] = calls.get(request.connection, 0) + 1
        return (b"", True) if calls[request.connection] == 2 else (answer(), False)

    return reply


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", LOOKUP), ("POST", "/limits/account/shadow-0001/limit_update_request")],
    ids=["lookup", "change"],
)
def test_a_call_the_backend_closed_its_kept_connection_on_is_a_502_never_sent_twice(
    specs: Specs, method: str, path: str
) -> None:
    """httpx sends no call twice, not even a lookup (httpcore: a RemoteProtocolError, no retry): the backend may
    have acted on what it did not answer. A connection the backend closed while it was idle is seen closed before
    it is used (the test above); only a close racing the call is a 502, and the kept connections' 1.5 s idle bound,
    under the servers' own, keeps that rare. The next call goes over a new connection."""
    with backend(closing_unanswered_at_the_second_call()) as seen, mock_in_front(seen, specs) as client:
        assert client.get(LOOKUP).status_code == 200
        refused = client.request(method, path, json={"pix": {}} if method == "POST" else None)
        after = client.get(LOOKUP)
    assert refused.status_code == 502
    assert refused.json()["message"].endswith(": the server closed the connection without answering.")
    assert after.status_code == 200 and after.content == ANSWER
    sent = [(request.connection, request.head.split(" ")[0]) for request in seen.requests]
    assert sent == [(0, "GET"), (0, method), (1, "GET")]


def test_a_connection_the_backend_says_it_closes_is_not_kept(specs: Specs) -> None:
    closing = answer(ANSWER, "Connection: close")
    with backend(lambda request: (closing, False)) as seen, mock_in_front(seen, specs) as client:
        assert [client.get(LOOKUP).status_code for _ in range(2)] == [200, 200]
        seen.wait_closed(2)
    assert [request.connection for request in seen.requests] == [0, 1]


def test_stopping_the_server_closes_its_connections_to_the_backend(specs: Specs) -> None:
    with backend() as seen:
        with mock_in_front(seen, specs) as client:
            assert client.get(LOOKUP).status_code == 200
            assert seen.closed == set()
        seen.wait_closed(1)  # the mock stopped with the block
        assert seen.closed == {0}


def test_a_test_clients_loop_per_request_gets_a_connection_each_closed_with_its_loop(specs: Specs) -> None:
    """Starlette's TestClient outside `with` runs each request in an event loop of its own: a connection opened in
    one loop is never used from another, and each is closed when its loop ends (no ResourceWarning)."""
    with backend() as seen:
        client = TestClient(create_app(Settings(shadow=seen.url), specs), headers=ADMIN_HEADERS)
        assert [client.get(LOOKUP).status_code for _ in range(2)] == [200, 200]
        seen.wait_closed(2)
    assert [request.connection for request in seen.requests] == [0, 1]
    assert seen.closed == {0, 1}


def test_a_cookie_the_backend_sets_is_never_sent_with_a_later_call(specs: Specs) -> None:
    """The connection is shared by every caller of the mock: what the backend set for one goes to no other."""
    setting = answer(ANSWER, "Set-Cookie: session=secret")
    with backend(lambda request: (setting, False)) as seen, mock_in_front(seen, specs) as client:
        assert client.get(LOOKUP).status_code == 200
        assert client.get(LOOKUP, headers={"Cookie": "mine=1"}).status_code == 200
        assert client.get(LOOKUP).status_code == 200
    assert "cookie" not in seen.headers(0)
    assert seen.headers(1)["cookie"] == "mine=1"  # a caller's own cookie is its request's, sent on as it is
    assert "cookie" not in seen.headers(2)


@pytest.mark.parametrize(
    "sent",
    [
        answer(chunked=True),
        answer(length=False),  # the body ends with the connection
        b"HTTP/1.1 100 Continue\r\n\r\n" + answer(),  # an interim answer first
    ],
    ids=["chunked", "until-close", "after-100-continue"],
)
def test_every_way_an_answer_may_end_is_read_whole(specs: Specs, sent: bytes) -> None:
    close = b"Content-Length" not in sent and b"chunked" not in sent
    with backend(lambda request: (sent, close)) as seen, mock_in_front(seen, specs) as client:
        for _ in range(2):
            response = client.get(LOOKUP)
            assert response.status_code == 200 and response.content == ANSWER


def test_the_backend_gets_the_path_escaped_as_sent_under_the_base_urls_path(specs: Specs) -> None:
    with backend() as seen, mock_in_front(seen, specs, base=f"{seen.url}/sandbox/v1") as client:
        assert client.get("/event_conciliation/extraordinary_event/a%20b%25%23c%3Fd?at=10%3A00").status_code == 200
    # decoded, the path is `a b%#c?d`: sent as it was, not cut at the `#` nor split at the `?`, nor a bare `%`
    assert seen.target(0) == "/sandbox/v1/event_conciliation/extraordinary_event/a%20b%25%23c%3Fd?at=10%3A00"
    assert seen.headers(0)["host"] == seen.url.removeprefix("http://")


@pytest.mark.parametrize(
    ("first", "settings", "reason"),
    [
        (answer(b"[" + b"0," * 1000 + b"0]"), {"shadow_max_body": 1024}, "its body is larger than --shadow-max-body"),
        (answer(ANSWER)[:-5], {"shadow_timeout": 0.5}, "no whole answer within --shadow-timeout 0.5 s"),
    ],
    ids=["over-the-body-bound", "past-the-deadline"],
)
def test_a_connection_left_in_the_middle_of_an_answer_is_closed_not_kept(
    specs: Specs, first: bytes, settings: dict[str, Any], reason: str
) -> None:
    """An answer given up on (too large, too slow) leaves the rest of it in its connection: the next call goes over
    a new one, never reading the rest of the last answer as its own."""
    with (
        backend(lambda request: (first if request.connection == 0 else answer(), False)) as seen,
        mock_in_front(seen, specs, **settings) as client,
    ):
        given_up = client.get(LOOKUP)
        after = client.get(LOOKUP)
        seen.wait_closed(1)
    assert given_up.status_code == 502 and reason in given_up.json()["message"]
    assert after.status_code == 200 and after.content == ANSWER
    assert [request.connection for request in seen.requests] == [0, 1]
    assert 0 in seen.closed


def test_a_header_the_client_gets_from_the_backend_is_trimmed(specs: Specs) -> None:
    """Spaces and tabs around a header's value are not part of it (RFC 9110 5.5): h11 drops them."""
    spaced = answer(ANSWER, "Cache-Control: \t no-store  \t", "Location:   /limits/account/x ")
    with backend(lambda request: (spaced, False)) as seen, mock_in_front(seen, specs) as client:
        response = client.get(LOOKUP)
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["location"] == "/limits/account/x"


def test_a_session_named_in_the_url_is_the_mocks_own_not_sent_on(specs: Specs) -> None:
    """/__session/{name} names one of the mock's sessions, as X-Mock-Session does: the backend gets the operation's
    path (it got /__session/ana/event_conciliation/...)."""
    with backend() as seen, mock_in_front(seen, specs) as client:
        assert client.get(f"/__session/ana{LOOKUP}?at=1").status_code == 200
        assert client.get(LOOKUP, headers={"X-Mock-Session": "ana"}).status_code == 200
    assert [seen.target(0), seen.target(1)] == [f"{LOOKUP}?at=1", LOOKUP]
    assert "x-mock-session" not in seen.headers(1)


def test_the_backend_gets_the_callers_headers_but_its_connections_own(specs: Specs) -> None:
    """What one connection's are (RFC 9110 7.6.1: hop-by-hop ones, and those its `Connection` names) and the mock's
    own stay with the mock; httpx adds `Accept` and `User-Agent` when the caller sent none."""
    sent = {"Connection": "keep-alive, X-Private", "X-Private": "1", "X-Mock-Session": "ana", "Cookie": "a=1"}
    with backend() as seen, mock_in_front(seen, specs) as client:
        bare = http.client.HTTPConnection(client.base_url.host, client.base_url.port, timeout=10)
        try:  # only these headers and Host: no Accept, no User-Agent
            bare.request("GET", LOOKUP, headers={**sent, "Accept-Encoding": "br", "TE": "trailers"})
            assert bare.getresponse().status == 200
        finally:
            bare.close()
        assert client.get(LOOKUP, headers={"Accept": "application/json", "User-Agent": "app/1"}).status_code == 200
    first, second = seen.headers(0), seen.headers(1)
    assert "x-private" not in first and "x-mock-session" not in first and "te" not in first
    assert first["cookie"] == "a=1" and first["connection"] == "keep-alive"
    assert first["accept-encoding"] == "gzip, deflate"  # the mock reads the answer before the caller does
    assert first["host"] == seen.url.removeprefix("http://")
    assert first["user-agent"].startswith("python-httpx/") and first["accept"] == "*/*"
    assert (second["accept"], second["user-agent"]) == ("application/json", "app/1")


def test_a_head_larger_than_its_bound_is_a_502_naming_it(specs: Specs) -> None:
    """httpcore's bound on what h11 holds unfinished (a head): an endless head costs at most that and a read
    (h11 checks it when a read leaves the head unfinished: httpcore reads 64 KiB at a time)."""
    from httpcore import AsyncHTTP11Connection

    assert AsyncHTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE == 100 * 1024  # as the message says
    huge = "X-Filler: " + "a" * 2 * AsyncHTTP11Connection.MAX_INCOMPLETE_EVENT_SIZE
    with backend(lambda request: (answer(ANSWER, huge), False)) as seen, mock_in_front(seen, specs) as client:
        response = client.get(LOOKUP)
    assert response.status_code == 502
    assert response.json()["message"].endswith(": its head (status line and headers) is larger than 100 KiB.")


def test_what_is_not_http_is_a_502_naming_it(specs: Specs) -> None:
    with backend(lambda request: (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", True)) as seen, mock_in_front(seen, specs) as client:
        response = client.get(LOOKUP)
    assert response.status_code == 502
    assert "it is not an HTTP/1.1 answer: illegal status line: " in response.json()["message"]


@pytest.mark.parametrize(
    ("path", "query", "sent"),
    [
        ("/limits/account/0001-123456", b"", "/limits/account/0001-123456"),
        ("/limits/account/a b", b"", "/limits/account/a%20b"),
        ("/limits/account/conta\u00e7\u00e3o", b"", "/limits/account/conta%C3%A7%C3%A3o"),
        ("/limits/account/50%", b"", "/limits/account/50%25"),
        ("/limits/account/%41", b"", "/limits/account/%2541"),  # sent as %2541: not the letter A
        ("/limits/account/a#b", b"", "/limits/account/a%23b"),
        ("/limits/account/x?y", b"", "/limits/account/x%3Fy"),
        ("/limits/account/x", b"when=2026-11-21T10%3A00&a=b", "/limits/account/x?when=2026-11-21T10%3A00&a=b"),
        ("/limits/account/x", b"a=b#c", "/limits/account/x?a=b%23c"),
    ],
)
def test_a_decoded_path_is_escaped_where_a_request_target_may_not_hold_it(path: str, query: bytes, sent: str) -> None:
    assert request_target(path, query) == sent


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        ("good", None),
        (None, "TLSV13_ALERT_CERTIFICATE_REQUIRED: the server requires a client certificate (--shadow-cert and "
               "--shadow-key)"),
        ("expired", "SSLV3_ALERT_CERTIFICATE_EXPIRED: the server refused the client certificate (--shadow-cert): "
                    "it has expired"),
        ("untrusted", "CERTIFICATE_VERIFY_FAILED: the server's certificate is not trusted: "),
    ],
)  # fmt: skip
def test_a_backend_over_mutual_tls_from_a_served_mock(
    specs: Specs, test_pki: TestPki, variant: str | None, reason: str | None
) -> None:
    """The same words from the mock served for real (its own event loop: uvloop where installed) as from a test
    client's: the TLS alerts arrive as the socket's own errors."""
    cert, key = test_pki.client("" if variant in ("good", "untrusted") else variant) if variant else (None, None)
    cacert = None if variant == "untrusted" else test_pki.ca
    with mock_over_mutual_tls(test_pki.server_cert, test_pki.server_key, test_pki.ca) as url:
        settings = Settings(shadow=url, shadow_cacert=cacert, shadow_cert=cert, shadow_key=key, shadow_timeout=5.0)
        with serve(create_app(settings, specs)) as mock, httpx.Client(base_url=mock, timeout=10) as client:
            answers = [client.get(LOOKUP) for _ in range(2)]
    if reason is None:
        assert [a.status_code for a in answers] == [200, 200]
        return
    assert [a.status_code for a in answers] == [502, 502]
    assert reason in answers[0].json()["message"]
