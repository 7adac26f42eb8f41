"""The OTLP/protobuf bytes of a batch of finished spans (an `ExportTraceServiceRequest`), written directly: the same
bytes as the SDK's `encode_spans(spans).SerializePartialToString()` (tests/telemetry/test_otlp_wire.py compares them
span for span, and decodes them with opentelemetry-proto), at a tenth of its cost.

Why not the SDK's encoder: it builds a protobuf object for every attribute, key and value of every span, and hashes
the resource (a JSON dump) once a span: about 100 µs a span of ours, more than the lookup it describes costs
(bench/tracing_cost.py). The server's spans repeat themselves: the same resource and scope, mostly the same
attributes (method, route, operation, session, scenario, status). Here the resource and scope are written once,
and an attribute's bytes once per distinct (key, value).

The wire format is protobuf's (https://protobuf.dev/programming-guides/encoding/); the field numbers are OTLP's
(opentelemetry/proto/trace/v1/trace.proto, stable since OTLP 1.0), checked against the descriptors of
opentelemetry-proto by the tests. Pure functions over bytes: nothing here imports OpenTelemetry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from struct import Struct
from typing import Any

_FIXED64 = Struct("<Q")
_FIXED32 = Struct("<I")
_DOUBLE = Struct("<d")
MAX_CACHED = 4096  # distinct attributes whose bytes are kept (url.path names keys: unbounded without a cap)

# Span flags (trace.proto SpanFlags): the span says whether its parent is remote, and whether it is.
HAS_IS_REMOTE = 0x100
IS_REMOTE = 0x200
_LOCAL_PARENT = b"\x85\x01" + _FIXED32.pack(HAS_IS_REMOTE)  # the flags field (16, fixed32), written whole
_REMOTE_PARENT = b"\x85\x01" + _FIXED32.pack(HAS_IS_REMOTE | IS_REMOTE)


def varint(number: int) -> bytes:
    """`number` as a protobuf varint; a negative int64 as its two's complement (ten bytes), as protobuf does."""
    if number < 0:
        number += 1 << 64
    if number < 0x80:
        return bytes((number,))
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _tag(field: int, wire_type: int) -> bytes:
    return varint(field << 3 | wire_type)


def _delimited(field: int, payload: bytes) -> bytes:
    """A length-delimited field: a string, bytes, or an embedded message."""
    return _tag(field, 2) + varint(len(payload)) + payload


def _string(field: int, value: str | None) -> bytes:
    """A proto3 string field: nothing when empty (or None, which the SDK's encoder passes for "not set")."""
    return _delimited(field, value.encode("utf-8")) if value else b""


def any_value(value: Any) -> bytes:
    """An `AnyValue` message's bytes, by the SDK's rules (`_encode_value`): None is an empty value, a bool before
    an int, a sequence an array, a mapping a key-value list."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10" + (b"\x01" if value else b"\x00")
    if isinstance(value, str):
        return _delimited(1, value.encode("utf-8"))
    if isinstance(value, int):
        return b"\x18" + varint(value)
    if isinstance(value, float):
        return b"\x21" + _DOUBLE.pack(value)
    if isinstance(value, bytes):
        return _delimited(7, value)
    if isinstance(value, Sequence):
        return _delimited(5, b"".join(_delimited(1, any_value(item)) for item in value))
    if isinstance(value, Mapping):
        return _delimited(6, b"".join(_delimited(1, key_value(str(k), v)) for k, v in value.items()))
    raise TypeError(f"an attribute of type {type(value).__name__} has no OTLP encoding")


def key_value(key: str, value: Any) -> bytes:
    """A `KeyValue` message's bytes."""
    return _string(1, key) + _delimited(2, any_value(value))


class SpanFacts:
    """What a request recorded of its SERVER span (telemetry/otel.py), kept raw: written by `BatchEncoder` as they
    are, and turned into the SDK's ReadableSpan only for whoever else asks (`span_attributes` gives the
    attributes, in the order both ways write them)."""

    __slots__ = (
        "end_ns",
        "events",  # [(name, attributes, time_ns)] or None
        "fault_id",
        "method",
        "mock_defined",
        "name",
        "operation_id",
        "parent",  # the remote parent's SpanContext (span_id, is_remote, trace_state), or None
        "route",
        "scenario",
        "session",
        "span_id",
        "start_ns",
        "status",  # None: the connection was dropped
        "trace_id",  # an int, as the SDK's SpanContext holds it
        "url_path",
    )

    def __init__(
        self,
        trace_id: int,
        span_id: int,
        parent: Any,
        name: str,
        method: str,
        route: str,
        url_path: str,
        operation_id: str,
        session: str,
        mock_defined: bool,
        status: int | None,
        scenario: str | None,
        fault_id: str | None,
        events: Sequence[tuple[str, Mapping[str, Any], int]] | None,
        start_ns: int,
        end_ns: int,
    ) -> None:
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent = parent
        self.name = name
        self.method = method
        self.route = route
        self.url_path = url_path
        self.operation_id = operation_id
        self.session = session
        self.mock_defined = mock_defined
        self.status = status
        self.scenario = scenario
        self.fault_id = fault_id
        self.events = events
        self.start_ns = start_ns
        self.end_ns = end_ns

    @property
    def is_error(self) -> bool:
        """A 5xx answer, or none (the connection dropped): the span's status is ERROR."""
        return self.status is None or self.status >= 500


def span_attributes(facts: SpanFacts) -> dict[str, Any]:
    """The span's attributes by the HTTP semantic conventions and the mock's own (docs/telemetry.md)."""
    attributes: dict[str, Any] = {
        "http.request.method": facts.method,
        "http.route": facts.route,
        "url.path": facts.url_path,
        "pix_mock.operation_id": facts.operation_id,
        "pix_mock.session": facts.session,
        "pix_mock.mock_defined": facts.mock_defined,
    }
    if facts.status is not None:
        attributes["http.response.status_code"] = facts.status
    else:
        attributes["error.type"] = "connection_dropped"
    if facts.scenario is not None:
        attributes["pix_mock.scenario"] = facts.scenario
    if facts.fault_id is not None:
        attributes["pix_mock.fault_id"] = facts.fault_id
    return attributes


_URL_PATH = b"\x0a\x08url.path\x12"  # a KeyValue's key field "url.path", then its value's tag
# The url.path attribute's field (9) up to its path's bytes, for every path short enough that each length in it
# takes one byte: the field's, the KeyValue's value's, the string's.
_URL_PATH_HEADS = tuple(
    b"\x4a" + bytes((size + 14, 10, 8)) + b"url.path\x12" + bytes((size + 2, 10, size)) for size in range(114)
)
_TIMES = Struct("<BQBQ")
_UNSET_STATUS = _delimited(15, b"")
_ERROR_STATUS = _delimited(15, b"\x18\x02")  # StatusCode.ERROR, no description


class BatchEncoder:
    """Encodes batches of finished spans (the SDK's ReadableSpan, or anything with its attributes), keeping the
    bytes of the resources, scopes and attributes it has written."""

    def __init__(self) -> None:
        self._attributes: dict[
            tuple[int, str, type, Any], bytes
        ] = {}  # (field, key, type, value) -> the KeyValue field
        self._resources: dict[int, tuple[Any, bytes]] = {}  # id(resource) -> (it, its field in ResourceSpans)
        self._scopes: dict[int, tuple[Any, bytes]] = {}
        self._heads: dict[tuple[str, Any], bytes] = {}  # (name, kind) -> their two fields
        # A server span's facts but its ids, times, path and events -> (name and kind, the attributes before
        # url.path, those after it, the status)
        self._server: dict[tuple[Any, ...], tuple[bytes, bytes, bytes, bytes]] = {}

    def request(self, spans: Sequence[Any]) -> bytes:
        """The `ExportTraceServiceRequest` of `spans`, grouped by resource then scope in the order they first
        appear (as the SDK's encoder groups them)."""
        groups: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
        resource = scope = current = None
        for span in spans:
            if span.resource is not resource or (span.instrumentation_scope or None) is not scope or current is None:
                resource, scope = span.resource, span.instrumentation_scope or None
                scopes = groups.setdefault(id(resource), (resource, {}))[1]
                current = scopes.setdefault(id(scope), (scope, []))[1]
            encoded = self.span(span)
            size = len(encoded)
            # the span's field (2) in its ScopeSpans: a tag and a length, of two bytes for nearly every span
            current.append(
                b"\x12" + (bytes((size & 0x7F | 0x80, size >> 7)) if 128 <= size < 16384 else varint(size)) + encoded
            )
        return b"".join(self._resource_spans(resource, scopes.values()) for resource, scopes in groups.values())

    def server_request(self, resource: Any, scope: Any, batch: Sequence[SpanFacts]) -> bytes:
        """The `ExportTraceServiceRequest` of server spans' facts, all of `resource` and `scope`: what `request`
        writes of the ReadableSpans they make."""
        fields = []
        for facts in batch:
            encoded = self.server_span(facts)
            size = len(encoded)
            fields.append(
                b"\x12" + (bytes((size & 0x7F | 0x80, size >> 7)) if 128 <= size < 16384 else varint(size)) + encoded
            )
        return self._resource_spans(resource, [(scope, fields)])

    def _resource_spans(self, resource: Any, scopes: Any) -> bytes:
        """A `ResourceSpans` field: the resource, then a `ScopeSpans` for each (scope, its spans' fields)."""
        scope_spans = []
        for scope, fields in scopes:
            schema = getattr(scope, "schema_url", None) if scope is not None else None
            body = self._scope(scope) + b"".join(fields) + _string(3, schema)
            scope_spans.append(_delimited(2, body))
        body = self._resource(resource) + b"".join(scope_spans) + _string(3, resource.schema_url)
        return _delimited(1, body)

    def span(self, span: Any) -> bytes:
        """A `Span` message's bytes."""
        context = span.context
        parent = span.parent
        parts = [b"\x0a\x10" + context.trace_id.to_bytes(16, "big") + b"\x12\x08" + context.span_id.to_bytes(8, "big")]
        trace_state = context.trace_state
        if trace_state:
            parts.append(_string(3, ",".join(f"{key}={value}" for key, value in trace_state.items())))
        if parent is not None:
            parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
        head = self._heads.get((span.name, span.kind))
        if head is None:
            if len(self._heads) >= MAX_CACHED:
                self._heads.clear()
            # the SDK's SpanKind counts from INTERNAL = 0, OTLP's from 1 (0 is unspecified)
            head = self._heads[(span.name, span.kind)] = _string(5, span.name) + b"\x30" + varint(span.kind.value + 1)
        parts.append(head + b"\x39" + _FIXED64.pack(span.start_time) + b"\x41" + _FIXED64.pack(span.end_time))
        attributes = span.attributes
        if attributes:
            parts.append(self._attribute_fields(9, attributes))
        if span.dropped_attributes:
            parts.append(b"\x50" + varint(span.dropped_attributes))
        for event in span.events:
            body = b"\x09" + _FIXED64.pack(event.timestamp) + _string(2, event.name)
            if event.attributes:
                body += self._attribute_fields(3, event.attributes)
            if event.dropped_attributes:
                body += b"\x20" + varint(event.dropped_attributes)
            parts.append(_delimited(11, body))
        if span.dropped_events:
            parts.append(b"\x60" + varint(span.dropped_events))
        for link in span.links:  # the server makes none; written as the SDK writes them (no trace state)
            linked = link.context
            body = b"\x0a\x10" + linked.trace_id.to_bytes(16, "big") + b"\x12\x08" + linked.span_id.to_bytes(8, "big")
            if link.attributes:
                body += self._attribute_fields(4, link.attributes)
            if link.dropped_attributes:
                body += b"\x28" + varint(link.dropped_attributes)
            body += b"\x35" + _FIXED32.pack(HAS_IS_REMOTE | (IS_REMOTE if linked.is_remote else 0))
            parts.append(_delimited(13, body))
        if span.dropped_links:
            parts.append(b"\x70" + varint(span.dropped_links))
        status = span.status
        if status is not None:
            code = status.status_code.value
            parts.append(_delimited(15, _string(2, status.description) + (b"\x18" + varint(code) if code else b"")))
        parts.append(_REMOTE_PARENT if parent is not None and parent.is_remote else _LOCAL_PARENT)
        return b"".join(parts)

    def server_span(self, facts: SpanFacts) -> bytes:
        """The bytes of a server span from its facts: what `span` writes of the ReadableSpan they make, with the
        attributes all but url.path written once per distinct set."""
        key = (
            facts.name,
            facts.operation_id,
            facts.session,
            facts.mock_defined,
            facts.status,
            facts.scenario,
            facts.fault_id,
        )
        kept = self._server.get(key)
        if kept is None:
            if len(self._server) >= MAX_CACHED:
                self._server.clear()
            attributes = span_attributes(facts)
            names = list(attributes)
            at = names.index("url.path")
            kept = self._server[key] = (
                _string(5, facts.name) + b"\x30\x02",  # SPAN_KIND_SERVER
                self._attribute_fields(9, {name: attributes[name] for name in names[:at]}),
                self._attribute_fields(9, {name: attributes[name] for name in names[at + 1 :]}),
                _ERROR_STATUS if facts.is_error else _UNSET_STATUS,
            )
        head, before, after, status = kept
        parent = facts.parent
        path = facts.url_path.encode("utf-8")
        size = len(path)
        if size < len(_URL_PATH_HEADS):  # nearly every path: every length of the field in one byte
            url = _URL_PATH_HEADS[size] + path
        else:
            value = b"\x0a" + varint(size) + path
            url = _delimited(9, _URL_PATH + varint(len(value)) + value)
        trace_id, span_id = facts.trace_id.to_bytes(16, "big"), facts.span_id.to_bytes(8, "big")
        times = _TIMES.pack(0x39, facts.start_ns, 0x41, facts.end_ns)  # fields 7 and 8, fixed64
        if parent is None and not facts.events:  # nearly every span
            return b"".join(
                (b"\x0a\x10", trace_id, b"\x12\x08", span_id, head, times, before, url, after, status, _LOCAL_PARENT)
            )
        out = b"\x0a\x10" + trace_id + b"\x12\x08" + span_id
        if parent is not None:
            if parent.trace_state:  # the sampler's trace state: the parent's
                out += _string(3, ",".join(f"{k}={v}" for k, v in parent.trace_state.items()))
            out += b"\x22\x08" + parent.span_id.to_bytes(8, "big")
        out += head + times + before + url + after
        for name, event_attributes, at_ns in facts.events or ():
            body = b"\x09" + _FIXED64.pack(at_ns) + _string(2, name)
            if event_attributes:
                body += self._attribute_fields(3, event_attributes)
            out += _delimited(11, body)
        return out + status + (_REMOTE_PARENT if parent is not None and parent.is_remote else _LOCAL_PARENT)

    def _attribute_fields(self, field: int, attributes: Mapping[str, Any]) -> bytes:
        """The attributes as repeated `KeyValue` fields numbered `field`, each written once per distinct value."""
        cache = self._attributes
        tag = _tag(field, 2)
        out = []
        for key, value in attributes.items():
            cache_key = (field, key, type(value), value)
            try:
                encoded = cache.get(cache_key)
            except TypeError:  # an unhashable value (a list): written each time
                out.append(_delimited(field, key_value(key, value)))
                continue
            if encoded is None:
                if len(cache) >= MAX_CACHED:
                    cache.clear()
                encoded = cache[cache_key] = tag + varint(len(body := key_value(key, value))) + body
            out.append(encoded)
        return b"".join(out)

    def _resource(self, resource: Any) -> bytes:
        kept = self._resources.get(id(resource))
        if kept is None or kept[0] is not resource:
            kept = self._resources[id(resource)] = (
                resource,
                _delimited(1, self._attribute_fields(1, resource.attributes)),
            )
        return kept[1]

    def _scope(self, scope: Any) -> bytes:
        kept = self._scopes.get(id(scope))
        if kept is None or kept[0] is not scope:
            body = b""
            if scope is not None:
                body = _string(1, scope.name) + _string(2, scope.version)
                if scope.attributes:
                    body += self._attribute_fields(3, scope.attributes)
            kept = self._scopes[id(scope)] = (scope, _delimited(1, body))
        return kept[1]
