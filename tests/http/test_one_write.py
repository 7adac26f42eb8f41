"""The request path on mock-server's own protocol (http/connection.py, http/application.py), over real sockets
(tests/threaded_server.py: the server seam, mock_server/server.py, in a thread):

- an answer leaves in one write, head and body together (the protocol's `HeadHoldingTransport` joins uvicorn's two
  writes), with the bytes uvicorn's `send` writes (the application speaks ASGI only), uvicorn's own headers (date,
  an access log) or not; it closes where the request asked for it, and a HEAD gets the head alone;
- a body arrived whole, still arriving, held back for `100 Continue`, or over the limit is read through ASGI's
  receive; an answer before a `100 Continue` body says the connection closes, and closes it;
- MockApp calls the method's runner itself, unless the path holds an escape (the `%2F` 404) or the method is
  not the path's (405): those still reach `PathEndpoint`.

One write is seen where the client sees it: the number of data segments its socket received (Linux TCP_INFO,
`tcpi_data_segs_in`). A first recv() holding the whole answer proves nothing alone: on loopback, the ASGI road's
two writes are both in the client's buffer before it wakes (tried: 2000 answers of two writes, none read in part).
"""

from __future__ import annotations

import asyncio
import json
import logging
import select
import socket
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from bench.servers import LIMIT_BODY
from mock_server.app import create_app
from mock_server.http import pipeline
from mock_server.http.connection import HeadHoldingTransport
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.wire.decoding import MAX_BODY_BYTES
from tests.default_scenario import PENDING_EVENT_PATH
from tests.helpers import assert_error
from tests.threaded_server import SAFETY, threaded_server

pytestmark = pytest.mark.own_protocol  # one write per answer, the 100-continue rules, the quiet access log

LOOKUP = PENDING_EVENT_PATH
LIMIT_CHANGE = "/limits/account/0001-123456/limit_update_request"
LIMIT = LIMIT_BODY.encode()
JSON_HEAD = "HTTP/1.1 {status}\r\ncontent-length: {length}\r\ncontent-type: application/json\r\n"
CLOSING = 2.0  # seconds: a connection the server closes is closed by then; its idle timeout is 5 s
# struct tcp_info (linux/tcp.h): tcpi_data_segs_in, the segments carrying data the socket received (Linux 4.6+)
TCPI_DATA_SEGS_IN = 152

counts_segments = pytest.mark.skipif(not hasattr(socket, "TCP_INFO"), reason="TCP_INFO is Linux's")


def request(method: str, path: str, *headers: str, body: bytes = b"", version: str = "1.1") -> bytes:
    lines = [f"{method} {path} HTTP/{version}", "Host: 127.0.0.1", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def limit_change(*headers: str, body: bytes = LIMIT) -> bytes:
    """The bench's limit change, whole."""
    return request(
        "POST", LIMIT_CHANGE, "Content-Type: application/json", f"Content-Length: {len(body)}", *headers, body=body
    )


@dataclass(frozen=True)
class Answer:
    head: bytes  # the status line and headers, through the blank line
    body: bytes

    @property
    def status(self) -> int:
        return int(self.head.split(b" ", 2)[1])

    def header(self, name: str) -> str | None:
        for line in self.head.decode("latin-1").split("\r\n")[1:]:
            key, _, value = line.partition(":")
            if key.lower() == name:
                return value.strip()
        return None

    def json(self) -> Any:
        return json.loads(self.body)

    def as_httpx(self, method: str, path: str) -> httpx.Response:
        """For tests.helpers.assert_error, which judges the body by the spec's schema for the operation."""
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        headers = [(name, value) for name, _, value in (line.partition(": ") for line in lines if line)]
        return httpx.Response(
            self.status, headers=headers, content=self.body, request=httpx.Request(method, f"http://127.0.0.1{path}")
        )


class Wire:
    """One client connection, read answer by answer (pipelined answers too)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
        self.buffer = b""

    def close(self) -> None:
        self.sock.close()

    def send(self, raw: bytes) -> None:
        self.sock.sendall(raw)

    def _fill(self) -> None:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError(f"the server closed the connection; unread: {self.buffer!r}")
        self.buffer += chunk

    def answer(self, *, head: bool = False) -> Answer:
        """The next answer; `head`: to a HEAD (no content, whatever its Content-Length says)."""
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        top, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        answer = Answer(top + b"\r\n\r\n", b"")
        length = 0 if head or answer.status < 200 else int(answer.header("content-length") or 0)
        while len(self.buffer) < length:
            self._fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return Answer(answer.head, body)

    def closed_by_server(self) -> bool:
        """Whether the server ends the connection at once, with nothing more sent: within CLOSING s, well before
        the idle timeout would close it anyway."""
        self.sock.settimeout(CLOSING)
        try:
            return not self.buffer and self.sock.recv(1 << 16) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        finally:
            self.sock.settimeout(SAFETY)

    def data_segments(self) -> int:
        """The segments carrying data this socket has received so far."""
        info = self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
        if len(info) < TCPI_DATA_SEGS_IN + 4:
            pytest.skip("this kernel's tcp_info has no tcpi_data_segs_in")
        count: int = struct.unpack_from("I", info, TCPI_DATA_SEGS_IN)[0]
        return count

    def first_read(self) -> bytes:
        """What one recv() gets once the socket is readable."""
        readable, _, _ = select.select([self.sock], [], [], SAFETY)
        assert readable, "no answer"
        return self.sock.recv(1 << 20)


@pytest.fixture(scope="module")
def port(specs: Specs) -> Iterator[int]:
    """The default scenario's server, as `mock-server` runs it."""
    with threaded_server(create_app(Settings(), specs)) as serving:
        yield serving


@pytest.fixture
def wire(port: int) -> Iterator[Wire]:
    connection = Wire(port)
    yield connection
    connection.close()


def journal(wire: Wire, session: str) -> list[dict[str, Any]]:
    """The session's journal, read on `wire`."""
    wire.send(request("GET", "/__mock/requests", f"X-Mock-Session: {session}", "X-Mock-Admin: 1"))
    answer = wire.answer()
    assert answer.status == 200, answer
    entries: list[dict[str, Any]] = answer.json()["requests"]
    return entries


def lookup_bytes(client: TestClient) -> bytes:
    """The lookup's answer as the application sends it through ASGI (TestClient: no server between them): status
    line, the headers in their order, the body."""
    answer = client.get(LOOKUP)
    assert answer.status_code == 200
    headers = b"".join(name + b": " + value + b"\r\n" for name, value in answer.headers.raw)
    return b"HTTP/1.1 200 OK\r\n" + headers + b"\r\n" + answer.content


# --- one write ------------------------------------------------------------------------------------------


@counts_segments
def test_a_lookup_arrives_in_one_segment_with_the_bytes_the_application_sent(client: TestClient, wire: Wire) -> None:
    expected = lookup_bytes(client)
    body = expected.partition(b"\r\n\r\n")[2]
    head = JSON_HEAD.format(status="200 OK", length=len(body)).encode() + b"\r\n"
    assert expected == head + body  # the application's head: content-length, then content-type, nothing else
    for _ in range(100):  # one keep-alive connection
        before = wire.data_segments()
        wire.send(request("GET", LOOKUP))
        assert wire.first_read() == expected
        assert wire.data_segments() - before == 1


@counts_segments
def test_uvicorns_default_headers_leave_in_the_same_one_write(specs: Specs) -> None:
    """uvicorn's `date` header is written by uvicorn's own `send`, and still leaves with the body in one write."""
    with threaded_server(create_app(Settings(), specs), date_header=True) as dated:
        wire = Wire(dated)
        try:
            before = wire.data_segments()
            for _ in range(10):
                wire.send(request("GET", LOOKUP))
                answer = wire.answer()
                assert answer.status == 200 and answer.header("date") is not None
            assert wire.data_segments() - before == 10
        finally:
            wire.close()


@counts_segments
def test_an_answer_written_in_two_writes_arrives_in_two_segments(wire: Wire) -> None:
    """What shows that counting segments tells one write from two: the protocol's own transport written twice,
    the second write after the loop's turn (a streaming answer's head does not wait for its body)."""

    async def two_writes(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await asyncio.sleep(0.05)  # the held head is written at the loop's next turn
        await send({"type": "http.response.body", "body": b"{}"})

    with threaded_server(two_writes) as port:
        streamed = Wire(port)
        try:
            before = streamed.data_segments()
            streamed.send(request("GET", "/"))
            assert streamed.answer().body == b"{}"
            assert streamed.data_segments() - before == 2
        finally:
            streamed.close()


@counts_segments
def test_a_handler_on_uvicorns_access_logger_writes_no_log_the_server_was_not_asked_for(specs: Specs) -> None:
    """uvicorn logs access wherever `uvicorn.access` has a handler, and pytest adds one to it (as any application
    configuring logging may): with `access_log=False`, as mock-server runs by default, nothing is logged; with
    `access_log=True` it is logged. The answer leaves in one write either way."""
    logger = logging.getLogger("uvicorn.access")
    records: list[logging.LogRecord] = []

    class Recording(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Recording()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)  # uvicorn logs each access at INFO
    try:
        for asked in (False, True):
            with threaded_server(create_app(Settings(), specs), access_log=asked) as served:
                logger.addHandler(handler)  # uvicorn's own logging setup cleared the handlers of an access log off
                logger.setLevel(logging.INFO)  # and set its level to the server's (warning)
                wire = Wire(served)
                try:
                    before = wire.data_segments()
                    wire.send(request("GET", LOOKUP))
                    assert wire.answer().status == 200
                    assert wire.data_segments() - before == 1
                finally:
                    wire.close()
            assert bool(records) is asked
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@counts_segments
def test_a_limit_change_is_answered_in_one_segment_and_journaled_with_its_body(wire: Wire) -> None:
    session = "one-write-post"
    for _ in range(5):
        before = wire.data_segments()
        wire.send(limit_change(f"X-Mock-Session: {session}"))
        answer = wire.answer()
        assert answer.status == 201, answer
        assert answer.head == JSON_HEAD.format(status="201 Created", length=len(answer.body)).encode() + b"\r\n"
        assert answer.json()["limit_update_request_status"] == "applied"
        assert wire.data_segments() - before == 1
    entries = journal(wire, session)
    assert [(e["operation_id"], e["status"]) for e in entries] == [("createLimitUpdateRequest", 201)] * 5
    assert all(e["request_body"] == json.loads(LIMIT_BODY) for e in entries)


# --- keep-alive, pipelining, close ----------------------------------------------------------------------


def test_requests_in_a_row_on_one_connection_are_each_answered(wire: Wire) -> None:
    session = "one-write-keep-alive"
    for _ in range(3):
        wire.send(request("GET", LOOKUP, f"X-Mock-Session: {session}"))
        assert wire.answer().json()["status"] == "pending_conciliation"
        wire.send(limit_change(f"X-Mock-Session: {session}"))
        assert wire.answer().status == 201
        wire.send(request("HEAD", LOOKUP, f"X-Mock-Session: {session}"))
        assert wire.answer(head=True).status == 200
    assert [e["method"] for e in journal(wire, session)] == ["GET", "POST", "HEAD"] * 3
    assert wire.buffer == b""  # nothing sent beyond the answers


def test_pipelined_requests_are_answered_in_order(wire: Wire, client: TestClient) -> None:
    session = "one-write-pipelined"
    wire.send(
        request("GET", LOOKUP, f"X-Mock-Session: {session}")
        + limit_change(f"X-Mock-Session: {session}")
        + request("HEAD", LOOKUP, f"X-Mock-Session: {session}")
        + request("DELETE", LOOKUP, f"X-Mock-Session: {session}")
        + request("GET", LOOKUP, f"X-Mock-Session: {session}")
    )
    expected = lookup_bytes(client)
    first = wire.answer()
    assert first.head + first.body == expected
    assert wire.answer().status == 201
    head = wire.answer(head=True)
    assert head.head == first.head and head.body == b""
    assert wire.answer().status == 405
    last = wire.answer()
    assert last.head + last.body == expected
    assert wire.buffer == b""
    operations = [(e["method"], e["status"], e["request_body"]) for e in journal(wire, session)]
    assert operations == [
        ("GET", 200, None),
        ("POST", 201, json.loads(LIMIT_BODY)),
        ("HEAD", 200, None),
        ("GET", 200, None),
    ]


@pytest.mark.parametrize(
    ("version", "headers"),
    [
        ("1.0", ()),
        ("1.1", ("Connection: close",)),
        ("1.0", ("Connection: close",)),
        ("1.0", ("Connection: keep-alive",)),
    ],
    ids=["http-1.0", "http-1.1-close", "http-1.0-close", "http-1.0-keep-alive"],
)
def test_a_request_that_keeps_no_connection_gets_connection_close_and_the_close(
    wire: Wire, client: TestClient, version: str, headers: tuple[str, ...]
) -> None:
    """HTTP/1.0 never keeps its connection here, even asking to (uvicorn's httptools protocol keeps none)."""
    wire.send(request("GET", LOOKUP, *headers, version=version))
    answer = wire.answer()
    body = lookup_bytes(client).partition(b"\r\n\r\n")[2]
    assert answer.head == JSON_HEAD.format(status="200 OK", length=len(body)).encode() + b"connection: close\r\n\r\n"
    assert answer.body == body
    assert wire.closed_by_server()


def test_a_limit_change_that_keeps_no_connection_is_answered_and_closed(wire: Wire) -> None:
    wire.send(limit_change("Connection: close"))
    answer = wire.answer()
    assert answer.status == 201 and answer.header("connection") == "close"
    assert wire.closed_by_server()


def test_head_has_the_gets_head_and_no_content(wire: Wire, client: TestClient) -> None:
    expected = lookup_bytes(client)
    wire.send(request("HEAD", LOOKUP))
    assert wire.first_read() == expected.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"  # the whole answer: no content
    wire.send(request("GET", LOOKUP))  # the connection goes on, with nothing left over from the HEAD
    answer = wire.answer()
    assert answer.head + answer.body == expected
    wire.send(request("HEAD", LOOKUP, "Connection: close"))
    assert wire.answer(head=True).header("connection") == "close"
    assert wire.closed_by_server()


# --- the body: whole, arriving, held back, too large --------------------------------------------------


def test_a_body_still_arriving_when_the_operation_starts_is_read_whole(wire: Wire) -> None:
    session = "one-write-arriving"
    whole = limit_change(f"X-Mock-Session: {session}")
    split = len(whole) - len(LIMIT) + 40  # the head and the body's first 40 bytes
    wire.send(whole[:split])
    time.sleep(0.2)  # the operation starts and waits for the rest in ASGI's receive
    wire.send(whole[split:])
    answer = wire.answer()
    assert answer.status == 201, answer
    (entry,) = journal(wire, session)
    assert entry["request_body"] == json.loads(LIMIT_BODY)


def test_a_client_waiting_for_100_continue_gets_it_then_the_answer(wire: Wire) -> None:
    session = "one-write-continue"
    whole = limit_change(f"X-Mock-Session: {session}", "Expect: 100-continue")
    head = whole[: len(whole) - len(LIMIT)]
    wire.send(head)
    assert wire.first_read() == b"HTTP/1.1 100 Continue\r\n\r\n"
    wire.send(LIMIT)
    answer = wire.answer()
    assert answer.status == 201 and answer.header("connection") is None  # the body was read: the connection goes on
    (entry,) = journal(wire, session)
    assert (entry["status"], entry["request_body"]) == (201, json.loads(LIMIT_BODY))


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(wire: Wire) -> None:
    over = MAX_BODY_BYTES + 1
    head = request("POST", LIMIT_CHANGE, "Content-Type: application/json", f"Content-Length: {over}")
    wire.send(head)  # and no body: the answer must not wait for it
    answer = wire.answer()
    body = assert_error(answer.as_httpx("POST", LIMIT_CHANGE), 413, "payload_too_large")
    assert str(MAX_BODY_BYTES) in body["message"]


def test_a_client_expecting_100_continue_for_a_body_over_the_limit_gets_the_413_instead(wire: Wire) -> None:
    head = request(
        "POST",
        LIMIT_CHANGE,
        "Content-Type: application/json",
        f"Content-Length: {MAX_BODY_BYTES + 1}",
        "Expect: 100-continue",
    )
    wire.send(head)
    answer = wire.answer()
    assert_error(answer.as_httpx("POST", LIMIT_CHANGE), 413, "payload_too_large")
    # The client will never send that body, and its next request must not be read as the body: closed, and said so.
    assert answer.header("connection") == "close"
    assert wire.closed_by_server()


def test_an_answer_before_a_100_continue_body_closes_the_connection_with_uvicorns_headers_too(specs: Specs) -> None:
    """With uvicorn's date header in the head, the head still says the connection closes, and it closes: the next
    request is never read as the body."""
    with threaded_server(create_app(Settings(), specs), date_header=True) as dated:
        wire = Wire(dated)
        try:
            wire.send(
                request(
                    "POST",
                    LIMIT_CHANGE,
                    "Content-Type: application/json",
                    f"Content-Length: {MAX_BODY_BYTES + 1}",
                    "Expect: 100-continue",
                )
            )
            answer = wire.answer()
            assert answer.status == 413 and answer.header("date") is not None
            assert answer.header("connection") == "close"
            assert wire.closed_by_server()
        finally:
            wire.close()


def test_a_chunked_body_over_the_limit_is_413_and_the_connection_goes_on(wire: Wire, client: TestClient) -> None:
    content = b"x" * (MAX_BODY_BYTES + 1)
    piece = 1 << 16
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(content[at : at + piece]), content[at : at + piece])
        for at in range(0, len(content), piece)
    )
    head = request("POST", LIMIT_CHANGE, "Content-Type: application/json", "Transfer-Encoding: chunked")
    wire.send(head + chunks + b"0\r\n\r\n")
    answer = wire.answer()
    assert_error(answer.as_httpx("POST", LIMIT_CHANGE), 413, "payload_too_large")
    assert answer.header("connection") is None
    wire.send(request("GET", LOOKUP))  # the rest of the body was read past: the next request is one
    after = wire.answer()
    assert after.head + after.body == lookup_bytes(client)


def test_a_chunked_body_over_the_limit_that_arrived_whole_is_413(wire: Wire, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunked body declares no length, so only its bytes can say it is over the limit; at 1 MiB it never
    arrives whole before the operation asks for it (uvicorn stops reading past 64 KiB), hence a lower limit."""
    monkeypatch.setattr(pipeline, "MAX_BODY_BYTES", 100)
    head = request("POST", LIMIT_CHANGE, "Content-Type: application/json", "Transfer-Encoding: chunked")
    wire.send(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(LIMIT), LIMIT))
    answer = wire.answer()
    assert assert_error(answer.as_httpx("POST", LIMIT_CHANGE), 413, "payload_too_large")["message"] == (
        "The body is over 100 bytes."
    )
    wire.send(limit_change())  # declared over the limit
    assert wire.answer().status == 413
    monkeypatch.undo()
    wire.send(head + b"%x\r\n%s\r\n0\r\n\r\n" % (len(LIMIT), LIMIT))
    assert wire.answer().status == 201


@pytest.mark.parametrize("size", [70_000, 300_000])
def test_a_large_body_under_the_limit_sent_whole_is_answered(wire: Wire, size: int) -> None:
    """Over uvicorn's 64 KiB high-water mark, where it stops reading until the body is asked for."""
    session = f"one-write-large-{size}"
    padded = LIMIT[:-1] + b" " * (size - len(LIMIT)) + b"}"  # the same JSON value, padded with whitespace
    wire.send(limit_change(f"X-Mock-Session: {session}", body=padded))
    answer = wire.answer()
    assert answer.status == 201, answer
    assert answer.json()["limit_update_request_status"] == "applied"
    (entry,) = journal(wire, session)
    assert entry["truncated"] == ["request_body"]  # over 64 KiB: journaled cut, as any body that size
    assert entry["request_body"].startswith(LIMIT_BODY[:-1])


# --- paths: escapes and methods -------------------------------------------------------------------------


def test_an_encoded_slash_in_an_id_is_404_even_where_the_decoded_path_is_another_route(wire: Wire) -> None:
    lookup = "/event_conciliation/extraordinary_event/9f1c6f0e%2F3c8e-4a55-9d47-0a4c2b8f6d11"
    wire.send(request("GET", lookup))
    assert_error(wire.answer().as_httpx("GET", lookup), 404, "not_found")
    # decoded, /limits/account/0001-123456/recipient_list/limit_update_request: a route, and a valid body for it
    other = "/limits/account/0001-123456%2Frecipient_list/limit_update_request"
    body = b'{"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 1000}]}}'
    wire.send(request("POST", other, "Content-Type: application/json", f"Content-Length: {len(body)}", body=body))
    refused = assert_error(wire.answer().as_httpx("POST", other), 404, "not_found")
    assert "%2F" in refused["message"]


def test_a_method_the_path_lacks_is_405_with_allow(wire: Wire) -> None:
    for method in ("DELETE", "POST", "PUT"):
        wire.send(request(method, LOOKUP, "Content-Length: 0"))
        answer = wire.answer()
        assert_error(answer.as_httpx(method, LOOKUP), 405, "method_not_allowed")
        assert answer.header("allow") == "GET"
    wire.send(request("HEAD", "/limits/account", "Content-Length: 0"))
    refused = wire.answer(head=True)
    assert (refused.status, refused.header("allow")) == (405, "POST")
    wire.send(request("GET", LOOKUP))  # and the connection goes on
    assert wire.answer().status == 200


def test_an_escape_that_decodes_to_an_id_is_answered_by_the_operation(wire: Wire, client: TestClient) -> None:
    escaped = LOOKUP.replace("/9f1c", "/%39f1c").replace("-4a55", "%2D4a55")
    assert escaped != LOOKUP
    wire.send(request("GET", escaped))
    answer = wire.answer()
    assert answer.head + answer.body == lookup_bytes(client)


# --- the transport that joins a head to its body -------------------------------------------------------------


class Transport:
    """What is written to it, and whether it was closed or aborted."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.ended: str | None = None

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.ended = "closed"

    def abort(self) -> None:
        self.ended = "aborted"

    def is_closing(self) -> bool:
        return self.ended is not None

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def get_write_buffer_size(self) -> int:
        return 7


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: application/json\r\n\r\n"


def holding(amend: Any = None) -> tuple[HeadHoldingTransport, Transport, asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    transport = Transport()
    return HeadHoldingTransport(transport, loop, amend), transport, loop  # type: ignore[arg-type]


def test_a_head_is_held_until_its_body_and_both_are_written_as_one() -> None:
    held, transport, loop = holding()
    try:
        held.write(HEAD)
        assert transport.writes == []
        held.write(b"{}")
        assert transport.writes == [HEAD + b"{}"]
        held.write(b"more")  # nothing held: written as it comes
        assert transport.writes == [HEAD + b"{}", b"more"]
        loop.run_until_complete(asyncio.sleep(0))  # the loop's turn finds nothing held
        assert transport.writes == [HEAD + b"{}", b"more"]
    finally:
        loop.close()


def test_a_head_whose_body_does_not_follow_leaves_at_the_loops_next_turn_or_at_the_close() -> None:
    held, transport, loop = holding()
    try:
        held.write(HEAD)
        loop.run_until_complete(asyncio.sleep(0))
        assert transport.writes == [HEAD]
        held.write(HEAD)
        held.close()
        assert transport.writes == [HEAD, HEAD] and transport.ended == "closed"
    finally:
        loop.close()


def test_an_abort_drops_a_held_head_and_the_flush_writes_one() -> None:
    held, transport, loop = holding()
    try:
        held.write(HEAD)
        held.abort()
        assert transport.writes == [] and transport.ended == "aborted"
        held = HeadHoldingTransport(transport := Transport(), loop)  # type: ignore[arg-type]
        held.write(HEAD)
        held.flush()
        held.flush()
        assert transport.writes == [HEAD]
        assert held.get_write_buffer_size() == 7  # the rest of the transport, as it is
    finally:
        loop.close()


@pytest.mark.parametrize(
    "data",
    [b"HTTP/1.1 100 Continue\r\n\r\n", b'{"a": "HTTP/1.1 200 OK\r\n\r\n"}', HEAD[:-2], b"HTTP/1.1 200 OK\r\n\r\n{}"],
    ids=["interim", "body", "unfinished", "whole"],
)
def test_only_a_final_answers_head_is_held(data: bytes) -> None:
    held, transport, loop = holding()
    try:
        held.write(data)
        assert transport.writes == [data]
    finally:
        loop.close()


def test_a_held_head_is_amended_first() -> None:
    held, transport, loop = holding(lambda head: head[:-2] + b"connection: close\r\n\r\n")
    try:
        held.write(HEAD)
        held.write(b"{}")
        assert transport.writes == [HEAD[:-2] + b"connection: close\r\n\r\n{}"]
    finally:
        loop.close()
