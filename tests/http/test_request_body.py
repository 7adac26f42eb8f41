"""Reading a request's body (http/request_body.py): through ASGI's receive, bounded in size and in time, whether
it arrived whole or is still arriving."""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import Any

import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from mock_server.domain.errors import PayloadTooLarge, RequestTimeout
from mock_server.http.request_body import read_bytes
from mock_server.http.scope_keys import ABORT_EXTENSION
from mock_server.http.tls import PEER_EXTENSION
from mock_server.wire.decoding import MAX_BODY_BYTES
from tests.threaded_server import SAFETY, threaded_server


def receiving(*messages: Message) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        return pending.pop(0)

    return receive


def test_a_body_the_server_holds_whole_is_read_without_a_deadline(monkeypatch):
    def armed(delay: float | None) -> Any:
        raise AssertionError("a deadline was armed for a body the server held whole")

    monkeypatch.setattr(asyncio, "timeout", armed)  # what request_body arms a deadline with
    receive = receiving({"type": "http.request", "body": b'{"a": 1}', "more_body": False})
    assert asyncio.run(read_bytes(receive, "8", timeout=5.0)) == b'{"a": 1}'


def test_a_first_receive_that_waits_is_resumed_under_the_deadline():
    async def late(delay: float) -> Message:
        await asyncio.sleep(delay)
        return {"type": "http.request", "body": b"late"}

    async def read(delay: float, timeout: float) -> bytes:
        return await read_bytes(lambda: late(delay), None, timeout=timeout)

    assert asyncio.run(read(0.01, SAFETY)) == b"late"
    with pytest.raises(RequestTimeout) as timed_out:
        asyncio.run(read(SAFETY, 0.05))  # the receive is canceled by the deadline, not left waiting
    assert "(0 bytes came)" in timed_out.value.message


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
        asyncio.run(read_bytes(receiving(*too_big), None, timeout=5.0))


def test_a_whole_body_over_the_limit_is_refused_and_a_disconnect_is_one():
    assert asyncio.run(read_bytes(receiving({"type": "http.request", "body": b"{}"}), "2", timeout=5.0)) == b"{}"
    whole: Message = {"type": "http.request", "body": b"x" * (MAX_BODY_BYTES + 1)}
    with pytest.raises(PayloadTooLarge):
        asyncio.run(read_bytes(receiving(whole), None, timeout=5.0))
    with pytest.raises(PayloadTooLarge):  # a declared length over the limit: refused before a byte is read
        asyncio.run(read_bytes(receiving(), str(MAX_BODY_BYTES + 1), timeout=5.0))
    with pytest.raises(ClientDisconnect):
        asyncio.run(read_bytes(receiving({"type": "http.disconnect"}), None, timeout=5.0))


def test_a_body_still_arriving_is_timed_out_with_a_408_that_closes():
    async def never() -> Message:
        await asyncio.sleep(SAFETY)
        raise AssertionError("not reached")

    pieces = [{"type": "http.request", "body": b"ab", "more_body": True}]

    async def receive() -> Message:
        return pieces.pop(0) if pieces else await never()

    with pytest.raises(RequestTimeout) as timed_out:
        asyncio.run(read_bytes(receive, "8", timeout=0.05))
    assert "(2 bytes came)" in timed_out.value.message
    assert timed_out.value.headers == {"Connection": "close"}


@pytest.mark.own_protocol  # reads the protocol's own cycle
def test_a_body_sent_whole_or_in_two_writes_is_read_whole_through_asgi():
    """Sent whole in one write, or in two, the second after the application started reading: the application
    reads all of it through ASGI's receive, the server's protocol says nothing else of it."""
    seen: list[bytes] = []
    looked = threading.Event()

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert set(scope["extensions"]) <= {ABORT_EXTENSION, PEER_EXTENSION}  # no cycle, nothing of uvicorn's
        looked.set()
        seen.append(await read_bytes(receive, None, timeout=SAFETY))
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
    assert seen == [b'{"a": 1}', b'{"a": 2}']


def test_a_client_that_leaves_before_its_body_came_gets_no_500_and_nothing_journaled(caplog):
    """It was journaled as a 500 of the operation, with "unexpected error in registerAccountLimit" in the log."""
    import httpx

    from mock_server.app import create_app
    from mock_server.settings import Settings

    head = (
        b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Content-Length: 400\r\n\r\n"
    )
    app = create_app(Settings())
    handled = threading.Event()

    async def watched(scope: Scope, receive: Receive, send: Send) -> None:
        """The app, and when its call for the registration returned (answered, journaled or not): the server
        noticed the close on its own time. Looked for, not waited out: 100 looks 20 ms apart took 2 s a run."""
        try:
            await app(scope, receive, send)
        finally:
            if scope["type"] == "http" and scope["path"] == "/limits/account":
                handled.set()

    with threaded_server(watched) as port:
        with socket.create_connection(("127.0.0.1", port), timeout=SAFETY) as sock:
            sock.sendall(head + b'{"account_id": "0001-00')  # and gone
        assert handled.wait(SAFETY)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=SAFETY) as looker:
            health = looker.get("/__mock/health")
            journal = looker.get("/__mock/requests").json()["requests"]
    assert health.status_code == 200
    assert not any(r["status"] >= 500 for r in journal), journal
    assert [r for r in journal if r["operation_id"] == "registerAccountLimit"] == []
    assert "unexpected error" not in caplog.text
