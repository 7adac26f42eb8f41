"""The server's spans (telemetry/otel.py): kept as the facts the request recorded, written by otlp_wire's fast road,
and read by the SDK (its encoder, any exporter) as the ReadableSpan those facts make. Both roads give the same bytes;
the samplers whose decisions the tracer knows without asking decide as the sampler itself would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra")

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    Decision,
    ParentBased,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import NonRecordingSpan, SpanKind, set_span_in_context

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.telemetry.otel import OtelTracer, ServerSpan, sampler_table
from mock_server.telemetry.otlp_wire import BatchEncoder
from tests.default_scenario import PENDING_EVENT

LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SAMPLED_PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
UNSAMPLED_PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-00"


@pytest.fixture
def tracer(specs: Specs) -> Iterator[OtelTracer]:
    app = create_app(Settings(otel_endpoint="http://127.0.0.1:9"), specs)  # nothing is sent: on_end is replaced
    found: OtelTracer = app.state.server.tracing
    yield found
    found.provider.shutdown()


def recorded(tracer: OtelTracer, calls: list[dict[str, Any]]) -> list[Any]:
    """The spans the tracer hands its processor for these calls."""
    spans: list[Any] = []
    tracer.processor.on_end = spans.append  # type: ignore[method-assign,assignment]
    for call in calls:
        headers = [(b"traceparent", call["traceparent"].encode())] if "traceparent" in call else []
        if "tracestate" in call:
            headers.append((b"tracestate", call["tracestate"].encode()))
        _, traceparent, trace_id, span_id = tracer.ids(headers)
        tracer.record(
            trace_id,
            span_id,
            traceparent,
            headers,
            call.get("operation_id", "getExtraordinaryEvent"),
            call.get("method", "GET"),
            call.get("path", LOOKUP),
            call.get("status", 200),
            call.get("session", "default"),
            call.get("scenario", "default"),
            call.get("fault_id"),
            call.get("off_interface", False),
            call.get("events"),
            1_764_650_000_000_000_000,
            1_764_650_000_000_250_000,
        )
    return spans


CALLS = {
    "a lookup": [{}],
    "under a sampled remote parent, with its trace state": [
        {"traceparent": SAMPLED_PARENT, "tracestate": "vendor=opaque,other=1"}
    ],
    "a limit change with its domain events": [
        {
            "operation_id": "changePixLimit",
            "method": "POST",
            "path": "/pix_limits/accounts/0001-123456/limit_changes",
            "status": 201,
            "events": [
                ("pix_mock.limit_change.proposed", {"pix_mock.account_id": "0001-123456", "pix_mock.value": 10.5}, 7),
                ("pix_mock.clock.advanced", {}, 8),
            ],
        }
    ],
    "a dropped connection and a fault": [{"status": None, "fault_id": "f-1", "off_interface": True}],
    "a 5xx and an admin call in a named session": [
        {"status": 503},
        {"operation_id": "resetState", "method": "POST", "path": "/__mock/reset", "session": "t-1", "scenario": None},
    ],
    "long and non-ASCII paths": [
        {"path": "/event_conciliation/extraordinary_event/" + "é" * 200},
        {"path": "/" + "a" * 113},
    ],
    "many sets of attributes": [{"session": f"s-{number}", "status": 200 + number % 3} for number in range(40)],
}


@pytest.mark.parametrize("calls", CALLS.values(), ids=CALLS.keys())
def test_the_fast_road_writes_what_the_sdk_reads(tracer: OtelTracer, calls: list[dict[str, Any]]) -> None:
    spans = recorded(tracer, calls)
    assert spans and all(type(span) is ServerSpan for span in spans)
    fast = BatchEncoder().request(spans)
    assert fast == encode_spans(spans).SerializePartialToString()  # the SDK builds each span from its facts


def test_the_processor_reads_only_the_context(tracer: OtelTracer) -> None:
    (span,) = recorded(tracer, [{"traceparent": SAMPLED_PARENT}])
    context = span.context
    assert span._built is None  # what the batch processor asks (is it sampled?) builds nothing else
    assert context.is_valid and context.trace_flags.sampled and not context.is_remote
    assert f"{context.trace_id:032x}" == TRACE_ID
    assert span.parent.span_id == 0x00F067AA0BA902B7 and span.parent.is_remote
    assert span.name == "GET /event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}"
    assert span.kind is SpanKind.SERVER
    assert span.attributes["pix_mock.operation_id"] == "getExtraordinaryEvent"
    assert span._built is not None


SAMPLERS = {
    "always_on": ALWAYS_ON,
    "always_off": ALWAYS_OFF,
    "parentbased_always_on": ParentBased(ALWAYS_ON),
    "parentbased_always_off": ParentBased(ALWAYS_OFF),
}


@pytest.mark.parametrize("sampler", SAMPLERS.values(), ids=SAMPLERS.keys())
def test_a_known_sampler_is_answered_as_it_answers(sampler: Sampler, tracer: OtelTracer) -> None:
    from mock_server.telemetry.otel import _remote_parent

    table = sampler_table(sampler)
    assert table is not None
    for row, traceparent in enumerate((None, SAMPLED_PARENT, UNSAMPLED_PARENT)):
        parent = _remote_parent(traceparent, []) if traceparent else None
        context = set_span_in_context(NonRecordingSpan(parent)) if parent is not None else Context()
        answer = sampler.should_sample(context, int(TRACE_ID, 16), "GET /x", SpanKind.SERVER, {"a": 1})
        assert table[row] is (answer.decision is Decision.RECORD_AND_SAMPLE), (row, answer.decision)
        if table[row]:
            assert dict(answer.attributes) == {"a": 1}


def test_any_other_sampler_is_asked(tracer: OtelTracer) -> None:
    assert sampler_table(TraceIdRatioBased(0.5)) is None
    assert sampler_table(ParentBased(TraceIdRatioBased(0.5))) is None

    class Mine(ParentBased):
        pass

    assert sampler_table(Mine(ALWAYS_ON)) is None
    tracer._sampler, tracer._decide = ALWAYS_OFF, None  # asked, and it drops every span
    assert recorded(tracer, [{}, {"traceparent": SAMPLED_PARENT}]) == []
    tracer._sampler = ALWAYS_ON
    (span,) = recorded(tracer, [{}])
    assert type(span) is not ServerSpan and span.attributes["pix_mock.session"] == "default"


def test_batches_go_through_the_exporters_own_client_when_it_has_one(tracer: OtelTracer) -> None:
    exporting: Any = tracer.processor.span_exporter if hasattr(tracer.processor, "span_exporter") else None
    exporting = exporting or tracer.processor._batch_processor._exporter
    inner = exporting.inner
    if not hasattr(inner, "_client"):
        pytest.skip("this exporter (before 1.40) encodes and sends its batches itself")
    assert exporting.sends_bytes
