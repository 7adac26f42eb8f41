"""Tracing with the OpenTelemetry SDK (the `[otel]` extra): imported by tracing.start_tracing only when tracing is
on. One SERVER span per request, made when the request finished from what it recorded (its start and end instants,
its domain events with theirs): the request path holds no span object while it runs, and the span's id is drawn
before the journal entry is written (the journal keeps it).

The finished span is built as the SDK's own `ReadableSpan` and handed to its BatchSpanProcessor, once the SDK's
sampler (OTEL_TRACES_SAMPLER) said to: what `tracer.start_span(...)` then `end()` would hand it, without the live
span's machinery (a lock, attribute limits enforced key by key, the processors' on_start) that a span made after
the fact has no use for (bench/tracing_cost.py: a lookup cost 4.2x its CPU with tracing off through start_span).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import Decision
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from mock_server.telemetry.trace_context import parent_of
from mock_server.telemetry.tracing import DEFAULT_SERVICE_NAME, NotedEvent
from mock_server.wire.headers import header_value

if TYPE_CHECKING:
    from mock_server.spec.openapi import Spec, Specs
    from mock_server.wire.headers import RawHeaders

log = logging.getLogger("mock_server")
_ERROR = Status(StatusCode.ERROR)
_UNSET = Status(StatusCode.UNSET)
FLUSH_MILLIS = 5000  # a graceful stop waits at most this long for the spans still queued
# The OTLP exporter logs every failed batch itself (and its retries): the server says it once instead (_WarnsOnce).
_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http",
    "opentelemetry.sdk.trace.export",
)


class _WarnsOnce(SpanExporter):
    """The OTLP exporter, whose failures are said once (again only after it sent a batch since): a collector that
    cannot be reached drops spans, and the server keeps serving without a warning per batch."""

    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.failing = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:  # the exporter's own bug or an unexpected transport error: still one warning
            log.debug("the OTLP exporter failed: %r", exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.FAILURE:
            if not self.failing:
                log.warning(
                    "spans could not be sent to the OTLP collector at %s: they are dropped until it answers "
                    "(said once; the mock keeps serving)",
                    self.endpoint,
                )
            self.failing = True
        else:
            self.failing = False
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = FLUSH_MILLIS) -> bool:
        return self.inner.force_flush(timeout_millis)


def _remote_parent(raw_headers: RawHeaders) -> SpanContext | None:
    """The remote parent a valid `traceparent` names (its sampled flag, and the `tracestate` beside it), None
    without one: the rules of the SDK's TraceContextTextMapPropagator (trace_context.parent_of)."""
    traceparent = header_value(raw_headers, b"traceparent")
    found = parent_of(traceparent)
    if found is None or traceparent is None:
        return None
    flags = int(traceparent.strip()[53:55], 16)  # version-trace_id-span_id-flags: the flags' two digits
    tracestate = header_value(raw_headers, b"tracestate")
    state = TraceState.from_header([tracestate]) if tracestate else None
    return SpanContext(int(found[0], 16), int(found[1], 16), True, TraceFlags(flags & TraceFlags.SAMPLED), state)


def mock_defined_statuses(spec: Spec) -> dict[str, frozenset[int]]:
    """operationId -> the statuses its responses mark `x-mock-defined: true` (their own, or the component a
    `$ref` names), from the public spec as written."""
    document = spec.document
    components = document.get("components", {}).get("responses", {})
    found: dict[str, frozenset[int]] = {}
    for item in document.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            marked = set()
            for status, response in operation.get("responses", {}).items():
                ref = response.get("$ref", "") if isinstance(response, dict) else ""
                if ref.startswith("#/components/responses/"):
                    response = components.get(ref.rsplit("/", 1)[1], {})
                if isinstance(response, dict) and response.get("x-mock-defined") is True and str(status).isdigit():
                    marked.add(int(status))
            found[operation["operationId"]] = frozenset(marked)
    return found


class OtelTracer:
    """The server's tracer: an SDK TracerProvider batching to an OTLP/HTTP exporter. What the pipeline asks of it:
    `ids` (the request's span's, drawn before the call is journaled), `record` (the span, once answered) and, on a
    graceful stop, `shutdown`."""

    def __init__(self, option: str | None, endpoint: str, specs: Specs, environ: Mapping[str, str]) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        for name in _EXPORTER_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        self._random = random.Random()
        resource = Resource.create({SERVICE_NAME: environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME})
        # No sampler given: the SDK reads OTEL_TRACES_SAMPLER (and _ARG) itself, parent-based always-on by default.
        self.provider = TracerProvider(resource=resource)
        self._resource = resource
        self._sampler = self.provider.sampler
        self._scope = InstrumentationScope("mock_server")
        # The option names the collector's base, like OTEL_EXPORTER_OTLP_ENDPOINT; else the exporter reads the
        # variables itself (the traces endpoint as is, the base with /v1/traces).
        exporter = OTLPSpanExporter(endpoint=option.rstrip("/") + "/v1/traces") if option else OTLPSpanExporter()
        self.processor = BatchSpanProcessor(_WarnsOnce(exporter, endpoint))
        self.provider.add_span_processor(self.processor)
        self._admin = frozenset(specs.admin.operations)
        self._routes = {
            op.operation_id: op.path for spec in (specs.public, specs.admin) for op in spec.operations.values()
        }
        self._mock_defined = mock_defined_statuses(specs.public)

    def ids(self, raw_headers: RawHeaders) -> tuple[str, str]:
        """(trace id, span id) in hex of the request's SERVER span: the incoming traceparent's trace, a new span."""
        draw = self._random.getrandbits
        parent = parent_of(header_value(raw_headers, b"traceparent"))
        trace_id = parent[0] if parent is not None else f"{draw(128) or 1:032x}"
        return trace_id, f"{draw(64) or 1:016x}"

    def record(
        self,
        ids: tuple[str, str],
        raw_headers: RawHeaders,
        operation_id: str,
        method: str,
        url_path: str,
        status: int | None,
        session: str,
        scenario: str | None,
        fault_id: str | None,
        off_interface: bool,
        events: Sequence[NotedEvent] | None,
        start_ns: int,
        end_ns: int,
    ) -> None:
        """The request's SERVER span, started and ended at the given instants (time.time_ns()). `off_interface`: the
        answer is none of the spec's own (injected by a fault, or the mock's session errors); `status` None: the
        connection was dropped."""
        route = self._routes.get(operation_id, url_path)
        attributes: dict[str, Any] = {
            "http.request.method": method,
            "http.route": route,
            "url.path": url_path,
            "pix_mock.operation_id": operation_id,
            "pix_mock.session": session,
            "pix_mock.mock_defined": (
                off_interface
                or operation_id in self._admin
                or (status is not None and status in self._mock_defined.get(operation_id, ()))
            ),
        }
        if status is not None:
            attributes["http.response.status_code"] = status
        else:
            attributes["error.type"] = "connection_dropped"
        if scenario is not None:
            attributes["pix_mock.scenario"] = scenario
        if fault_id is not None:
            attributes["pix_mock.fault_id"] = fault_id
        name = f"{method} {route}"
        trace_id, span_id = int(ids[0], 16), int(ids[1], 16)
        parent = _remote_parent(raw_headers)
        parent_context = set_span_in_context(NonRecordingSpan(parent)) if parent is not None else None
        sampled = self._sampler.should_sample(parent_context, trace_id, name, SpanKind.SERVER, attributes)
        if sampled.decision is not Decision.RECORD_AND_SAMPLE:
            return  # not sent (a RECORD_ONLY span would reach no processor that reads it)
        if sampled.attributes:
            attributes.update(sampled.attributes)
        context = SpanContext(trace_id, span_id, False, TraceFlags(TraceFlags.SAMPLED), sampled.trace_state)
        span = ReadableSpan(
            name,
            context,
            parent,
            self._resource,
            attributes,
            [Event(event, event_attributes, at) for event, event_attributes, at in events] if events else (),
            kind=SpanKind.SERVER,
            status=_ERROR if status is None or status >= 500 else _UNSET,
            start_time=start_ns,
            end_time=end_ns,
            instrumentation_scope=self._scope,
        )
        self.processor.on_end(span)

    def shutdown(self) -> None:
        """Spans still queued sent (at most FLUSH_MILLIS), the exporter closed: the server's graceful stop."""
        self.provider.force_flush(FLUSH_MILLIS)
        self.provider.shutdown()
