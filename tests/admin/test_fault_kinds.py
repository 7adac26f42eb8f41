"""Fault kinds (issue 13, item 5): `reset`, `malformed`, `slow_body` beside the default `respond`, through HTTP.

In process (the `client` fixture) a reset surfaces as `ConnectionDropped` (Starlette's TestClient has no
connection to drop); over a real connection (`threaded_server`: uvicorn with mock-server's own protocol, in this
process so that a test can hold the slow body's pauses; `live_server`: the `mock-server` command) the client
reads a TCP reset and no byte. Nothing here is timed: a slow body is shown arriving in pieces by holding the
server between them.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mock_server.app import create_app
from mock_server.http import fault_replies
from mock_server.http.fault_replies import ConnectionDropped, pieces
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.faults import MAX_FAULT_BODY_BYTES
from tests.builders import REGISTER, recipient_path, registration
from tests.default_scenario import CPF_IN_LIST, CPF_NOT_IN_LIST, CPF_RECIPIENT, FULL_ACCOUNT, PENDING_EVENT_PATH
from tests.held_pauses import HeldPauses
from tests.helpers import Client, add_fault, assert_error, faults
from tests.live_server import live_server
from tests.threaded_server import threaded_server

NEW_ACCOUNT = "5555-000002"  # registered by these tests, in no scenario
SAFETY = 10.0  # seconds a step may take before the test gives up (a hang is a failure, never a wait)


def journal(client: Client) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = client.get("/__mock/requests").json()["requests"]
    return result


def assert_no_answer(send: Callable[[], object]) -> None:
    """The request got no HTTP answer: dropped in process, or a transport error over a live connection."""
    with pytest.raises((ConnectionDropped, httpx.TransportError)):
        send()


def raw_get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


def read_to_end(sock: socket.socket) -> tuple[bytes, str]:
    """Everything the server sends until the connection ends, and how it ended: `reset` or `eof`."""
    sock.settimeout(SAFETY)
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received, "reset"
        if not chunk:
            return received, "eof"
        received += chunk


# --- the default kind --------------------------------------------------------------------------------


def test_a_fault_is_kind_respond_unless_told(client):
    fault = add_fault(client, operation_id="getExtraordinaryEvent", status=503)
    assert fault["kind"] == "respond"
    assert "text" not in fault  # only a malformed fault carries one
    assert faults(client) == [fault]
    assert client.get(PENDING_EVENT_PATH).status_code == 503


# --- reset -------------------------------------------------------------------------------------------


def test_a_reset_answers_nothing_and_is_journaled_without_a_status(client):
    fault = add_fault(client, operation_id="registerAccountLimit", kind="reset")
    assert fault == {
        "fault_id": fault["fault_id"],
        "operation_id": "registerAccountLimit",
        "kind": "reset",
        "status": None,
        "body": None,
        "delay_ms": 0,
        "times": 1,
    }
    sent = registration(NEW_ACCOUNT)
    assert_no_answer(lambda: client.post(REGISTER, json=sent))
    [entry] = journal(client)
    assert entry["operation_id"] == "registerAccountLimit"
    assert entry["status"] is None
    assert entry["response_body"] is None
    assert entry["request_body"] == sent  # what the client sent, though nothing answered it
    assert faults(client) == []  # spent
    assert_error(client.get(f"/__mock/accounts/{NEW_ACCOUNT}"), 404, "account_not_found")  # nothing was done
    assert client.post(REGISTER, json=sent).status_code == 201  # the retry goes through


def test_a_reset_hits_times_calls_then_the_operation_answers_again(client):
    add_fault(client, operation_id="getExtraordinaryEvent", kind="reset", times=2)
    assert_no_answer(lambda: client.get(PENDING_EVENT_PATH))
    assert faults(client)[0]["times"] == 1
    assert_no_answer(lambda: client.get(PENDING_EVENT_PATH))
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    assert [e["status"] for e in journal(client)] == [None, None, 200]


def test_a_reset_is_not_counted_as_an_answered_status(client):
    assert client.delete("/__mock/coverage").status_code == 204
    add_fault(client, operation_id="getExtraordinaryEvent", kind="reset")
    assert_no_answer(lambda: client.get(PENDING_EVENT_PATH))
    [lookup] = [
        op
        for op in client.get("/__mock/coverage").json()["operations"]
        if op["operation_id"] == "getExtraordinaryEvent"
    ]
    assert lookup["answered"] == {} and lookup["injected"] == {} and lookup["undocumented"] == {}


def test_the_journal_filter_by_status_leaves_resets_out(client):
    add_fault(client, operation_id="getExtraordinaryEvent", kind="reset")
    assert_no_answer(lambda: client.get(PENDING_EVENT_PATH))
    assert client.get(PENDING_EVENT_PATH).status_code == 200
    answered = client.get("/__mock/requests", params={"status": 200}).json()["requests"]
    assert [e["status"] for e in answered] == [200]


# --- malformed ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("operation_id", "method", "path", "status"),
    [
        ("getExtraordinaryEvent", "GET", PENDING_EVENT_PATH, 200),
        ("addRecipient", "POST", recipient_path(FULL_ACCOUNT), 201),
        ("removeRecipient", "DELETE", recipient_path(FULL_ACCOUNT, CPF_RECIPIENT), 200),  # its 204 has no body
    ],
)
def test_a_malformed_fault_answers_the_success_status_with_a_body_no_parser_takes(
    client, operation_id, method, path, status
):
    fault = add_fault(client, operation_id=operation_id, kind="malformed")
    assert fault["status"] == status
    before = client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()
    body = {"document_number": CPF_NOT_IN_LIST} if method == "POST" else None
    response = client.request(method, path, json=body)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.text == fault["text"]
    assert response.text.startswith('{"code":"injected_fault"')  # the default body, cut in half
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)
    assert client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json() == before  # answered before doing anything


def test_a_malformed_fault_sends_the_given_text_and_status(client):
    page = "<html><body>502 Bad Gateway</body></html>"
    fault = add_fault(client, operation_id="addRecipient", kind="malformed", status=502, text=page, times=None)
    assert fault["text"] == page and fault["times"] is None
    for _ in range(2):
        response = client.post(recipient_path(FULL_ACCOUNT), json={"document_number": CPF_NOT_IN_LIST})
        assert (response.status_code, response.headers["content-type"], response.text) == (
            502,
            "application/json",
            page,
        )
    entries = journal(client)
    assert [(e["status"], e["response_body"]) for e in entries] == [(502, page), (502, page)]
    assert entries[0]["request_body"] == {"document_number": CPF_NOT_IN_LIST}


def test_an_empty_malformed_text_is_an_empty_body(client):
    add_fault(client, operation_id="getExtraordinaryEvent", kind="malformed", text="")
    response = client.get(PENDING_EVENT_PATH)
    assert (response.status_code, response.headers["content-type"], response.content) == (200, "application/json", b"")


def test_malformed_texts_count_against_the_sessions_fault_bytes(client):
    text = "x" * 65536
    for _ in range(MAX_FAULT_BODY_BYTES // len(text)):
        add_fault(client, operation_id="getExtraordinaryEvent", kind="malformed", text=text)
    listed = faults(client)
    assert_error(
        client.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "kind": "malformed", "text": "y"}),
        409,
        "capacity_exceeded",
    )
    assert faults(client) == listed


# --- slow_body ---------------------------------------------------------------------------------------


def test_a_slow_body_without_status_is_the_real_answer(client):
    fault = add_fault(client, operation_id="addRecipient", kind="slow_body", delay_ms=1)
    assert (fault["kind"], fault["status"], fault["delay_ms"]) == ("slow_body", None, 1)
    response = client.post(recipient_path(FULL_ACCOUNT), json={"document_number": CPF_NOT_IN_LIST})
    assert response.status_code == 201
    assert response.json()["recipient_status"] == "created"
    recipients = client.get(f"/__mock/accounts/{FULL_ACCOUNT}").json()["recipient_list"]["recipients"]
    assert CPF_NOT_IN_LIST in [r["document_number"] for r in recipients]  # the call really went through
    assert faults(client) == []


def test_a_slow_body_of_a_rejected_call_is_its_real_error(client):
    add_fault(client, operation_id="addRecipient", kind="slow_body", delay_ms=1)
    assert_error(
        client.post(recipient_path(FULL_ACCOUNT), json={"document_number": CPF_IN_LIST}),
        409,
        "recipient_already_in_list",
    )


def test_a_slow_body_with_status_is_the_injected_answer(client):
    add_fault(
        client, operation_id="registerAccountLimit", kind="slow_body", delay_ms=1, status=503, body={"slow": True}
    )
    response = client.post(REGISTER, json=registration(NEW_ACCOUNT))
    assert (response.status_code, response.json()) == (503, {"slow": True})
    assert_error(client.get(f"/__mock/accounts/{NEW_ACCOUNT}"), 404, "account_not_found")


# --- bad fault requests: 400 with the field, nothing armed ----------------------------------------------

LOOKUP = "getExtraordinaryEvent"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"operation_id": LOOKUP, "kind": "explode"}, ["kind"]),
        ({"operation_id": LOOKUP, "kind": 1}, ["kind"]),
        ({"operation_id": LOOKUP, "kind": None}, ["kind"]),
        ({"operation_id": LOOKUP, "kind": "reset", "status": 503}, ["status"]),
        ({"operation_id": LOOKUP, "kind": "reset", "body": {"x": 1}}, ["body"]),
        ({"operation_id": LOOKUP, "kind": "reset", "text": "x"}, ["text"]),
        ({"operation_id": LOOKUP, "kind": "malformed", "body": {"x": 1}}, ["body"]),
        ({"operation_id": LOOKUP, "kind": "malformed", "status": 204}, ["status"]),
        ({"operation_id": LOOKUP, "kind": "malformed", "status": 304}, ["status"]),
        ({"operation_id": LOOKUP, "kind": "malformed", "text": 7}, ["text"]),
        ({"operation_id": LOOKUP, "kind": "malformed", "text": "x" * 65537}, ["text"]),
        ({"operation_id": LOOKUP, "text": "x"}, ["text"]),  # respond, the default
        ({"operation_id": LOOKUP, "kind": "respond", "status": 500, "text": "x"}, ["text"]),
        ({"operation_id": LOOKUP, "kind": "slow_body", "text": "x", "delay_ms": 5}, ["text"]),
        ({"operation_id": LOOKUP, "kind": "slow_body"}, ["delay_ms"]),
        ({"operation_id": LOOKUP, "kind": "slow_body", "delay_ms": 0}, ["delay_ms"]),
        ({"operation_id": LOOKUP, "kind": "slow_body", "delay_ms": 60001}, ["delay_ms"]),
        ({"operation_id": LOOKUP, "kind": "reset", "status": 500, "body": 1, "text": ""}, ["body", "status", "text"]),
    ],
)
def test_a_bad_fault_kind_is_400_and_arms_nothing(client, body, fields):
    error = assert_error(client.post("/__mock/faults", json=body), 400, "invalid_request", fields)
    assert all(d["message"] for d in error["details"])
    assert faults(client) == []


def test_a_forbidden_combination_says_why(client):
    error = assert_error(
        client.post("/__mock/faults", json={"operation_id": LOOKUP, "kind": "reset", "status": 503}),
        400,
        "invalid_request",
        ["status"],
    )
    assert error["details"][0]["message"] == "is not allowed: kind reset answers nothing: it takes no status (got 503)"


# --- over a real connection --------------------------------------------------------------------------


@pytest.fixture
def served(specs: Specs) -> Iterator[str]:
    """The base URL of a fresh app on a real connection."""
    app = create_app(Settings(validate_responses=True), specs)
    with threaded_server(app) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.mark.own_protocol  # uvicorn's own protocol answers a 500 where a `reset` drops
def test_a_reset_sends_no_byte_and_resets_the_connection(served, caplog):
    url = served
    host, port = url.removeprefix("http://").split(":")
    with httpx.Client(base_url=url) as admin:
        add_fault(admin, operation_id="getExtraordinaryEvent", kind="reset")
        with caplog.at_level(logging.WARNING), socket.create_connection((host, int(port)), timeout=SAFETY) as sock:
            sock.sendall(raw_get(PENDING_EVENT_PATH))
            received, ended = read_to_end(sock)
        assert (received, ended) == (b"", "reset")
        assert [r.getMessage() for r in caplog.records] == []  # no 500, no traceback, no "returned without"
        lookup = admin.get(PENDING_EVENT_PATH)  # the server goes on serving
        assert lookup.status_code == 200
        assert [e["status"] for e in admin.get("/__mock/requests").json()["requests"]] == [None, 200]


@pytest.mark.own_protocol  # uvicorn's own protocol answers a 500 where a `reset` drops
@pytest.mark.e2e  # starts the server or pytest in a child process
def test_the_mock_server_command_resets_too_and_keeps_serving():
    with live_server() as server, httpx.Client(base_url=server.url) as admin:
        add_fault(admin, operation_id="registerAccountLimit", kind="reset")
        body = json.dumps(registration(NEW_ACCOUNT)).encode()
        with server.connect() as sock:
            sock.sendall(
                b"POST /limits/account HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            assert read_to_end(sock) == (b"", "reset")
        assert admin.get(f"/__mock/accounts/{NEW_ACCOUNT}").status_code == 404
        assert admin.post(REGISTER, json=registration(NEW_ACCOUNT)).status_code == 201
        server.terminate()
        _, err = server.proc.communicate(timeout=20)
    assert b"Traceback" not in err and b"ERROR" not in err, err.decode()


def read_exactly(sock: socket.socket, count: int) -> bytes:
    sock.settimeout(SAFETY)
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, f"closed after {len(data)} of {count} bytes"
        data += chunk
    return data


def nothing_more_yet(sock: socket.socket) -> bool:
    """No byte waits to be read (the server is held in a pause, so none is on its way either)."""
    sock.setblocking(False)
    try:
        sock.recv(1)
    except BlockingIOError:
        return True
    finally:
        sock.setblocking(True)
    return False


def test_a_slow_body_arrives_in_pieces_with_pauses_between(served, monkeypatch):
    url = served
    held = HeldPauses()
    monkeypatch.setattr(fault_replies, "sleep", held.sleep)
    host, port = url.removeprefix("http://").split(":")
    with httpx.Client(base_url=url) as admin:
        expected = admin.get(PENDING_EVENT_PATH).content  # the real answer, as it comes at full speed
        add_fault(admin, operation_id="getExtraordinaryEvent", kind="slow_body", delay_ms=1000)
    parts = pieces(expected)
    assert len(parts) == fault_replies.MAX_PIECES
    with socket.create_connection((host, int(port)), timeout=SAFETY) as sock:
        sock.sendall(raw_get(PENDING_EVENT_PATH))
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += read_exactly(sock, 1)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert f"content-length: {len(expected)}\r\n".encode() in head  # the client knows more is coming
        body = b""
        for part in parts:
            held.wait_for_pause()  # the server holds the rest back until this pause ends
            assert nothing_more_yet(sock), "a piece came before its pause ended"
            held.end_pause()
            body += read_exactly(sock, len(part))
        assert body == expected
    assert held.asked == [1.0 / len(parts)] * len(parts)  # spread evenly over delay_ms


def test_a_slow_answer_without_a_body_waits_before_its_head(served, monkeypatch):
    url = served
    held = HeldPauses()
    monkeypatch.setattr(fault_replies, "sleep", held.sleep)
    host, port = url.removeprefix("http://").split(":")
    with httpx.Client(base_url=url) as admin:
        add_fault(admin, operation_id="removeRecipient", kind="slow_body", delay_ms=500)
    with socket.create_connection((host, int(port)), timeout=SAFETY) as sock:
        removal = recipient_path(FULL_ACCOUNT, CPF_RECIPIENT)
        sock.sendall(f"DELETE {removal} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        held.wait_for_pause()
        assert nothing_more_yet(sock)
        held.end_pause()
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            head += read_exactly(sock, 1)
        assert head.startswith(b"HTTP/1.1 204 No Content\r\n")
    assert held.asked == [0.5]


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        pytest.param({"kind": "reset"}, (b"", "reset"), marks=pytest.mark.own_protocol),  # a drop: the protocol's
        ({"kind": "malformed", "status": 502, "text": "<html>"}, (b"HTTP/1.1 502 Bad Gateway\r\n", "eof")),
    ],
)
def test_a_fault_waits_its_delay_before_it_answers(served, monkeypatch, fault, expected):
    url = served
    held = HeldPauses()
    monkeypatch.setattr(fault_replies, "sleep", held.sleep)
    host, port = url.removeprefix("http://").split(":")
    with httpx.Client(base_url=url) as admin:
        add_fault(admin, operation_id="getExtraordinaryEvent", delay_ms=5000, **fault)
    with socket.create_connection((host, int(port)), timeout=SAFETY) as sock:
        sock.sendall(raw_get(PENDING_EVENT_PATH).replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        held.wait_for_pause()
        assert nothing_more_yet(sock)  # held in the delay: no byte yet, and the connection still open
        held.end_pause()
        received, ended = read_to_end(sock)
    assert (received[: len(expected[0])], ended) == expected
    assert held.asked == [5.0]


# --- the pure rule -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "most", "lengths"),
    [
        (0, 10, []),
        (1, 10, [1]),
        (3, 10, [1, 1, 1]),
        (10, 10, [1] * 10),
        (25, 10, [2, 3, 2, 3, 2, 3, 2, 3, 2, 3]),
        (7, 2, [3, 4]),
    ],
)
def test_a_body_is_cut_into_nearly_equal_pieces(size, most, lengths):
    body = bytes(range(size))
    cut = pieces(body, most)
    assert [len(p) for p in cut] == lengths
    assert b"".join(cut) == body
