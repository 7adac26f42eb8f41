"""Tracing on (issue 44): a real OTLP/HTTP exporter sends the mock's spans to a receiver of this process
(tests/otlp_receiver.py), decoded with opentelemetry-proto. The app is called in process; the span queue is flushed by
the test (`flushed`, through the tracer provider), so no test waits for its schedule."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette

from bench.otlp_receiver import Receiver, attributes_of, otlp_receiver
from bench.servers import ACCOUNT, LIMIT_BODY, LIMIT_PATH
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.builders import day_night
from tests.default_scenario import CPF_RECIPIENT, FULL_ACCOUNT, PENDING_EVENT
from tests.helpers import ADMIN_HEADERS
from tests.whole_answer_client import WholeAnswerTestClient

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra")
# A real OTLP/HTTP exporter and the receiver it sends to: a new feature's exporter tests are the e2e tier's
# (`make test-e2e`); tests/telemetry/test_tracing_off.py and test_metrics.py stay in the default tier.
pytestmark = pytest.mark.e2e

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
SERVER_KIND = 2  # opentelemetry.proto.trace.v1.Span.SPAN_KIND_SERVER
STATUS_ERROR = 2  # Status.STATUS_CODE_ERROR


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with otlp_receiver() as found:
        yield found


@pytest.fixture
def traced(receiver: Receiver, specs: Specs) -> Iterator[Starlette]:
    app = create_app(Settings(otel_endpoint=receiver.url, validate_responses=True), specs)
    try:
        yield app
    finally:
        app.state.server.tracing.shutdown()


def client_of(app: Starlette) -> WholeAnswerTestClient:
    return WholeAnswerTestClient(app, headers=ADMIN_HEADERS)


def flushed(app: Starlette, receiver: Receiver) -> list[tuple[dict[str, Any], Any]]:
    """Every span the app made so far, as the receiver got them."""
    assert app.state.server.tracing.provider.force_flush(5000)
    return receiver.spans()


def only_span(spans: list[tuple[dict[str, Any], Any]], name: str) -> Any:
    found = [span for _, span in spans if span.name == name]
    assert len(found) == 1, [span.name for _, span in spans]
    return found[0]


def events_of(span: Any) -> dict[str, dict[str, Any]]:
    return {event.name: attributes_of(event.attributes) for event in span.events}


def test_a_lookup_with_a_traceparent_is_one_server_span_in_that_trace(traced: Starlette, receiver: Receiver) -> None:
    client = client_of(traced)
    answer = client.get(LOOKUP, headers={"traceparent": TRACEPARENT, "tracestate": "vendor=1"})
    assert answer.status_code == 200
    spans = flushed(traced, receiver)
    span = only_span(spans, "GET /event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}")
    resource = spans[0][0]
    assert resource["service.name"] == "pix-limits-mock-server"
    assert span.kind == SERVER_KIND
    assert span.trace_id.hex() == TRACE_ID and span.parent_span_id.hex() == PARENT_ID
    assert span.trace_state == "vendor=1"
    assert attributes_of(span.attributes) == {
        "http.request.method": "GET",
        "http.route": "/event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}",
        "http.response.status_code": 200,
        "url.path": LOOKUP,
        "pix_mock.operation_id": "getExtraordinaryEvent",
        "pix_mock.session": "default",
        "pix_mock.scenario": "default",
        "pix_mock.mock_defined": False,
    }
    assert span.end_time_unix_nano >= span.start_time_unix_nano > 0
    # The journal names the same trace and the span; the filter finds the entry, and only it.
    client.get(LOOKUP)  # another trace
    entries = client.get("/__mock/requests").json()["requests"]
    assert entries[0]["trace_id"] == TRACE_ID
    assert entries[0]["span_id"] == span.span_id.hex()
    other = entries[1]["trace_id"]
    assert other != TRACE_ID and len(other) == 32 and len(entries[1]["span_id"]) == 16
    found = client.get("/__mock/requests", params={"trace_id": TRACE_ID}).json()["requests"]
    assert [(e["trace_id"], e["span_id"]) for e in found] == [(TRACE_ID, span.span_id.hex())]


def test_paying_an_event_through_the_admin_api_is_a_span_with_the_paid_event(
    traced: Starlette, receiver: Receiver
) -> None:
    client = client_of(traced)
    assert client.post(f"/__mock/events/{PENDING_EVENT}/pay", json={"amount": 100}).status_code == 200
    assert client.post(f"/__mock/events/{PENDING_EVENT}/pay").status_code == 200
    route = "POST /__mock/events/{extraordinary_event_conciliation_key}/pay"
    spans = [span for _, span in flushed(traced, receiver) if span.name == route]
    assert [list(events_of(span)) for span in spans] == [["pix_mock.event.partially_paid"], ["pix_mock.event.paid"]]
    assert events_of(spans[1])["pix_mock.event.paid"]["pix_mock.event.key"] == PENDING_EVENT
    attributes = attributes_of(spans[1].attributes)
    assert attributes["pix_mock.operation_id"] == "mockPayEvent" and attributes["pix_mock.mock_defined"] is True
    assert spans[1].parent_span_id == b""  # no traceparent: a trace of its own
    event = spans[1].events[0]
    assert spans[1].start_time_unix_nano <= event.time_unix_nano <= spans[1].end_time_unix_nano


def test_an_injected_fault_s_span_names_it_and_a_5xx_is_an_error(traced: Starlette, receiver: Receiver) -> None:
    client = client_of(traced)
    fault = client.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503}).json()
    assert client.get(LOOKUP).status_code == 503
    span = only_span(
        flushed(traced, receiver), "GET /event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}"
    )
    attributes = attributes_of(span.attributes)
    assert attributes["pix_mock.fault_id"] == fault["fault_id"]
    assert attributes["pix_mock.mock_defined"] is True and attributes["http.response.status_code"] == 503
    assert events_of(span)["pix_mock.fault.injected"] == {
        "pix_mock.fault_id": fault["fault_id"],
        "pix_mock.fault.kind": "respond",
        "pix_mock.fault.status": 503,
    }
    assert span.status.code == STATUS_ERROR


def test_the_clock_and_a_schedule_it_brings_due_are_events_of_the_advance(
    traced: Starlette, receiver: Receiver
) -> None:
    client = client_of(traced)
    assert client.put("/__mock/clock", json={"now": "2026-11-21T10:00:00-03:00"}).status_code == 200
    schedule = {"action": "cancel", "at": "2026-11-21T11:00:00-03:00"}
    assert client.post(f"/__mock/events/{PENDING_EVENT}/schedule", json=schedule).status_code == 201
    assert client.post("/__mock/clock/advance", json={"seconds": 7200}).status_code == 200
    spans = flushed(traced, receiver)
    assert list(events_of(only_span(spans, "PUT /__mock/clock"))) == ["pix_mock.clock.set"]
    advanced = events_of(only_span(spans, "POST /__mock/clock/advance"))
    assert list(advanced) == ["pix_mock.clock.advanced", "pix_mock.event.canceled"]
    assert advanced["pix_mock.clock.advanced"]["pix_mock.clock.seconds"] == 7200.0
    assert advanced["pix_mock.event.canceled"] == {"pix_mock.event.key": PENDING_EVENT}


def test_the_limit_domain_s_changes_are_events(traced: Starlette, receiver: Receiver) -> None:
    client = client_of(traced)
    answer = client.post(LIMIT_PATH, content=LIMIT_BODY, headers={"Content-Type": "application/json"})
    assert answer.status_code == 201, answer.text
    refused = client.post(LIMIT_PATH, json={"pix": "nothing"})
    spans = flushed(traced, receiver)
    proposed = events_of(spans[0][1])["pix_mock.limit_change.proposed"]
    assert proposed == {
        "pix_mock.account.id": ACCOUNT,
        "pix_mock.limit_change.id": answer.json()["limit_update_request_id"],
        "pix_mock.limit_change.target": "account",
        "pix_mock.limit_change.status": answer.json()["limit_update_request_status"],
    }
    assert refused.status_code == 400 and list(events_of(spans[1][1])) == []  # refused: nothing changed


def test_accounts_and_recipients_are_events(traced: Starlette, receiver: Receiver) -> None:
    client = client_of(traced)
    registration = {
        "account_id": "new-0001",
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": day_night(500000, 300000)}},
    }
    assert client.post("/limits/account", json=registration).status_code == 201
    recipients = f"/limits/account/{FULL_ACCOUNT}/recipient_list/recipient"
    added = client.post(recipients, json={"document_number": "529.982.247-25"})
    assert added.status_code == 201, added.text
    recipient_id = added.json()["recipient_id"]
    assert client.delete(f"{recipients}/{CPF_RECIPIENT}").status_code < 300
    spans = [span for _, span in flushed(traced, receiver)]
    assert [events_of(span) for span in spans] == [
        {"pix_mock.account.registered": {"pix_mock.account.id": "new-0001"}},
        {"pix_mock.recipient.added": {"pix_mock.account.id": FULL_ACCOUNT, "pix_mock.recipient.id": recipient_id}},
        {"pix_mock.recipient.removed": {"pix_mock.account.id": FULL_ACCOUNT, "pix_mock.recipient.id": CPF_RECIPIENT}},
    ]


def test_the_session_an_eviction_made_room_for_notes_it(receiver: Receiver, specs: Specs) -> None:
    app = create_app(Settings(otel_endpoint=receiver.url, max_sessions=1), specs)
    try:
        client = client_of(app)
        assert client.get(LOOKUP, headers={"X-Mock-Session": "first"}).status_code == 200
        assert client.get(LOOKUP, headers={"X-Mock-Session": "second"}).status_code == 200
        spans = [span for _, span in flushed(app, receiver)]
    finally:
        app.state.server.tracing.shutdown()
    assert [events_of(span) for span in spans] == [{}, {"pix_mock.session.evicted": {"pix_mock.session": "first"}}]
    assert attributes_of(spans[1].attributes)["pix_mock.session"] == "second"


def test_answers_are_byte_for_byte_the_same_with_tracing_on_and_off(
    traced: Starlette, receiver: Receiver, specs: Specs
) -> None:
    plain = create_app(Settings(validate_responses=True), specs)
    calls: list[tuple[str, str, Any]] = [
        ("PUT", "/__mock/clock", {"now": "2026-11-21T10:00:00-03:00"}),  # the answers' instants: the same
        ("GET", LOOKUP, None),
        ("GET", "/event_conciliation/extraordinary_event/not-a-uuid", None),
        ("POST", f"/__mock/events/{PENDING_EVENT}/pay", {"amount": 10}),
        ("GET", LOOKUP, None),
        ("POST", "/__mock/faults", {"operation_id": "getExtraordinaryEvent", "status": 500}),
        ("GET", LOOKUP, None),
        ("GET", "/__mock/clock", None),
    ]
    answers = []
    for app in (traced, plain):
        client = client_of(app)
        seen = []
        for method, path, body in calls:
            answer = client.request(method, path, json=body, headers={"traceparent": TRACEPARENT})
            headers = [(k, v) for k, v in answer.headers.multi_items() if k != "date"]
            seen.append((answer.status_code, headers, answer.content))
        answers.append(seen)
    assert answers[0] == answers[1]
    assert len(flushed(traced, receiver)) == len(calls)


def test_a_collector_that_cannot_be_reached_costs_one_warning_and_no_answer(
    specs: Specs, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with otlp_receiver() as gone:
        url = gone.url  # its port, closed once the block ends
    # The exporter retries a batch until its timeout (the SDK's variable, read by the SDK): short, for the test.
    # Older exporters read it as whole seconds, and do not retry a refused connection: any value does there.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "0.2")
    try:
        OTLPSpanExporter().shutdown()
    except ValueError:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    app = create_app(Settings(otel_endpoint=url), specs)
    tracing = app.state.server.tracing
    client = client_of(app)
    try:
        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                assert client.get(LOOKUP).status_code == 200
                tracing.provider.force_flush(5000)
    finally:
        tracing.shutdown()
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1 and "spans could not be sent to the OTLP collector" in said[0], said


def test_a_caller_that_does_not_sample_gets_no_span_sent(traced: Starlette, receiver: Receiver) -> None:
    """OTEL_TRACES_SAMPLER's default (parentbased_always_on) follows the traceparent's sampled flag."""
    client = client_of(traced)
    assert client.get(LOOKUP, headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-00"}).status_code == 200
    assert client.get(LOOKUP, headers={"traceparent": TRACEPARENT}).status_code == 200
    spans = flushed(traced, receiver)
    entries = client.get("/__mock/requests").json()["requests"]
    assert [e["trace_id"] for e in entries] == [TRACE_ID, TRACE_ID]  # both journaled in the caller's trace
    assert [span.span_id.hex() for _, span in spans] == [entries[1]["span_id"]]  # the sampled call's span alone
