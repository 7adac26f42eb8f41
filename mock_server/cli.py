"""`mock-server [serve|check|verify-provider]`: argv and MOCK_SERVER_* variables -> Settings -> uvicorn.

The only module that knows uvicorn. `mock-server check` has a parser of its own (its own --help); `healthcheck`
and `wait` are probe.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import gc
import json
import logging
import re
import signal
import ssl
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.types import ASGIApp

from mock_server import __version__, environment, probe
from mock_server.domain.clock import parse_instant
from mock_server.domain.documents import bare_cnpj
from mock_server.domain.errors import ScenarioNotFound
from mock_server.domain.models import Scenario
from mock_server.domain.words import counted
from mock_server.http.connection import protocol_class
from mock_server.http.hosts import HostPolicy, allowed_host_entry
from mock_server.http.outbound import Outbound, parse_header, tls_context
from mock_server.http.tls import CLIENT_CERT_MODES, TlsSetupError, server_context
from mock_server.http.tls_handshake import TlsConfig
from mock_server.scenarios.loader import ScenarioError, ScenarioLoader
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from mock_server.state.bounds import Bounds, ConnectionLimits, parse_size
from mock_server.state.coverage import Coverage, markdown
from mock_server.state.persistence import StateFile

EXIT_INVALID = 2
# Commands with their own options, parsed by probe.py (standard library only: they never load the server).
PROBES = {"healthcheck": probe.healthcheck_main, "wait": probe.wait_main, "pact": probe.pact_main}
VERIFY_PROVIDER = "verify-provider"  # its own options (mock_server/provider/command.py)
MCP = "mcp"  # its own options (_mcp_parser): the MCP server over stdio
COMMANDS = ("serve", "check", *PROBES, VERIFY_PROVIDER, "pki", MCP)
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 token


def _instant(value: str) -> datetime:
    try:
        at = parse_instant(value)
    except (ValueError, TypeError):  # TypeError: one without an offset, compared with the aware bounds
        at = None
    if at is None or at.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{value!r} is not an ISO 8601 date-time with a UTC offset")
    return at


def _at_least_one(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return number


def _port(value: str) -> int:
    if not value.strip().isdigit() or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0-65535; 0 picks a free one)")
    return int(value)


def _host_list(value: str) -> tuple[str, ...]:
    try:
        return tuple(allowed_host_entry(entry) for entry in value.split(",") if entry.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _cnpj_list(value: str) -> tuple[str, ...]:
    """Comma-separated CNPJs, bare or punctuated, each with valid check digits -> their bare forms."""
    cnpjs = []
    for entry in (text.strip() for text in value.split(",")):
        if not entry:
            continue
        bare = bare_cnpj(entry)
        if bare is None:
            raise argparse.ArgumentTypeError(f"{entry!r} is not a CNPJ (14 characters with valid check digits)")
        cnpjs.append(bare)
    return tuple(cnpjs)


def _size(value: str) -> int:
    try:
        return parse_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(value: str) -> int:
    if not value.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number >= 0")
    return int(value)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 10**6:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds > 0")
    return seconds


def _header(value: str) -> tuple[str, str]:
    try:
        return parse_header(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _bound_options(parser: argparse.ArgumentParser) -> None:
    """Memory caps and connection limits: what a long load run or a hostile client may cost."""
    bounds, limits, settings = Bounds(), ConnectionLimits(), Settings()
    group = parser.add_argument_group("bounds (memory per session, connections)")
    group.add_argument(
        "--journal",
        type=_size,
        default=environment.default("journal", str(bounds.journal_bytes)),
        metavar="SIZE|off",
        help="bytes of request journal per session, e.g. 4MiB (default 4MiB); off: no journal (load runs)",
    )
    group.add_argument(
        "--journal-total",
        type=_size,
        default=environment.default("journal_total", str(bounds.journal_total_bytes)),
        metavar="SIZE",
        help="bytes of journal over every session together (default 256MiB); the oldest entries go first",
    )
    for name, value, what in (
        ("accounts", bounds.max_accounts, "accounts a session may register"),
        ("events", bounds.max_events, "events a session may create"),
        ("recipients", bounds.max_recipients, "recipients a session may add"),
        ("faults", bounds.max_faults, "faults a session may hold armed"),
        ("schedules", bounds.max_schedules, "schedules a session may hold, applied and failed ones too"),
    ):
        group.add_argument(
            f"--max-{name}",
            type=_count,
            default=environment.default(f"max_{name}", str(value)),
            metavar="N",
            help=f"{what} (default %(default)s; beyond: 409 capacity_exceeded)",
        )
    group.add_argument(
        "--max-session-bytes",
        type=_size,
        default=environment.default("max_session_bytes", f"{bounds.max_session_bytes // 1024**2}MiB"),
        metavar="SIZE",
        help="bytes of memory a session may hold beyond its scenario: its own records, a loaded state, schedules "
        "and snapshots (default 64MiB; beyond: 409 capacity_exceeded)",
    )
    timeouts: tuple[tuple[str, float, str], ...] = (
        ("idle", limits.idle_timeout, "a connection that sends nothing is closed after"),
        ("header", limits.header_timeout, "a request line and headers must arrive within"),
        ("body", limits.body_timeout, "a request body must arrive within (else 408)"),
        ("shutdown", settings.shutdown_timeout, "on SIGTERM, requests in flight get"),
    )
    for name, seconds, what in timeouts:
        group.add_argument(
            f"--{name}-timeout",
            type=_seconds,
            default=environment.default(f"{name}_timeout", str(seconds)),
            metavar="SECONDS",
            help=f"{what} this long (default %(default)s)",
        )
    group.add_argument(
        "--max-header-bytes",
        type=_size,
        default=environment.default("max_header_bytes", str(limits.max_header_bytes)),
        metavar="SIZE",
        help="request line and headers together (default 64k; beyond: 431 headers_too_large)",
    )


ENVIRONMENT_EPILOG = (
    "Every option can also be set as MOCK_SERVER_<NAME>, e.g. MOCK_SERVER_PORT=0 (a flag wins over its variable; "
    "an empty variable counts as unset)."
)


def _shadow_options(parser: argparse.ArgumentParser) -> None:
    """Shadow mode: a real backend answers, the mock compares (checked in main: a bad value is a usage error)."""
    settings = Settings()
    group = parser.add_argument_group("shadow mode (public calls answered by a real backend, compared with the mock)")
    group.add_argument(
        "--shadow",
        default=environment.default("shadow"),
        metavar="URL",
        help="forward every public call to the backend at URL and answer with its answer; the mock answers the same "
        "call beside it and journals each divergence (GET /__mock/divergences, the dashboard)",
    )
    variable = environment.default("shadow_header")
    group.add_argument(
        "--shadow-header",
        type=_header,
        action="append",
        # The variable's headers (one a line) come first, the flags' after; checked in main like a flag's.
        default=[line for line in (variable or "").splitlines() if line.strip()],
        metavar="'NAME: VALUE'",
        help="send this header to the backend with every forwarded call (repeatable; the variable: one a line)",
    )
    for name, what in (
        ("cert", "client certificate (PEM) for a backend that asks for one (mutual TLS)"),
        ("key", "private key (PEM) of --shadow-cert, if not in its file"),
        ("cacert", "CA certificate(s) (PEM) the backend's certificate is checked with (default: the system's)"),
    ):
        group.add_argument(
            f"--shadow-{name}", type=Path, default=environment.default(f"shadow_{name}"), metavar="FILE", help=what
        )
    group.add_argument(
        "--shadow-timeout",
        type=_seconds,
        default=environment.default("shadow_timeout", str(settings.shadow_timeout)),
        metavar="SECONDS",
        help="the backend gets this long to answer a forwarded call, else 502 backend_unreachable "
        "(default %(default)s)",
    )


def _check_shadow(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The shadow options as a whole: a URL, headers, TLS files that load; else a usage error (exit 2)."""
    if args.shadow is None:
        return
    parts = urlsplit(args.shadow)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        parser.error(f"argument --shadow: {args.shadow!r} is not an http:// or https:// base URL")
    try:
        args.shadow_header = [parse_header(h) if isinstance(h, str) else h for h in args.shadow_header]
    except ValueError as exc:
        parser.error(f"MOCK_SERVER_SHADOW_HEADER: {exc}")
    if args.shadow_key is not None and args.shadow_cert is None:
        parser.error("argument --shadow-key goes with --shadow-cert")
    outbound = Outbound(args.shadow, (), args.shadow_cert, args.shadow_key, args.shadow_cacert)
    try:
        tls_context(outbound)
    except (OSError, ssl.SSLError) as exc:
        parser.error(f"the --shadow TLS files cannot be used: {exc}")


def _fixtures_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=environment.default("fixtures", Settings().fixtures),
        metavar="DIR",
        help="directory of scenario files, NAME.yaml or NAME.yml each (default: the shipped scenarios)",
    )


def _scenario_options(parser: argparse.ArgumentParser) -> None:
    """Where sessions start from (serve and mcp)."""
    _fixtures_option(parser)
    parser.add_argument(
        "--scenario",
        default=environment.default("scenario", Settings().scenario),
        help="scenario sessions start from (default %(default)s)",
    )


def _session_options(parser: argparse.ArgumentParser) -> None:
    """The admin token, the sessions' ids and clock, the log level (serve and mcp)."""
    defaults = Settings()
    parser.add_argument(
        "--admin-token",
        default=environment.default("admin_token", empty_is_unset=False),  # empty: refused in main()
        help="require Authorization: Bearer TOKEN on /__mock/* except health",
    )
    parser.add_argument(
        "--seed", type=int, default=environment.default("seed"), help="make generated ids deterministic per session"
    )
    parser.add_argument(
        "--max-sessions",
        type=_at_least_one,
        default=environment.default("max_sessions", str(defaults.max_sessions)),
        help="sessions kept; beyond, the least recently used idle one is evicted (default %(default)s)",
    )
    parser.add_argument(
        "--clock",
        type=_instant,
        default=environment.default("clock"),
        help="start every session with its clock frozen at this ISO 8601 date-time",
    )
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default=environment.default("log_level", defaults.log_level),
        help="log level (default %(default)s; info also logs every request)",
    )


def _parser() -> argparse.ArgumentParser:
    """`mock-server [serve]`: the server's options."""
    defaults = Settings()
    parser = argparse.ArgumentParser(
        prog="mock-server",
        # Short, so that a usage error's one line is not lost under every option (--help lists them all).
        usage="%(prog)s [serve] [OPTION ...]\n"
        "       %(prog)s check [--fixtures DIR]\n"
        "       %(prog)s healthcheck [URL] [OPTION ...]\n"
        "       %(prog)s wait URL [OPTION ...]\n"
        "       %(prog)s verify-provider --target URL [OPTION ...]\n"
        "       %(prog)s mcp [OPTION ...]",
        description="Stateful mock of the Extraordinary Amortization Query and PIX Limits Interface.",
        epilog=ENVIRONMENT_EPILOG,
    )
    parser.add_argument(
        "--version", action="version", version=f"mock-server {__version__}", help="print the version and exit"
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=COMMANDS,
        default="serve",
        help="serve (default); check the scenario files and exit (`mock-server check --help`); healthcheck (a "
        "container's HEALTHCHECK) or "
        "wait URL (a CI start); pact (a session's Pact contract into a file): see `mock-server healthcheck --help`, "
        "`mock-server wait --help`, `mock-server pact --help`; verify-provider: check a real implementation against "
        "the mock, see `mock-server verify-provider --help`; pki init DIR: test certificates for mutual TLS "
        "(`mock-server pki init --help`); mcp: the mock as an MCP server on stdio, for an agent "
        "(`mock-server mcp --help`)",
    )
    parser.add_argument(
        "--host",
        default=environment.default("host", defaults.host),
        help="interface to listen on (default %(default)s)",
    )
    # A default from MOCK_SERVER_* is text that goes through `type` like a flag's value: a bad one is a usage
    # error (exit 2) naming the variable (environment.name_variables).
    parser.add_argument(
        "--port",
        type=_port,
        default=environment.default("port", str(defaults.port)),
        help="port (default %(default)s; 0 picks a free one)",
    )
    _scenario_options(parser)
    parser.add_argument(
        "--allowed-hosts",
        type=_host_list,
        default=environment.default("allowed_hosts"),
        metavar="NAMES",
        help="host names the server answers to besides localhost, IP addresses and --host, comma-separated: "
        "mock (that name), .example.com (it and every name under it), * (any); other Host headers get 403 "
        "(a DNS-rebinding web page sends its own name: docs/threat-model.md)",
    )
    parser.add_argument(
        "--no-admin",
        action="store_true",
        default=environment.default("no_admin", False),
        help="answer 404 on /__mock/* except health",
    )
    _session_options(parser)
    parser.add_argument(
        "--validate-responses",
        action="store_true",
        default=environment.default("validate_responses", False),
        help="check every response against the spec; a violation is logged and answered as a 500",
    )
    parser.add_argument(
        "--coverage-report",
        type=Path,
        default=environment.default("coverage_report"),
        metavar="FILE",
        help="write the API coverage to FILE when the server stops (JSON if it ends in .json, else Markdown)",
    )
    parser.add_argument(
        "--state-file",
        type=Path,
        default=environment.default("state_file") or None,
        metavar="FILE",
        help="keep the whole server's state in FILE: read at start (a file that cannot be read back stops the start, "
        "exit 2, and is never written over), written atomically every --state-interval seconds and on SIGTERM",
    )
    parser.add_argument(
        "--state-interval",
        type=_seconds,
        default=environment.default("state_interval", str(defaults.state_interval)),
        metavar="SECONDS",
        help="seconds between writes of --state-file, when anything changed: what a SIGKILL may lose "
        "(default %(default)s)",
    )
    _bound_options(parser)
    _shadow_options(parser)
    _tls_options(parser)
    environment.name_variables(parser)
    return parser


def _check_parser() -> argparse.ArgumentParser:
    """`mock-server check`: its own usage and options (it reads the scenario files and serves nothing)."""
    parser = argparse.ArgumentParser(
        prog="mock-server check",
        description="Read and check every scenario file of a directory, as the server does at start-up, and exit: "
        "0 when all are valid (their names are printed), 2 with every problem of every file, one a line "
        "(FILE:LINE:COLUMN: PATH: what is wrong).",
        epilog="--fixtures can also be set as MOCK_SERVER_FIXTURES.",
    )
    _fixtures_option(parser)
    environment.name_variables(parser)
    return parser


def _tls_options(parser: argparse.ArgumentParser) -> None:
    """https and mutual TLS (docs/tls.md); `mock-server pki init DIR` makes test certificates for them."""
    group = parser.add_argument_group("TLS (https, mutual TLS; test certificates: mock-server pki init DIR)")
    group.add_argument(
        "--tls-cert",
        type=Path,
        default=environment.default("tls_cert"),
        metavar="FILE",
        help="serve https with this PEM certificate (its chain may follow it in the file)",
    )
    group.add_argument(
        "--tls-key",
        type=Path,
        default=environment.default("tls_key"),
        metavar="FILE",
        help="the certificate's PEM private key (default: in the --tls-cert file)",
    )
    group.add_argument(
        "--client-ca",
        type=Path,
        default=environment.default("client_ca"),
        metavar="FILE",
        help="ask clients for a certificate issued by a CA of this PEM file (mutual TLS); needs --tls-cert",
    )
    group.add_argument(
        "--client-cert",
        choices=CLIENT_CERT_MODES,
        default=environment.default("client_cert"),
        help="with --client-ca: required (default: the handshake fails without a trusted certificate) or optional "
        "(a client may come without one; one it sends must still be trusted)",
    )
    group.add_argument(
        "--client-cnpj",
        type=_cnpj_list,
        default=environment.default("client_cnpj"),
        metavar="CNPJS",
        help="with --client-ca: serve only clients whose certificate carries one of these CNPJs (comma-separated, "
        "bare or punctuated); another institution's certificate, however well chained, is closed on right after "
        "the handshake (default: any trusted certificate, told apart in the journal)",
    )
    group.add_argument(
        "--client-cert-header",
        default=environment.default("client_cert_header"),
        metavar="NAME",
        help="behind a proxy that terminates mutual TLS: read the verified client certificate from this request "
        "header (PEM, URL-escaped as nginx's $ssl_client_escaped_cert, or base64), from loopback peers only",
    )


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings(
        host=args.host,
        allowed_hosts=args.allowed_hosts or (),
        port=args.port,
        fixtures=args.fixtures,
        scenario=args.scenario,
        admin=not args.no_admin,
        admin_token=args.admin_token,
        seed=args.seed,
        max_sessions=args.max_sessions,
        clock=args.clock,
        log_level=args.log_level,
        access_log=args.log_level in ("info", "debug"),
        validate_responses=args.validate_responses,
        coverage_report=args.coverage_report,
        bounds=Bounds(
            max_accounts=args.max_accounts,
            max_events=args.max_events,
            max_recipients=args.max_recipients,
            max_faults=args.max_faults,
            max_schedules=args.max_schedules,
            max_session_bytes=args.max_session_bytes,
            journal_bytes=args.journal,
            journal_total_bytes=args.journal_total,
        ),
        connection=ConnectionLimits(
            idle_timeout=args.idle_timeout,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            max_header_bytes=args.max_header_bytes,
        ),
        shutdown_timeout=args.shutdown_timeout,
        shadow=args.shadow,
        shadow_headers=tuple(parse_header(h) if isinstance(h, str) else h for h in args.shadow_header),
        shadow_cert=args.shadow_cert,
        shadow_key=args.shadow_key,
        shadow_cacert=args.shadow_cacert,
        shadow_timeout=args.shadow_timeout,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
        client_cert=args.client_cert or "required",
        client_cert_header=args.client_cert_header.lower() if args.client_cert_header else None,
        client_cnpjs=args.client_cnpj or (),
        state_file=args.state_file,
        state_interval=args.state_interval,
    )


def _check_tls_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Combinations argparse cannot see, as usage errors (exit 2)."""
    if args.tls_cert is None:
        for flag, value in (("--tls-key", args.tls_key), ("--client-ca", args.client_ca)):
            if value is not None:
                parser.error(f"argument {flag} needs --tls-cert (or MOCK_SERVER_TLS_CERT): the server speaks TLS")
    if args.client_cnpj and args.client_ca is None:
        parser.error("argument --client-cnpj needs --client-ca FILE: only a client certificate carries a CNPJ")
    if args.client_cert is not None and args.client_ca is None:
        parser.error("argument --client-cert needs --client-ca FILE: the CA a client certificate must be issued by")
    header = args.client_cert_header
    if header is not None and not HEADER_NAME.fullmatch(header):
        parser.error(f"argument --client-cert-header: {header!r} is not a header name")


def check(fixtures: Path) -> int:
    try:
        scenarios = ScenarioLoader.from_specs(load_specs()).load_directory(fixtures)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, flush=True)
        return EXIT_INVALID
    if not scenarios:  # nothing wrong in it, and nothing to serve either: most likely the wrong directory
        print(f"{fixtures}: {NO_SCENARIO_FILE}", flush=True)
        return EXIT_INVALID
    print(f"{counted(len(scenarios), 'scenario')} valid in {fixtures}: {', '.join(scenarios)}", flush=True)
    default = Settings().scenario
    if default not in scenarios:
        print(
            f"note: none is named {default!r}, the one `mock-server` starts from: serve these with "
            f"--scenario NAME (e.g. --scenario {next(iter(scenarios))})",
            flush=True,
        )
    return 0


NO_SCENARIO_FILE = "no scenario file (NAME.yaml or NAME.yml) in this directory"


def scenario_not_found(fixtures: Path, missing: ScenarioNotFound) -> str:
    """What `serve` says when the scenario to start from is not in the directory: which ones are, how to pick."""
    if not missing.known:
        return (
            f"{fixtures}: {NO_SCENARIO_FILE}, so there is no scenario {missing.name!r} to start from: add "
            f"{missing.name}.yaml there, or point --fixtures (MOCK_SERVER_FIXTURES) at your scenario files"
        )
    return (
        f"{fixtures}: no scenario named {missing.name!r} to start sessions from; "
        f"{counted(len(missing.known), 'scenario')} there: {', '.join(missing.known)}.\n"
        f"Pick one with --scenario NAME (or MOCK_SERVER_SCENARIO=NAME), e.g. "
        f"`mock-server --fixtures {fixtures} --scenario {missing.known[0]}`, or add {missing.name}.yaml there."
    )


class _Server(uvicorn.Server):
    """Prints the ready line once the socket accepts requests, with the real port."""

    def __init__(
        self,
        config: uvicorn.Config,
        banner: str,
        on_shutdown: Callable[[], None] | None = None,
        state_file: StateFile | None = None,
    ) -> None:
        super().__init__(config)
        self._banner = banner
        self._on_shutdown = on_shutdown
        self._state_file = state_file
        self._state_writes: asyncio.Task[None] | None = None
        self.interrupted = False

    def handle_exit(self, sig: int, frame: Any) -> None:
        # uvicorn stops gracefully, then raises the signal again: SIGTERM ends the process by the signal (a shell
        # reports 143); SIGINT raises KeyboardInterrupt, or nothing when it is ignored (a background job of a
        # non-interactive shell). serve() turns both SIGINT outcomes into exit status 0: Ctrl-C is how a server
        # in a terminal is stopped, not a failure (`make run` would report "Error 130" for a status of 130).
        self.interrupted = self.interrupted or sig == signal.SIGINT
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list | None = None) -> None:  # type: ignore[type-arg]
        # Here, not after run(): uvicorn re-raises SIGTERM/SIGINT once it has shut down, so nothing after
        # run() would get to run when a signal stopped the server.
        await super().shutdown(sockets)
        if self._state_writes is not None:
            self._state_writes.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._state_writes
        if self._state_file is not None:
            # The last requests are answered: this write holds every write acknowledged.
            try:
                self._state_file.save()
            except OSError as exc:
                print(f"mock-server: cannot write the state file: {exc}", file=sys.stderr, flush=True)
        if self._on_shutdown is not None:
            self._on_shutdown()

    async def startup(self, sockets: list | None = None) -> None:  # type: ignore[type-arg]
        await super().startup(sockets)
        if self.started and self._state_file is not None:
            self._state_writes = asyncio.create_task(self._state_file.run())
        if self.started:
            host, port = self.config.host, self.config.port
            for server in self.servers:
                for sock in server.sockets:
                    port = sock.getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            scheme = "https" if self.config.is_ssl else "http"
            print(f"mock-server ready on {scheme}://{shown}:{port} {self._banner}", flush=True)


def _log_config() -> dict[str, Any]:
    """uvicorn's logging with the access log on stderr as well: stdout carries the ready line and nothing else."""
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def server_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The server's TLS context, None for plain HTTP; TlsSetupError names a file that cannot serve."""
    if settings.tls_cert is None:
        return None
    return server_context(settings.tls_cert, settings.tls_key, settings.client_ca, settings.client_cert)


def uvicorn_config(app: ASGIApp, settings: Settings, context: ssl.SSLContext | None = None) -> uvicorn.Config:
    """The uvicorn options the server runs with (https with `context`). bench/bare_app.py serves its baseline with
    them too, so the benchmark's "bare Starlette" differs from the mock by the app alone."""
    tls = {} if context is None else {"ssl_context_factory": lambda config, default: context}
    # TLS: asyncio's loop made to answer handshakes as a real server does (http/tls_handshake.py); plain HTTP keeps
    # uvicorn's choice (uvloop).
    config_class = uvicorn.Config if context is None else TlsConfig
    config = config_class(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
        access_log=settings.access_log,
        server_header=False,
        date_header=False,
        lifespan="off",
        ws="none",  # no route speaks WebSocket: http/connection.py answers an upgrade in the contract's body
        log_config=_log_config(),
        # http/connection.py: uvicorn's httptools protocol plus the deadlines, head-size limit and Host rule it lacks.
        http=protocol_class(
            settings.connection,
            HostPolicy.build(settings.allowed_hosts, settings.host),
            tls=context is not None,
            client_cnpjs=settings.client_cnpjs,
        ),
        timeout_keep_alive=settings.connection.idle_timeout,  # type: ignore[arg-type]  # float seconds work
        timeout_graceful_shutdown=settings.shutdown_timeout,  # type: ignore[arg-type]
        **tls,  # type: ignore[arg-type]
    )
    if isinstance(config, TlsConfig):
        config.handshake_timeout = settings.connection.header_timeout
    return config


def ready_banner(scenario: str, events: int, accounts: int) -> str:
    """The ready line's tail: `(scenario default: 4 events, 2 accounts)`, `(scenario one: 1 event, 1 account)`."""
    return f"(scenario {scenario}: {counted(events, 'event')}, {counted(accounts, 'account')})"


def _app_or_exit(settings: Settings) -> tuple[Starlette, str] | int:
    """The app and its ready line's tail, or the exit status once its scenarios' problems are printed (stderr)."""
    from mock_server.app import create_app  # after argument errors are out of the way

    try:
        app = create_app(settings)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr, flush=True)
        return EXIT_INVALID
    except ScenarioNotFound as exc:
        print(scenario_not_found(settings.fixtures, exc), file=sys.stderr, flush=True)
        return EXIT_INVALID
    # The seed never becomes garbage: out of the collector's sight, a million events cost no GC pauses.
    gc.freeze()
    scenario = app.state.sessions.scenarios[settings.scenario]
    return app, ready_banner(scenario.name, len(scenario.events), len(scenario.accounts))


def serve(settings: Settings) -> int:
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    try:
        context = server_tls_context(settings)
    except TlsSetupError as exc:
        print(f"mock-server: {exc}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    built = _app_or_exit(settings)
    if isinstance(built, int):
        return built
    app, banner = built
    report = settings.coverage_report
    coverage = app.state.coverage
    on_shutdown = (lambda: write_coverage_report(coverage, report)) if report else None
    server = _Server(uvicorn_config(app, settings, context), banner, on_shutdown, app.state.state_file)
    try:
        server.run()
    except KeyboardInterrupt:
        return 0  # Ctrl-C: stopped as asked, gracefully (handle_exit)
    if server.interrupted:
        return 0
    # uvicorn itself exits 3 (sys.exit) when it cannot bind the port.
    return 0 if server.started else 1


def write_coverage_report(coverage: Coverage, path: Path) -> None:
    """The coverage as CI keeps it: JSON when `path` ends in .json, else the Markdown report."""
    report = coverage.report()
    text = json.dumps(report, indent=2) + "\n" if path.suffix.lower() == ".json" else markdown(report) + "\n"
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"mock-server: cannot write the coverage report: {exc}", file=sys.stderr, flush=True)


def oracle(fixtures: Path, scenario: str, specs: Specs) -> tuple[ASGIApp, Scenario]:
    """The mock verify-provider compares a provider with: the app on `scenario`, bounded only by what one run
    registers, with no journal (nobody reads it)."""
    from mock_server.app import create_app

    bounds = Bounds(max_accounts=10**7, max_recipients=10**7, journal_bytes=0)
    app = create_app(Settings(fixtures=fixtures, scenario=scenario, bounds=bounds), specs)
    return app, app.state.sessions.scenarios[scenario]


def _mcp_parser() -> argparse.ArgumentParser:
    """`mock-server mcp`: serve's options for the sessions (scenario, clock, seed, token)."""
    parser = argparse.ArgumentParser(
        prog="mock-server mcp",
        description="Serve the mock as an MCP server over stdin and stdout, for an agent (an MCP client) that "
        "starts it: one tool per operation of the public API and of /__mock, working in a session of its own. "
        "stdout carries MCP messages only; the ready line and the logs go to stderr. Needs the mcp extra "
        "(the official MCP SDK).",
        epilog=ENVIRONMENT_EPILOG,
    )
    _scenario_options(parser)
    _session_options(parser)
    environment.name_variables(parser)
    return parser


def mcp_main(arguments: Sequence[str]) -> int:
    parser = _mcp_parser()
    args = parser.parse_args(arguments)
    if args.admin_token is not None and not args.admin_token.strip():
        parser.error("argument --admin-token (or MOCK_SERVER_ADMIN_TOKEN) is empty: give a token, or unset it")
    try:
        from mock_server.mcp.stdio import serve as serve_mcp  # the SDK: only for this command
    except ImportError as exc:
        print(f"mock-server mcp needs the mcp extra, the official MCP SDK ({exc})", file=sys.stderr)
        return EXIT_INVALID
    settings = Settings(
        fixtures=args.fixtures,
        scenario=args.scenario,
        admin_token=args.admin_token,
        seed=args.seed,
        max_sessions=args.max_sessions,
        clock=args.clock,
        log_level=args.log_level,
        access_log=False,
    )
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")  # stderr
    built = _app_or_exit(settings)
    if isinstance(built, int):
        return built
    app, banner = built
    return serve_mcp(app, settings, banner)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments and arguments[0] in PROBES:
        return PROBES[arguments[0]](arguments[1:])
    if arguments and arguments[0] == VERIFY_PROVIDER:
        from mock_server.provider import command  # httpx and the flows, only for this command

        return command.main(arguments[1:], oracle)
    if arguments and arguments[0] == "pki":
        from mock_server.pki import pki_main  # cryptography, when a PKI is made: not for serving

        return pki_main(arguments[1:])
    serve_parser, check_parser = _parser(), _check_parser()
    # A MOCK_SERVER_* variable no option reads is most likely a typo of one that is: say so before anything else.
    environment.warn_unknown("mock-server", environment.variables_read_by(serve_parser, check_parser), sys.stderr)
    if arguments and arguments[0] == MCP:
        return mcp_main(arguments[1:])
    if arguments and arguments[0] == "check":
        return check(check_parser.parse_args(arguments[1:]).fixtures)
    args = serve_parser.parse_args(arguments)
    if args.command == "check":  # `mock-server --fixtures DIR check`: the command after the options
        return check(args.fixtures)
    if args.admin_token is not None and not args.admin_token.strip():
        # An empty token would make `Authorization: Bearer` with nothing after it the password.
        serve_parser.error("argument --admin-token (or MOCK_SERVER_ADMIN_TOKEN) is empty: give a token, or unset it")
    _check_shadow(serve_parser, args)
    _check_tls_options(serve_parser, args)
    return serve(settings_from(args))


if __name__ == "__main__":
    sys.exit(main())
