"""Whether the server traces, and the tracer its requests are given to. Nothing here imports OpenTelemetry: the SDK
and its OTLP/HTTP exporter (the `[otel]` extra, about 0.2 s to import) are loaded by `start_tracing` only when
tracing is on, so a server without it pays nothing (tests/telemetry/test_tracing_off.py checks sys.modules).

Tracing is on when `--otel-endpoint URL` (MOCK_SERVER_OTEL_ENDPOINT) is given, or when OpenTelemetry's own
variables name a collector: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT. The SDK reads the
rest of its variables itself (OTEL_TRACES_SAMPLER, OTEL_BSP_*, OTEL_EXPORTER_OTLP_TIMEOUT and _HEADERS,
OTEL_RESOURCE_ATTRIBUTES); OTEL_SERVICE_NAME defaults to `pix-limits-mock-server`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mock_server.spec.openapi import Specs
    from mock_server.telemetry.otel import OtelTracer as RequestTracer

log = logging.getLogger("mock_server")
DEFAULT_SERVICE_NAME = "pix-limits-mock-server"
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
OTEL_EXTRA = "pip install 'pix-limits-mock-server[otel]'"
# A noted domain event: its name, its attributes (ids), when it happened (time.time_ns()).
NotedEvent = tuple[str, Mapping[str, Any], int]


def tracing_endpoint(option: str | None, environ: Mapping[str, str]) -> str | None:
    """Where spans go, when tracing is on: the option's URL (the collector's base, like OTEL_EXPORTER_OTLP_ENDPOINT),
    else the variable that turned it on (the SDK's exporter reads it itself); None: tracing is off."""
    if option:
        return option
    for name in ENDPOINT_VARIABLES:
        if environ.get(name):
            return environ[name]
    return None


def start_tracing(option: str | None, specs: Specs, environ: Mapping[str, str] | None = None) -> RequestTracer | None:
    """The server's tracer, or None when tracing is off or the `[otel]` extra is missing (then said once: a CI
    job's variables meant for the service under test must not keep its mock from starting)."""
    environ = os.environ if environ is None else environ
    endpoint = tracing_endpoint(option, environ)
    if endpoint is None:
        return None
    try:
        from mock_server.telemetry.otel import OtelTracer
    except ImportError as exc:
        log.warning("tracing is asked for (%s) but OpenTelemetry is not installed (%s): %s", endpoint, exc, OTEL_EXTRA)
        return None
    return OtelTracer(option, endpoint, specs, environ)
