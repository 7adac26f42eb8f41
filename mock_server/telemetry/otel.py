"""Tracing with the OpenTelemetry SDK (the `[otel]` extra): imported by tracing.start_tracing only when tracing is
on. One SERVER span per request, made from what the request recorded once it was answered (its start and end
instants, its domain events with theirs): the request path holds no span object while it runs, and the span's id is
drawn before the journal entry is written (the journal keeps it).

The request queues its facts (telemetry/span_queue.py: one tuple); the queue's thread makes a batch's spans, asks
the SDK's sampler (OTEL_TRACES_SAMPLER) or answers for it (`sampler_table`), writes their OTLP bytes
(telemetry/otlp_wire.py) and hands them to the OTLP exporter's own HTTP client. A span the SDK's other parts must
read (a sampler that is asked, an exporter before 1.40) is built as the SDK's `ReadableSpan`: what
`tracer.start_span(...)` then `end()` would hand a processor, without the live span's machinery (a lock, attribute
limits enforced key by key, the processors' on_start) that a span made after the fact has no use for
(bench/tracing_cost.py: a lookup cost 4.2x its CPU with tracing off through start_span).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, Decision, ParentBased, Sampler, StaticSampler
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

from mock_server.telemetry.otlp_wire import BatchEncoder, SpanFacts, span_attributes
from mock_server.telemetry.span_queue import SpanQueue
from mock_server.telemetry.trace_context import parent_of
from mock_server.telemetry.tracing import DEFAULT_SERVICE_NAME, NotedEvent
from mock_server.wire.headers import header_value

if TYPE_CHECKING:
    from mock_server.spec.openapi import Spec, Specs
    from mock_server.wire.headers import RawHeaders

log = logging.getLogger("mock_server")
_ERROR = Status(StatusCode.ERROR)
_UNSET = Status(StatusCode.UNSET)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_NO_PARENT = Context()
_SPAN_BITS = (1 << 64) - 1
FLUSH_MILLIS = 5000  # a graceful stop waits at most this long for the spans still queued
# The OTLP exporter logs every failed batch itself (and its retries): the server says it once instead (_WarnsOnce).
_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http",
)


class _WarnsOnce(SpanExporter):
    """The OTLP exporter, whose failures are said once (again only after it sent a batch since): a collector that
    cannot be reached drops spans, and the server keeps serving without a warning per batch.

    A batch is encoded by telemetry/otlp_wire.py (the SDK's bytes, at a tenth of its cost) and handed to the
    exporter's own HTTP client, which sends it by the exporter's rules (endpoint, headers, compression, timeout,
    retries, certificates). That client is the exporter's private part (`_client`, `_metrics`: 1.40 and later):
    an exporter without them (the declared floor, 1.30) encodes and sends the batch itself, as it always has."""

    def __init__(self, inner: SpanExporter, endpoint: str) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.failing = False
        self.encoder = BatchEncoder()
        client = getattr(inner, "_client", None)
        metrics = getattr(inner, "_metrics", None)
        self.sends_bytes = callable(getattr(client, "export", None)) and hasattr(metrics, "export_operation")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """ReadableSpans sent: written here when the exporter's client takes bytes, else by the exporter."""
        if self.sends_bytes:
            return self.send(lambda: self.encoder.request(spans), len(spans))
        return self._said(lambda: self.inner.export(spans))

    def send(self, encode: Callable[[], bytes], count: int) -> SpanExportResult:
        """The bytes `encode()` writes, of `count` spans, sent by the exporter's client (`sends_bytes`)."""
        return self._said(lambda: self._send(encode, count))

    def _said(self, sending: Callable[[], SpanExportResult]) -> SpanExportResult:
        try:
            result = sending()
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

    def _send(self, encode: Callable[[], bytes], count: int) -> SpanExportResult:
        inner: Any = self.inner
        if inner._shutdown:
            return SpanExportResult.FAILURE
        with inner._metrics.export_operation(count) as outcome:
            data = encode()
            limit = getattr(inner, "_max_request_size", 0)
            if limit and len(data) > limit:  # what the exporter does with a batch over its size: drop it
                return SpanExportResult.FAILURE
            sent = inner._client.export(data)
            if not sent.success:
                outcome.error = sent.error
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.inner.shutdown()


def _remote_parent(traceparent: str, raw_headers: RawHeaders) -> SpanContext | None:
    """The remote parent a valid `traceparent` names (its sampled flag, and the `tracestate` beside it), None
    without one: the rules of the SDK's TraceContextTextMapPropagator (trace_context.parent_of)."""
    found = parent_of(traceparent)
    if found is None:
        return None
    flags = int(traceparent.strip()[53:55], 16)  # version-trace_id-span_id-flags: the flags' two digits
    tracestate = header_value(raw_headers, b"tracestate")
    state = TraceState.from_header([tracestate]) if tracestate else None
    return SpanContext(int(found[0], 16), int(found[1], 16), True, TraceFlags(flags & TraceFlags.SAMPLED), state)


# The SDK's own samplers whose decision on a span with no parent, a sampled parent and an unsampled one is fixed
# (by their description, which names every delegate: OTEL_TRACES_SAMPLER's always_on, always_off,
# parentbased_always_on, the default, and parentbased_always_off); any other is asked span by span.
_FIXED_SAMPLERS: dict[str, tuple[bool, bool, bool]] = {
    ALWAYS_ON.get_description(): (True, True, True),
    ALWAYS_OFF.get_description(): (False, False, False),
    ParentBased(ALWAYS_ON).get_description(): (True, True, False),  # type: ignore[no-untyped-call]
    ParentBased(ALWAYS_OFF).get_description(): (False, True, False),  # type: ignore[no-untyped-call]
}


def sampler_table(sampler: Sampler) -> tuple[bool, bool, bool] | None:
    """Whether `sampler` keeps a span with no parent, with a sampled remote parent, with an unsampled one, when
    that is all it decides by (it then keeps the span's attributes as given, and the trace state is the parent's);
    None: it must be asked span by span (a ratio, or one of the user's)."""
    if type(sampler) not in (StaticSampler, ParentBased):
        return None
    return _FIXED_SAMPLERS.get(sampler.get_description())


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
    """The server's tracer: the SDK's TracerProvider (its resource, its sampler) and an OTLP/HTTP exporter, fed in
    batches by a span queue. What the pipeline asks of it: `ids` (the request's span's, drawn before the call is
    journaled), `record` (the span, once answered) and, on a graceful stop, `shutdown`."""

    def __init__(self, option: str | None, endpoint: str, specs: Specs, environ: Mapping[str, str]) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        for name in _EXPORTER_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)
        self._random = random.Random()
        resource = Resource.create({SERVICE_NAME: environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME})
        # No sampler given: the SDK reads OTEL_TRACES_SAMPLER (and _ARG) itself, parent-based always-on by default.
        self.provider = TracerProvider(resource=resource)
        self.resource = resource
        self._sampler = self.provider.sampler
        self.scope = InstrumentationScope("mock_server")
        # The option names the collector's base, like OTEL_EXPORTER_OTLP_ENDPOINT; else the exporter reads the
        # variables itself (the traces endpoint as is, the base with /v1/traces).
        exporter = OTLPSpanExporter(endpoint=option.rstrip("/") + "/v1/traces") if option else OTLPSpanExporter()
        self.exporter = _WarnsOnce(exporter, endpoint)
        self._admin = frozenset(specs.admin.operations)
        self._routes = {
            op.operation_id: op.path for spec in (specs.public, specs.admin) for op in spec.operations.values()
        }
        self._mock_defined = mock_defined_statuses(specs.public)
        self._decide = sampler_table(self._sampler)
        # Last, once `_send` has all it reads (its thread starts here). The provider's span processor, so that its
        # force_flush and shutdown reach the queue (and, on shutdown, the exporter).
        self.spans = SpanQueue(self._send, environ, close=self.exporter.shutdown, failing=lambda: self.exporter.failing)
        self.provider.add_span_processor(self.spans)
        self._pending = self.spans.pending  # both read at every request: one attribute each
        self._batch_size = self.spans.batch_size

    def ids(self, raw_headers: RawHeaders) -> tuple[int, int, str | None]:
        """The trace id and span id of the request's SERVER span, and the `traceparent` the request came with: the
        incoming trace when that header names one, else a new one; a new span either way. Numbers, as the span
        holds them: the journal writes them as hex only when an entry is read. One draw of 192 bits for both ids
        (the SDK's RandomIdGenerator draws 128 and 64); an id of zeros is invalid, and drawn again."""
        traceparent = header_value(raw_headers, b"traceparent")
        parent = parent_of(traceparent) if traceparent is not None else None
        while True:
            drawn = self._random.getrandbits(192)
            trace_id, span_id = drawn >> 64, drawn & _SPAN_BITS
            if parent is None:
                if trace_id and span_id:
                    return trace_id, span_id, None
            elif span_id:
                return int(parent[0], 16), span_id, traceparent

    def record(
        self,
        trace_id: int,
        span_id: int,
        traceparent: str | None,
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
        """The request's SERVER span, started and ended at the given instants (time.time_ns()), queued as these
        facts in the order `facts` takes them: the queue's thread makes the span (`facts(*queued)`).
        `off_interface`: the answer is none of the spec's own (injected by a fault, or the mock's session errors);
        `status` None: the connection was dropped."""
        pending = self._pending
        if len(pending) >= self._batch_size:  # before the append: a full queue is about to drop its oldest
            self.spans.nudge()
        pending.append(
            (
                trace_id,
                span_id,
                traceparent,
                raw_headers,  # its tracestate, read with the traceparent (the scope's own list, by reference)
                operation_id,
                method,
                url_path,
                status,
                session,
                scenario,
                fault_id,
                off_interface,
                events,
                start_ns,
                end_ns,
            )
        )

    def facts(
        self,
        trace_id: int,
        span_id: int,
        traceparent: str | None,
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
    ) -> SpanFacts | None:
        """A queued request's span facts (`record`'s tuple, spread); None when the sampler's decision, known
        without asking it (`sampler_table`), drops the span."""
        parent = _remote_parent(traceparent, raw_headers) if traceparent is not None else None
        decide = self._decide
        if decide is not None and not decide[0 if parent is None else 1 if parent.trace_flags.sampled else 2]:
            return None
        route = self._routes.get(operation_id, url_path)
        return SpanFacts(
            trace_id,
            span_id,
            parent,
            f"{method} {route}",
            method,
            route,
            url_path,
            operation_id,
            session,
            (
                off_interface
                or operation_id in self._admin
                or (status is not None and status in self._mock_defined.get(operation_id, ()))
            ),
            status,
            scenario,
            fault_id,
            events,
            start_ns,
            end_ns,
        )

    def _send(self, batch: list[tuple[Any, ...]]) -> None:
        """A batch of queued requests' spans to the exporter (the span queue's thread): their bytes written here,
        unless the sampler must be asked (it may change a span's attributes) or the exporter writes its own."""
        kept = [facts for facts in (self.facts(*queued) for queued in batch) if facts is not None]
        if not kept:
            return
        exporter = self.exporter
        if self._decide is not None and exporter.sends_bytes:
            exporter.send(lambda: exporter.encoder.server_request(self.resource, self.scope, kept), len(kept))
            return
        spans = [self.readable(facts, asked=self._decide is None) for facts in kept]
        exporter.export([span for span in spans if span is not None])

    def readable(self, facts: SpanFacts, asked: bool = False) -> ReadableSpan | None:
        """The SDK's ReadableSpan of a request's span; `asked`: once the sampler said to keep it (None: it does
        not), with the attributes it answers, as the SDK's tracer takes them."""
        attributes: Mapping[str, Any] = span_attributes(facts)
        parent = facts.parent
        trace_id = facts.trace_id
        trace_state = parent.trace_state if parent is not None else None
        if asked:
            # The parent is the incoming traceparent's or none: never the server's current context (an empty one,
            # not None, which the sampler would read as "the current context", looked up at each call).
            context = set_span_in_context(NonRecordingSpan(parent)) if parent is not None else _NO_PARENT
            sampled = self._sampler.should_sample(context, trace_id, facts.name, SpanKind.SERVER, attributes)
            if sampled.decision is not Decision.RECORD_AND_SAMPLE:
                return None  # not sent (a RECORD_ONLY span would reach no processor that reads it)
            attributes, trace_state = sampled.attributes, sampled.trace_state
        return ReadableSpan(
            facts.name,
            SpanContext(trace_id, facts.span_id, False, _SAMPLED, trace_state),
            parent,
            self.resource,
            attributes,
            [Event(event, event_attributes, at) for event, event_attributes, at in facts.events or ()],
            kind=SpanKind.SERVER,
            status=_ERROR if facts.is_error else _UNSET,
            start_time=facts.start_ns,
            end_time=facts.end_ns,
            instrumentation_scope=self.scope,
        )

    def shutdown(self) -> None:
        """Spans still queued sent (at most FLUSH_MILLIS), the exporter closed: the server's graceful stop."""
        self.spans.shutdown(FLUSH_MILLIS)
        self.provider.shutdown()  # the queue's shutdown again: done already
