"""What the connection counts and whom it trusts, over real sockets (tests/threaded_server.py):

- the head-size limit (`--max-header-bytes`, 64 KiB by default) counts a head's own bytes: many small pipelined
  requests in one write are each a small head, and one large head arriving in one read is over the limit;
- `--client-cert-header` is trusted from a loopback TCP peer, the socket's own: an X-Forwarded-For a proxy adds
  (uvicorn's proxy headers rewrite the scope's client from it) neither takes the certificate away nor forges the
  loopback.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.types import Scope

from mock_server.app import create_app
from mock_server.domain.errors import HeadersTooLarge
from mock_server.http.tls import PEER_EXTENSION, client_certificate
from mock_server.pki import TestPki
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.bounds import ConnectionLimits
from tests.default_scenario import PENDING_EVENT_PATH
from tests.threaded_server import SAFETY, threaded_server

LIMIT = ConnectionLimits().max_header_bytes
HEALTH = b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
EVENT = PENDING_EVENT_PATH
HEADER = "x-client-cert"


@pytest.fixture(scope="module")
def port(specs: Specs) -> Iterator[int]:
    with threaded_server(create_app(Settings(client_cert_header=HEADER), specs)) as serving:
        yield serving


def read_until(sock: socket.socket, done: bytes, count: int) -> bytes:
    """What the server sends until `done` occurs `count` times, or it closes or resets the connection."""
    received = b""
    while received.count(done) < count:
        try:
            chunk = sock.recv(1 << 20)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return received


def test_pipelined_requests_over_the_limit_together_are_each_answered(port: int) -> None:
    """The issue's 10,000 GETs in one write were answered once, then 431 and a reset: every read of the stream
    that ended in the middle of a head was counted whole as that head's."""
    count = 10_000  # 470 KB: seven times the limit, in one write
    with socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as sock:
        sock.sendall(HEALTH * count)
        received = read_until(sock, b'"status":"ok"', count)
    assert b" 431 " not in received
    assert received.count(b"HTTP/1.1 200 OK\r\n") == count


@pytest.mark.own_protocol  # the head-size limit is the protocol's
def test_a_head_over_the_limit_in_one_read_is_431(port: int) -> None:
    """The issue's 100,000-byte head arriving in one read passed: only reads after a head's first one counted."""
    padding = b"X-Padding: " + b"a" * 100_000 + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as sock:
        sock.sendall(HEALTH[:-2] + padding + b"\r\n")
        received = read_until(sock, b"}", 1)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 431 ")
    assert json.loads(body)["code"] == HeadersTooLarge.code


def test_a_head_just_under_the_limit_in_one_read_is_answered(port: int) -> None:
    padding = b"X-Padding: " + b"a" * (LIMIT - 200) + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as sock:
        sock.sendall(HEALTH[:-2] + padding + b"\r\n" + HEALTH)  # and one more request behind it, small
        received = read_until(sock, b'"status":"ok"', 2)
    assert received.count(b"HTTP/1.1 200 OK\r\n") == 2


def journaled_certificate(port: int, session: str, *headers: str) -> object:
    """A lookup sent with `headers` in `session`; the client certificate its journal entry holds (None: none)."""
    lines = [f"GET {EVENT} HTTP/1.1", "Host: 127.0.0.1", f"X-Mock-Session: {session}", *headers]
    with socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        assert read_until(sock, b"}", 1).startswith(b"HTTP/1.1 200 ")
        sock.sendall(
            f"GET /__mock/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Mock-Session: {session}\r\n"
            "X-Mock-Admin: 1\r\nConnection: close\r\n\r\n".encode()
        )
        received = read_until(sock, b"\x00", 1)  # until the close
    [entry] = json.loads(received.partition(b"\r\n\r\n")[2])["requests"]
    return entry.get("client_certificate")


def test_a_loopback_proxy_adding_x_forwarded_for_keeps_its_clients_certificate(port: int, test_pki: TestPki) -> None:
    """uvicorn trusts X-Forwarded-For from 127.0.0.1 by default and makes the scope's client the address it names:
    the certificate a local proxy forwards was then dropped, as if from a remote peer."""
    certificate = f"{HEADER}: {quote(test_pki.client()[0].read_text())}"
    found = journaled_certificate(port, "forwarded", certificate, "X-Forwarded-For: 203.0.113.9")
    assert isinstance(found, dict) and found["cnpj"] == test_pki.cnpj
    assert journaled_certificate(port, "unforwarded") is None  # no header, no certificate


def scope_of(peer: tuple[str, int] | None, client: tuple[str, int], pem: str) -> Scope:
    extensions = {} if peer is None else {PEER_EXTENSION: peer}
    return {
        "type": "http",
        "client": client,
        "headers": [(HEADER.encode(), quote(pem).encode())],
        "extensions": extensions,
    }


def test_the_header_is_trusted_from_the_tcp_peer_never_from_the_scopes_client(test_pki: TestPki) -> None:
    """With FORWARDED_ALLOW_IPS='*', a remote client's X-Forwarded-For: 127.0.0.1 made the scope's client loopback,
    and its forged header was believed. The socket's peer decides where the protocol recorded it."""
    pem = test_pki.client()[0].read_text()
    assert client_certificate(scope_of(("192.0.2.7", 40000), ("127.0.0.1", 0), pem), HEADER) is None
    assert client_certificate(scope_of(("127.0.0.1", 40000), ("203.0.113.9", 0), pem), HEADER) is not None
    # Under another server (a TestClient, stock uvicorn), the scope's client is all there is: that server's settings.
    assert client_certificate(scope_of(None, ("127.0.0.1", 0), pem), HEADER) is not None
    assert client_certificate(scope_of(None, ("192.0.2.7", 0), pem), HEADER) is None
