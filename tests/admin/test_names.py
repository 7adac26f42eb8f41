"""Names and counts a client gives the server (issue 24): `.` and `..` name no session (every HTTP client drops them
from a URL: a test using /__session/.. once froze the default session's clock); a snapshot's name follows the
session-name rule; an integer the server echoes stays one every JSON reader holds (at most 2^53 - 1)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.helpers import Client, assert_error
from tests.threaded_server import exchange, threaded_server

MAX_SAFE_INTEGER = 2**53 - 1


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_names_no_session_anywhere_a_name_is_given(client: Client, name: str) -> None:
    assert_error(client.post("/__mock/sessions", json={"name": name}), 400, "invalid_request", ["name"])
    assert_error(client.get("/__mock/clock", headers={"X-Mock-Session": name}), 400, "invalid_request")
    body = assert_error(
        client.put("/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"}, headers={"X-Mock-Session": name}),
        400,
        "invalid_request",
        ["X-Mock-Session"],
    )
    assert "not `.` or `..`" in body["details"][0]["message"]


@pytest.fixture(scope="module")
def port(specs: Specs) -> Iterator[int]:
    with threaded_server(create_app(Settings(), specs)) as serving:
        yield serving


@pytest.mark.parametrize("step", [".", ".."])
def test_a_dot_step_sent_as_is_in_a_session_url_is_400_and_the_default_clock_stays(port: int, step: str) -> None:
    """What `curl --path-as-is` sends (other clients remove the step before sending, so no server can see it)."""
    body = b'{"now": "2026-11-21T10:00:00-03:00"}'
    raw = (
        f"PUT /__session/{step}/__mock/clock HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    received, _ = exchange(port, raw)
    assert received.startswith(b"HTTP/1.1 400 ") and b'"field":"__session"' in received, received
    assert httpx.get(f"http://127.0.0.1:{port}/__mock/clock").json()["frozen"] is False
    snapshot = (
        f"POST /__mock/snapshots/{step} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Mock-Admin: 1\r\nConnection: close\r\n\r\n"
    )
    received, _ = exchange(port, snapshot.encode())
    assert received.startswith(b"HTTP/1.1 400 ") and b'"field":"name"' in received, received


BAD_SNAPSHOT_NAMES = {
    "a newline": "a%0Ab",
    "markup": "%3Cb%3E",
    "5,000 characters": "x" * 5000,
    "byte FF": "%FF",
    "byte FE": "%FE",
    "a space": "before%20payment",
}


@pytest.mark.parametrize("raw_name", BAD_SNAPSHOT_NAMES.values(), ids=BAD_SNAPSHOT_NAMES.keys())
def test_a_snapshot_name_follows_the_session_name_rule(client: Client, raw_name: str) -> None:
    assert_error(client.post(f"/__mock/snapshots/{raw_name}"), 400, "invalid_request", ["name"])
    assert client.get("/__mock/snapshots").json()["snapshots"] == []


def test_bytes_that_are_not_utf8_never_overwrite_another_snapshot(client: Client) -> None:
    """%FF and %FE both decode to U+FFFD: taken as names, the second replaced the first."""
    for raw_name in ("%FF", "%FE"):
        assert_error(client.post(f"/__mock/snapshots/{raw_name}"), 400, "invalid_request", ["name"])
    assert_error(client.post("/__mock/snapshots/%FF/restore"), 404, "snapshot_not_found")


@pytest.mark.parametrize("name", ["a", "before-payment", "A_Z.0-9", "...", "x" * 64])
def test_a_valid_snapshot_name_is_taken_read_and_forgotten(client: Client, name: str) -> None:
    assert client.post(f"/__mock/snapshots/{name}").json()["name"] == name
    assert client.get(f"/__mock/snapshots/{name}").status_code == 200
    assert client.delete(f"/__mock/snapshots/{name}").status_code == 204


def test_an_unknown_snapshot_is_404_however_written(client: Client) -> None:
    for raw_name in ("x" * 5000, "a%0Ab", "%FF"):
        assert_error(client.get(f"/__mock/snapshots/{raw_name}"), 404, "snapshot_not_found")


FAULT = {"operation_id": "getExtraordinaryEvent", "status": 503}


@pytest.mark.parametrize("times", [MAX_SAFE_INTEGER + 1, 2**64, 2**70])
def test_fault_times_past_2_53_is_400(client: Client, times: int) -> None:
    body = assert_error(
        client.post("/__mock/faults", json={**FAULT, "times": times}), 400, "invalid_request", ["times"]
    )
    assert "must be at most 9007199254740991" in body["details"][0]["message"]


def test_fault_times_up_to_2_53_is_echoed_exactly(client: Client) -> None:
    fault = client.post("/__mock/faults", json={**FAULT, "times": MAX_SAFE_INTEGER})
    assert fault.status_code == 201
    assert fault.json()["times"] == MAX_SAFE_INTEGER
    assert client.get("/__mock/faults").json()["faults"][0]["times"] == MAX_SAFE_INTEGER


@pytest.mark.parametrize("count", ["times", "at_least", "at_most"])
def test_verify_counts_past_2_53_are_400(client: Client, count: str) -> None:
    request: dict[str, Any] = {"operation_id": "getExtraordinaryEvent", count: 2**70}
    assert_error(client.post("/__mock/verify", json=request), 400, "invalid_request", [count])
