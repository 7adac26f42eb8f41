"""Reading a request's body (http/request_body.py): a body the server holds whole is read with no deadline armed;
one still arriving is read under the deadline. Over a real connection, mock-server's protocol says which."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from mock_server.domain.errors import PayloadTooLarge
from mock_server.http.connection import body_arrived
from mock_server.http.request_body import read_bytes
from mock_server.wire.decoding import MAX_BODY_BYTES
from tests.threaded_server import SAFETY, threaded_server


def receiving(*messages: Message) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        return pending.pop(0)

    return receive


def no_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    def armed(delay: float | None) -> Any:
        raise AssertionError("a deadline was armed for a body the server held whole")

    monkeypatch.setattr(asyncio, "timeout", armed)  # what request_body arms a deadline with


def test_a_body_the_server_holds_whole_is_read_without_a_deadline(monkeypatch):
    no_deadline(monkeypatch)
    receive = receiving({"type": "http.request", "body": b'{"a": 1}', "more_body": False})
    assert asyncio.run(read_bytes(receive, "8", timeout=5.0, arrived=True)) == b'{"a": 1}'


def test_a_body_in_pieces_is_joined_and_still_bounded():
    pieces: list[Message] = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"cd"},
    ]
    assert asyncio.run(read_bytes(receiving(*pieces), None, timeout=5.0)) == b"abcd"
    half = b"x" * (MAX_BODY_BYTES // 2 + 1)
    too_big: list[Message] = [
        {"type": "http.request", "body": half, "more_body": True},
        {"type": "http.request", "body": half},
    ]
    with pytest.raises(PayloadTooLarge):
        asyncio.run(read_bytes(receiving(*too_big), None, timeout=5.0, arrived=True))


def test_a_body_said_to_have_arrived_is_still_read_whole_bounded_and_refused_as_any(monkeypatch):
    no_deadline(monkeypatch)
    pieces: list[Message] = [
        {"type": "http.request", "body": b"ab", "more_body": True},
        {"type": "http.request", "body": b"cd"},
    ]
    assert asyncio.run(read_bytes(receiving(*pieces), None, timeout=5.0, arrived=True)) == b"abcd"
    whole = {"type": "http.request", "body": b"x" * (MAX_BODY_BYTES + 1)}
    with pytest.raises(PayloadTooLarge):
        asyncio.run(read_bytes(receiving(whole), None, timeout=5.0, arrived=True))
    with pytest.raises(ClientDisconnect):
        asyncio.run(read_bytes(receiving({"type": "http.disconnect"}), None, timeout=5.0, arrived=True))


def test_without_mock_servers_protocol_the_body_is_not_known_to_have_arrived():
    assert not body_arrived({"type": "http", "extensions": {}})
    assert not body_arrived({"type": "http"})


def test_the_protocol_says_whether_the_body_has_arrived_whole():
    """Sent whole in one write, the body is there when the application starts; sent in two writes, the second
    after the application looked, it is not, and the application still reads all of it."""
    seen: list[tuple[bool, bytes]] = []
    looked = threading.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        arrived = body_arrived(scope)
        looked.set()
        body = await read_bytes(receive, None, timeout=SAFETY, arrived=arrived)
        seen.append((arrived, body))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    head = b"POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n"
    with threaded_server(app) as port, socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as sock:
        sock.sendall(head + b'{"a": 1}')
        assert sock.recv(4096).startswith(b"HTTP/1.1 204")
        looked.clear()
        sock.sendall(head + b'{"a"')
        assert looked.wait(SAFETY)
        sock.sendall(b": 2}")
        assert sock.recv(4096).startswith(b"HTTP/1.1 204")
    assert seen == [(True, b'{"a": 1}'), (False, b'{"a": 2}')]
