"""The server's options, one dataclass: filled by the CLI (flags and MOCK_SERVER_* variables) or by tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mock_server.spec.resources import data_path
from mock_server.state.bounds import Bounds, ConnectionLimits
from mock_server.state.recording import RecordOptions


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    # Host names answered beyond localhost, IP addresses and `host` (http/hosts.py): `name`, `.domain`, `*`. Held by
    # the connection (mock-server, the pytest plugin): an app called in-process has no socket a web page can reach.
    allowed_hosts: tuple[str, ...] = ()
    port: int = 8000
    fixtures: Path = field(default_factory=lambda: data_path("fixtures"))
    scenario: str = "default"
    admin: bool = True
    admin_token: str | None = None
    seed: int | None = None
    clock: datetime | None = None  # every session starts with its clock frozen here
    max_sessions: int = 256  # sessions kept; the least recently used idle one beyond is evicted (state/sessions.py)
    log_level: str = "warning"
    access_log: bool = False
    validate_responses: bool = False
    coverage_report: Path | None = None  # written when the server stops: JSON for *.json, else Markdown
    bounds: Bounds = field(default_factory=Bounds)  # what a session may hold, the journal's bytes
    connection: ConnectionLimits = field(default_factory=ConnectionLimits)  # timeouts and head size
    shutdown_timeout: float = 10.0  # SIGTERM: in-flight requests get this long, then are cancelled
    shadow: str | None = None  # a backend's base URL: public calls are answered by it, divergences journaled
    shadow_headers: tuple[tuple[str, str], ...] = ()  # sent to the backend with every forwarded call
    shadow_cert: Path | None = None  # client certificate (PEM) for a backend that asks for one (mutual TLS)
    shadow_key: Path | None = None  # its private key, when not in the certificate's file
    shadow_cacert: Path | None = None  # the CA the backend's certificate is checked with (default: the system's)
    shadow_timeout: float = 10.0  # seconds the backend gets to answer a forwarded call, the whole answer read
    shadow_max_body: int = 8 * 1024 * 1024  # bytes of a backend's answer read, decompressed; beyond: 502
    # Record mode (`mock-server record`, with `shadow` the target): sessions start empty, kept in step with the
    # backend's answers, and the state is written as a scenario file at the end.
    recording: RecordOptions | None = None
    tls_cert: Path | None = None  # serve https with this certificate (PEM)...
    tls_key: Path | None = None  # ...and its key (None: in the certificate's file)
    client_ca: Path | None = None  # ask clients for a certificate issued by this CA (mutual TLS)
    client_cert: str = "required"  # with client_ca: "required" (refused at the handshake without one) or "optional"
    # A header in which a TLS-terminating proxy on this machine forwards the verified client certificate (PEM,
    # URL-escaped); honoured from loopback peers only. Lower case.
    client_cert_header: str | None = None
    # With client_ca: the only CNPJs whose client certificates are served (bare); empty: any trusted certificate.
    client_cnpjs: tuple[str, ...] = ()
    state_file: Path | None = None  # the whole server's state, read at start and written (state/persistence.py)
    # An OTLP/HTTP collector's base URL: tracing on (telemetry/tracing.py; OTEL_EXPORTER_OTLP_ENDPOINT does too)
    otel_endpoint: str | None = None
    state_interval: float = 5.0  # seconds between writes of the state file: what a SIGKILL may lose
    max_mcp_sessions: int = 256  # MCP sessions open on /__mock/mcp; beyond, the least recently used idle one closes
    mcp_replica: str | None = None  # begins every MCP session id issued (`NAME.`): a router routes by it

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None
