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

    def __init__(self, url: str, keep: bool = True) -> None:
        self.url = url
        self.keep = keep  # False: each request is decoded, its spans counted, and let go (a long benchmark)
        self.counted = 0  # spans received
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
def otlp_receiver(keep: bool = True, port: int = 0) -> Iterator[Receiver]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    received: list[Receiver] = []

    class Handler(BaseHTTPRequestHandler):
        # Connections kept alive, as an OpenTelemetry Collector keeps them: the exporter's client then sends every
        # batch on one (HTTP/1.0, the default here, made it connect again for each).
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            started = time.thread_time()
            length = int(self.headers.get("content-length") or 0)
            if self.path != "/v1/traces" or not 0 < length <= MAX_BODY:
                self.send_error(404 if self.path != "/v1/traces" else 400)
                return
            request = ExportTraceServiceRequest()
            request.ParseFromString(self.rfile.read(length))
            spans = sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)
            with received[0].lock:
                received[0].counted += spans
                if received[0].keep:
                    received[0].requests.append(request)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            with received[0].lock:
                received[0].cpu_seconds += time.thread_time() - started

        def do_GET(self) -> None:
            """GET /spans: how many spans were received (bench/tracing_cost.py, the receiver in a process)."""
            if self.path != "/spans":
                self.send_error(404)
                return
            answer = str(received[0].counted).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    received.append(Receiver(f"http://127.0.0.1:{server.server_address[1]}", keep))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield received[0]
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    """`python -m bench.otlp_receiver`: a receiver in a process of its own, counting what it decodes (its CPU is
    then no part of the process it receives from). Prints its URL, then serves until stdin closes."""
    import sys

    with otlp_receiver(keep=False) as receiver:
        print(receiver.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
