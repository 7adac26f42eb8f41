"""Issue 16 items 4 and 8 over real connections: idle, half-sent heads and bodies are timed out, heads are
bounded in bytes, malformed HTTP gets the contract's JSON body, SIGTERM finishes while an upload is stalled."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import LiveServer, closed_within, live_server, read_response

FAST = ("--idle-timeout", "1", "--header-timeout", "1", "--body-timeout", "1")
PENDING_KEY = PENDING_EVENT
REGISTRATION = {
    "account_id": "0009-000001",
    "registration_date": "2026-11-21T09:00:00-03:00",
    "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}},
}


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(*FAST, "--max-header-bytes", "16k") as running:
        yield running


def _error_body(body: bytes, code: str) -> dict[str, object]:
    data = json.loads(body)
    assert data["code"] == code, data
    assert isinstance(data["message"], str)
    return data


@pytest.mark.own_protocol  # the JSON 400 for broken HTTP is the protocol's
def test_malformed_http_is_answered_with_the_contracts_json_body(server):
    with server.connect() as sock:
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Name: 1\r\n\r\n")
        status, headers, body = read_response(sock)
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    _error_body(body, "malformed_http")


@pytest.mark.own_protocol  # the head-size limit is the protocol's
def test_a_head_over_the_limit_is_431_before_it_is_read_whole(server):
    with server.connect() as sock:
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
        sent = 0
        try:
            while sent < 10 * 1024 * 1024:  # the 100 MB header of the issue, cut short: the server stops it early
                sock.sendall(b"a" * 65536)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        status, headers, body = read_response(sock)
    assert status == 431
    assert headers["content-type"] == "application/json"
    _error_body(body, "headers_too_large")
    assert sent < 10 * 1024 * 1024  # refused long before the end


def test_a_head_under_the_limit_is_served(server):
    with httpx.Client(base_url=server.url) as http:
        answer = http.get("/__mock/health", headers={"X-Padding": "a" * 8000})
    assert answer.status_code == 200


@pytest.mark.own_protocol  # the deadlines are the protocol's
def test_a_connection_that_never_sends_is_closed_after_the_idle_timeout(server):
    with server.connect() as sock:
        assert closed_within(sock, 5.0)


@pytest.mark.own_protocol  # the deadlines are the protocol's
def test_a_half_sent_head_is_answered_408_after_the_header_timeout(server):
    with server.connect() as sock:
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        status, _, body = read_response(sock, timeout=5.0)
        assert time.monotonic() - started < 4.0
        assert closed_within(sock, 2.0)
    assert status == 408
    _error_body(body, "request_timeout")


@pytest.mark.own_protocol  # the deadlines are the protocol's
def test_a_slowloris_head_dripping_bytes_is_still_cut_at_the_header_timeout(server):
    with server.connect() as sock:
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\n")
        started = time.monotonic()
        status = None
        while time.monotonic() - started < 5.0:
            try:
                sock.sendall(b"X: y\r\n")
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.2)
            sock.settimeout(0.0)
            try:
                if sock.recv(1, socket.MSG_PEEK):
                    status, _, _ = read_response(sock)
                    break
            except BlockingIOError:
                pass
        assert status == 408
        assert time.monotonic() - started < 4.0


def test_a_stalled_body_the_api_reads_is_answered_408_and_journaled(server):
    session = "stalled-body"
    with server.connect() as sock:
        payload = json.dumps(REGISTRATION).encode()
        sock.sendall(
            b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"X-Mock-Session: {session}\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
            + payload[:10]
        )
        status, headers, body = read_response(sock, timeout=5.0)
        assert closed_within(sock, 2.0)
    assert status == 408
    assert headers["connection"] == "close"
    _error_body(body, "request_timeout")
    with httpx.Client(base_url=server.url, headers={"X-Mock-Session": session}) as http:
        journal = http.get("/__mock/requests").json()["requests"]
        assert [(e["operation_id"], e["status"]) for e in journal] == [("registerAccountLimit", 408)]
        assert http.get("/__mock/accounts/0009-000001").status_code == 404  # nothing half-applied


@pytest.mark.own_protocol  # the deadlines are the protocol's
def test_a_stalled_body_the_api_ignores_closes_the_connection_after_the_body_timeout(server):
    with server.connect() as sock:
        sock.sendall(
            f"GET /event_conciliation/extraordinary_event/{PENDING_KEY} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            + b"Content-Length: 100\r\n\r\n0123456789"
        )
        status, _, _ = read_response(sock)
        assert status == 200
        for _ in range(8):  # keep dripping: a byte now and then must not keep the connection alive
            time.sleep(0.25)
            try:
                sock.sendall(b"x")
            except (BrokenPipeError, ConnectionResetError):
                break
        assert closed_within(sock, 2.0)


@pytest.mark.own_protocol  # the deadlines are the protocol's
def test_a_thousand_slowloris_connections_do_not_hold_the_server(server):
    held: list[socket.socket] = []
    try:
        for _ in range(1000):
            sock = server.connect()
            sock.sendall(b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            held.append(sock)
        with httpx.Client(base_url=server.url, timeout=5.0) as http:
            started = time.monotonic()
            assert http.get(f"/event_conciliation/extraordinary_event/{PENDING_KEY}").status_code == 200
            assert time.monotonic() - started < 2.0
        deadline = time.monotonic() + 10.0
        for sock in held:
            assert closed_within(sock, max(0.1, deadline - time.monotonic())), "a slowloris connection stayed open"
    finally:
        for sock in held:
            sock.close()


def test_sigterm_completes_while_an_upload_is_stalled():
    with live_server("--body-timeout", "600", "--shutdown-timeout", "1") as server:
        sock = server.connect()
        sock.sendall(
            b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\n\r\n{"
        )
        time.sleep(0.3)  # the request is in the application, waiting for its body
        started = time.monotonic()
        server.terminate()
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("SIGTERM did not complete within 10 s while an upload was stalled")
        finally:
            sock.close()
        assert time.monotonic() - started < 5.0


def test_head_over_a_real_connection_sends_the_headers_and_no_content(server):
    with server.connect() as sock:
        lookup = f"/event_conciliation/extraordinary_event/{PENDING_KEY}"
        sock.sendall(f"HEAD {lookup} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # the next response follows at once
        sock.settimeout(5.0)
        data = b""
        while data.count(b"HTTP/1.1 200") < 2 or not data.endswith(b"}"):
            chunk = sock.recv(65536)
            assert chunk, data
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    assert b"content-length: " in head and not head.endswith(b"content-length: 0")
    assert rest.startswith(b"HTTP/1.1 200")  # no content between the HEAD's headers and the next response
