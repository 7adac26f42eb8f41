"""The server's options, one dataclass: filled by the CLI (flags and MOCK_SERVER_* variables) or by tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mock_server.spec.resources import data_path
from mock_server.state.bounds import Bounds, ConnectionLimits


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
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
    shadow_timeout: float = 10.0  # seconds the backend gets to answer a forwarded call
    state_file: Path | None = None  # the whole server's state, read at start and written (state/persistence.py)
    state_interval: float = 5.0  # seconds between writes of the state file: what a SIGKILL may lose
