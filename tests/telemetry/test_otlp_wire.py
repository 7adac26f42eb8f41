"""telemetry/otlp_wire.py writes the bytes the SDK's own encoder writes (`encode_spans(spans)`, serialized), for
every shape a ReadableSpan can take and for the spans the server makes from their facts (telemetry/otel.py's
SpanFacts); decoded with opentelemetry-proto."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from opentelemetry.util.types import Attributes

from mock_server.telemetry.otlp_wire import MAX_CACHED, BatchEncoder, varint

RESOURCE = Resource.create({"service.name": "pix-limits-mock-server", "deployment.environment": "ci"})
SCOPE = InstrumentationScope("mock_server")
SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def span(
    number: int = 1,
    *,
    name: str = "GET /accounts/{account_id}",
    kind: SpanKind = SpanKind.SERVER,
    parent: SpanContext | None = None,
    attributes: Attributes = None,
    events: tuple[Event, ...] = (),
    links: tuple[Link, ...] = (),
    status: Status | None = None,
    trace_state: TraceState | None = None,
    resource: Resource = RESOURCE,
    scope: InstrumentationScope | None = SCOPE,
) -> ReadableSpan:
    context = SpanContext(
        0x5B8EFFF798038103D269B633813FC60C + number, 0xEEE19B7EC3C1B174 + number, False, SAMPLED, trace_state
    )
    return ReadableSpan(
        name,
        context,
        parent,
        resource,
        attributes if attributes is not None else {"http.request.method": "GET", "pix_mock.session": "default"},
        events,
        links,
        kind,
        status=status if status is not None else Status(StatusCode.UNSET),
        start_time=1_764_650_000_000_000_000 + number,
        end_time=1_764_650_000_000_250_000 + number,
        instrumentation_scope=scope,
    )


def sdk_bytes(spans: list[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializePartialToString()


SHAPES = {
    "a lookup as the server makes it": [span()],
    "a remote parent with its trace state": [
        span(
            parent=SpanContext(0x1, 0xABCDEF, True, SAMPLED),
            trace_state=TraceState([("vendor", "opaque"), ("other", "x=1")]),
        )
    ],
    "a local parent": [span(parent=SpanContext(0x1, 0x42, False, SAMPLED))],
    "every attribute type": [
        span(
            attributes={
                "str": "é ascii and not",
                "empty": "",
                "true": True,
                "false": False,
                "zero": 0,
                "int": 201,
                "negative": -7,
                "large": 2**62,
                "float": 0.25,
                "strings": ("a", "b"),
                "ints": [1, 2, 3],
                "bools": [True, False],
                "empty list": [],
            }
        )
    ],
    "domain events with their ids": [
        span(
            events=(
                Event("pix_mock.event.paid", {"pix_mock.event_key": "9f1c", "pix_mock.amount": 10.5}, 1_764_650_000_1),
                Event("pix_mock.clock.advanced", {}, 1_764_650_000_2),
                Event("pix_mock.fault.injected", None, 1_764_650_000_3),
            )
        )
    ],
    "an error with and without a description": [
        span(1, status=Status(StatusCode.ERROR)),
        span(2, status=Status(StatusCode.ERROR, "connection dropped")),
        span(3, status=Status(StatusCode.OK)),
    ],
    "every kind": [span(number, kind=kind) for number, kind in enumerate(SpanKind)],
    "links": [
        span(
            links=(
                Link(SpanContext(0x9, 0x8, True, SAMPLED), {"why": "retry"}),
                Link(SpanContext(0x7, 0x6, False, SAMPLED)),
            )
        )
    ],
    "two resources and scopes, interleaved": [
        span(1),
        span(2, resource=Resource({"service.name": "other"}, "https://opentelemetry.io/schemas/1.21.0")),
        span(3, scope=InstrumentationScope("other", "1.2")),
        span(4),
        span(5, scope=None),
    ],
    "no attributes at all": [span(attributes={}, name="")],
}


@pytest.mark.parametrize("spans", SHAPES.values(), ids=SHAPES.keys())
def test_the_bytes_are_the_sdks(spans: list[ReadableSpan]) -> None:
    encoder = BatchEncoder()
    assert encoder.request(spans) == sdk_bytes(spans)
    assert encoder.request(spans) == sdk_bytes(spans)  # again, from what it kept


def test_a_scopes_attributes_and_schema_are_written_as_the_sdk_writes_them() -> None:
    spans = [span(scope=InstrumentationScope("other", "1.2", "https://schema", {"a": 1}))]
    decoded = ExportTraceServiceRequest.FromString(sdk_bytes(spans)).resource_spans[0].scope_spans[0]
    if not decoded.scope.attributes or not decoded.schema_url:
        pytest.skip("this SDK's encoder (1.30) leaves a scope's attributes and schema out")
    assert BatchEncoder().request(spans) == sdk_bytes(spans)


def test_they_decode_to_what_was_recorded() -> None:
    recorded = SHAPES["domain events with their ids"][0]
    decoded = ExportTraceServiceRequest.FromString(BatchEncoder().request([recorded]))
    (resource_spans,) = decoded.resource_spans
    (scope_spans,) = resource_spans.scope_spans
    (sent,) = scope_spans.spans
    assert scope_spans.scope.name == "mock_server"
    assert int.from_bytes(sent.trace_id, "big") == recorded.context.trace_id
    assert sent.start_time_unix_nano == recorded.start_time
    assert [event.name for event in sent.events] == [
        "pix_mock.event.paid",
        "pix_mock.clock.advanced",
        "pix_mock.fault.injected",
    ]
    assert sent.events[0].attributes[0].value.string_value == "9f1c"
    assert sent.events[0].attributes[1].value.double_value == 10.5


def test_attributes_dropped_by_the_limits_are_counted() -> None:
    from opentelemetry.attributes import BoundedAttributes

    bounded = BoundedAttributes(maxlen=2, attributes={"a": 1, "b": 2, "c": 3}, immutable=False)
    spans = [span(attributes=bounded, events=(Event("e", BoundedAttributes(1, {"x": 1, "y": 2}), 5),))]
    assert spans[0].dropped_attributes == 1
    assert BatchEncoder().request(spans) == sdk_bytes(spans)


def test_what_it_keeps_is_bounded() -> None:
    encoder = BatchEncoder()
    spans = [span(number, attributes={"url.path": f"/accounts/{number}"}) for number in range(MAX_CACHED + 10)]
    assert encoder.request(spans) == sdk_bytes(spans)
    assert len(encoder._attributes) <= MAX_CACHED


def test_true_one_and_one_point_oh_are_three_attributes() -> None:
    # Equal and of equal hash in Python, three different values on the wire.
    encoder = BatchEncoder()
    spans = [span(1, attributes={"v": True}), span(2, attributes={"v": 1}), span(3, attributes={"v": 1.0})]
    assert encoder.request(spans) == sdk_bytes(spans)


@pytest.mark.parametrize("number", [0, 1, 127, 128, 300, 2**32, 2**63 - 1, -1, -(2**63)])
def test_varints_are_protobufs(number: int) -> None:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    assert b"\x18" + varint(number) == AnyValue(int_value=number).SerializeToString()
