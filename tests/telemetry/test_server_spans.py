"""The server's spans (telemetry/otel.py): queued as the facts the request recorded, written by otlp_wire's fast road,
and read by the SDK (its encoder, any exporter) as the ReadableSpan those facts make. Both roads give the same bytes;
the samplers whose decisions the tracer knows without asking decide as the sampler itself would."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra")

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
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
from mock_server.telemetry.otel import OtelTracer, sampler_table
from mock_server.telemetry.otlp_wire import BatchEncoder
from tests.default_scenario import PENDING_EVENT

LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SAMPLED_PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"
UNSAMPLED_PARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-00"


@pytest.fixture
def tracer(specs: Specs) -> Iterator[OtelTracer]:
    # Nothing is sent: the tests take the queued facts before the queue's thread would (its delay is 5 s).
    app = create_app(Settings(otel_endpoint="http://127.0.0.1:9"), specs)
    found: OtelTracer = app.state.server.tracing
    yield found
    found.spans.pending.clear()
    found.shutdown()


def queued(tracer: OtelTracer, calls: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What the tracer queues for these calls, taken off its queue."""
    pending = tracer.spans.pending
    pending.clear()
    for call in calls:
        headers = [(b"traceparent", call["traceparent"].encode())] if "traceparent" in call else []
        if "tracestate" in call:
            headers.append((b"tracestate", call["tracestate"].encode()))
        trace_id, span_id, traceparent = tracer.ids(headers)
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
    taken = list(pending)
    pending.clear()
    return taken


def recorded(tracer: OtelTracer, calls: list[dict[str, Any]]) -> list[Any]:
    """The facts of the spans the queue's thread keeps of these calls (the known sampler's decision made)."""
    return [facts for facts in (tracer.facts(*one) for one in queued(tracer, calls)) if facts is not None]


def readable(tracer: OtelTracer, kept: list[Any]) -> list[ReadableSpan]:
    """The SDK's ReadableSpans of these facts (the sampler not asked: every one is made)."""
    spans = [tracer.readable(facts) for facts in kept]
    return [span for span in spans if span is not None]


def sent(tracer: OtelTracer, batch: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the queue's thread hands the exporter for a batch of queued calls: ReadableSpans, or the bytes it
    writes."""
    handed: list[Any] = []
    exporter = tracer.exporter
    monkeypatch.setattr(exporter, "export", lambda spans: handed.extend(spans))
    monkeypatch.setattr(exporter, "send", lambda encode, count: handed.append(encode()))
    tracer._send(batch)
    return handed


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
    kept = recorded(tracer, calls)
    assert len(kept) == len(calls)
    fast = BatchEncoder().server_request(tracer.resource, tracer.scope, kept)
    assert fast == encode_spans(readable(tracer, kept)).SerializePartialToString()  # the SDK: each span built


@pytest.mark.parametrize("calls", CALLS.values(), ids=CALLS.keys())
def test_a_batch_is_sent_as_those_bytes(
    tracer: OtelTracer, calls: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not tracer.exporter.sends_bytes:
        pytest.skip("this exporter (before 1.40) encodes and sends its batches itself")
    batch = queued(tracer, calls)
    (data,) = sent(tracer, batch, monkeypatch)
    kept = [facts for facts in (tracer.facts(*one) for one in batch) if facts is not None]
    assert data == encode_spans(readable(tracer, kept)).SerializePartialToString()


def test_a_request_queues_its_facts_and_the_thread_makes_the_span(tracer: OtelTracer) -> None:
    (one,) = queued(tracer, [{"traceparent": SAMPLED_PARENT, "tracestate": "vendor=opaque"}])
    assert type(one) is tuple  # what the request path pays for: a tuple appended, no span object
    (facts,) = recorded(tracer, [{"traceparent": SAMPLED_PARENT, "tracestate": "vendor=opaque"}])
    span = tracer.readable(facts)
    assert span is not None
    context = span.context
    assert context.is_valid and context.trace_flags.sampled and not context.is_remote
    assert f"{context.trace_id:032x}" == TRACE_ID
    assert span.parent is not None and span.parent.span_id == 0x00F067AA0BA902B7 and span.parent.is_remote
    assert dict(span.parent.trace_state) == {"vendor": "opaque"}
    assert span.name == "GET /event_conciliation/extraordinary_event/{extraordinary_event_conciliation_key}"
    assert span.kind is SpanKind.SERVER
    assert span.attributes is not None and span.attributes["pix_mock.operation_id"] == "getExtraordinaryEvent"


def test_record_queues_its_arguments_in_the_order_facts_takes_them() -> None:
    """`record` packs a tuple that `facts(*queued)` spreads: the two parameter lists are one order, written twice
    (typed on both sides, with no object made per request), and kept in step here."""
    recorded = list(inspect.signature(OtelTracer.record).parameters)
    assert recorded == list(inspect.signature(OtelTracer.facts).parameters)
    source = inspect.getsource(OtelTracer.record)
    packed = source[source.index("pending.append(") :]
    assert [name for name in recorded[1:] if f"{name}," not in packed] == []  # every one queued...
    assert sorted(recorded[1:], key=lambda name: packed.index(f"{name},")) == recorded[1:]  # ...in this order


def test_the_default_sampler_drops_a_span_whose_caller_does_not_sample(tracer: OtelTracer) -> None:
    kept = recorded(tracer, [{"traceparent": UNSAMPLED_PARENT}, {"traceparent": SAMPLED_PARENT}, {}])
    assert [facts.parent is not None for facts in kept] == [True, False]


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


def test_any_other_sampler_is_asked(tracer: OtelTracer, monkeypatch: pytest.MonkeyPatch) -> None:
    assert sampler_table(TraceIdRatioBased(0.5)) is None
    assert sampler_table(ParentBased(TraceIdRatioBased(0.5))) is None

    class Mine(ParentBased):
        pass

    assert sampler_table(Mine(ALWAYS_ON)) is None
    tracer._sampler, tracer._decide = ALWAYS_OFF, None  # asked, and it drops every span
    assert sent(tracer, queued(tracer, [{}, {"traceparent": SAMPLED_PARENT}]), monkeypatch) == []
    tracer._sampler = ALWAYS_ON
    monkeypatch.setattr(tracer.exporter, "sends_bytes", True)  # asked even when the bytes could be written here
    (span,) = sent(tracer, queued(tracer, [{}]), monkeypatch)
    assert isinstance(span, ReadableSpan) and span.attributes is not None
    assert span.attributes["pix_mock.session"] == "default"


def test_batches_go_through_the_exporters_own_client_when_it_has_one(tracer: OtelTracer) -> None:
    inner: Any = tracer.exporter.inner
    if not hasattr(inner, "_client"):
        pytest.skip("this exporter (before 1.40) encodes and sends its batches itself")
    assert tracer.exporter.sends_bytes
