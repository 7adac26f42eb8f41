"""A local OTLP/HTTP receiver: what a collector is to the mock's exporter, in a thread of this process
(tests/telemetry, bench/tracing_cost.py; 127.0.0.1, port 0). It answers POST /v1/traces with an empty
ExportTraceServiceResponse and keeps each request decoded with opentelemetry-proto; nothing else is answered.
Bodies are bounded (MAX_BODY)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 16 * 1024 * 1024


class Receiver:
    """The received export requests (`ExportTraceServiceRequest`), in order, and the URL to export to."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.requests: list[Any] = []
        self.lock = threading.Lock()
        self.cpu_seconds = 0.0  # the receiver's threads' CPU time decoding and answering (bench/tracing_cost.py)

    def spans(self) -> list[Any]:
        """Every span received so far (opentelemetry.proto.trace.v1.trace_pb2.Span), with its resource's attributes
        as `resource` beside it: [(resource attributes, span)]."""
        found = []
        with self.lock:
            for request in self.requests:
                for resource_spans in request.resource_spans:
                    resource = attributes_of(resource_spans.resource.attributes)
                    for scope_spans in resource_spans.scope_spans:
                        found += [(resource, span) for span in scope_spans.spans]
        return found


def attributes_of(key_values: Any) -> dict[str, Any]:
    """OTLP KeyValues as a dict of plain values."""
    out: dict[str, Any] = {}
    for kv in key_values:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


@contextmanager
def otlp_receiver() -> Iterator[Receiver]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    received: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            started = time.thread_time()
            length = int(self.headers.get("content-length") or 0)
            if self.path != "/v1/traces" or not 0 < length <= MAX_BODY:
                self.send_error(404 if self.path != "/v1/traces" else 400)
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(self.rfile.read(length))
            with received[0].lock:
                received[0].requests.append(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            with received[0].lock:
                received[0].cpu_seconds += time.thread_time() - started

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    received.append(Receiver(f"http://127.0.0.1:{server.server_address[1]}"))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield received[0]
    finally:
        server.shutdown()
        server.server_close()
