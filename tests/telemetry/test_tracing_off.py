"""Tracing off (issue 44): journal entries still carry an incoming traceparent's trace, and the filter finds them.
(That a lookup then imports neither OpenTelemetry nor prometheus_client: tests/test_start_weight.py, in a fresh
interpreter.) And the rules of the pure parts: which setting turns tracing on, what a traceparent holds."""

from __future__ import annotations

import pytest

from mock_server.telemetry.trace_context import is_trace_id, parent_of
from mock_server.telemetry.tracing import start_tracing, tracing_endpoint
from tests.default_scenario import PENDING_EVENT
from tests.helpers import Client

LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_the_journal_keeps_an_incoming_trace_with_tracing_off(client: Client) -> None:
    client.get(LOOKUP, headers={"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"})
    client.get(LOOKUP, headers={"traceparent": "00-" + "0" * 32 + "-00f067aa0ba902b7-01"})  # invalid: ignored
    client.get(LOOKUP)
    entries = client.get("/__mock/requests").json()["requests"]
    assert [(e["trace_id"], e["span_id"]) for e in entries] == [(TRACE_ID, None), (None, None), (None, None)]
    found = client.get("/__mock/requests", params={"trace_id": TRACE_ID}).json()["requests"]
    assert len(found) == 1 and found[0]["request_headers"]["traceparent"].startswith("00-4bf9")


@pytest.mark.parametrize("bad", ["4BF92F3577B34DA6A3CE929D0E0E4736", "4bf92f", "x" * 32, TRACE_ID + "0"])
def test_a_trace_id_filter_that_is_no_trace_id_is_refused(client: Client, bad: str) -> None:
    answer = client.get("/__mock/requests", params={"trace_id": bad})
    assert answer.status_code == 400
    assert [d["field"] for d in answer.json()["details"]] == ["trace_id"]


def test_which_setting_turns_tracing_on() -> None:
    assert tracing_endpoint(None, {}) is None
    assert tracing_endpoint(None, {"OTEL_SERVICE_NAME": "x"}) is None
    assert tracing_endpoint(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == "http://c:4318"
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t/v1/traces"}
    assert tracing_endpoint(None, both) == "http://t/v1/traces"
    assert tracing_endpoint("http://o:4318", both) == "http://o:4318"
    assert start_tracing(None, None, {}) is None  # type: ignore[arg-type]  # off: the specs are never read


@pytest.mark.parametrize(
    ("header", "parent"),
    [
        (f"00-{TRACE_ID}-00f067aa0ba902b7-01", (TRACE_ID, "00f067aa0ba902b7")),
        (f" 00-{TRACE_ID}-00f067aa0ba902b7-00 ", (TRACE_ID, "00f067aa0ba902b7")),
        (f"01-{TRACE_ID}-00f067aa0ba902b7-01-later", (TRACE_ID, "00f067aa0ba902b7")),  # a later version's field
        (f"00-{TRACE_ID}-00f067aa0ba902b7-01-later", None),  # version 00 has no more fields
        (f"ff-{TRACE_ID}-00f067aa0ba902b7-01", None),
        (f"00-{TRACE_ID.upper()}-00f067aa0ba902b7-01", None),
        (f"00-{TRACE_ID}-0000000000000000-01", None),
        ("00-" + "0" * 32 + "-00f067aa0ba902b7-01", None),
        ("garbage", None),
        (None, None),
        ("00-" + "a" * 600, None),
    ],
)
def test_what_a_traceparent_holds(header: str | None, parent: tuple[str, str] | None) -> None:
    assert parent_of(header) == parent


def test_a_trace_id_is_32_lower_case_hex_digits_not_all_zero() -> None:
    assert is_trace_id(TRACE_ID)
    assert not is_trace_id("0" * 32) and not is_trace_id(TRACE_ID.upper()) and not is_trace_id(TRACE_ID[:-1])
