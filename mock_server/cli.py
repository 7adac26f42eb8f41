"""`mock-server [serve|check|verify-provider]`: argv and MOCK_SERVER_* variables -> Settings -> the server
(mock_server/server.py, the one module that configures uvicorn).

`mock-server check` has a parser of its own (its own --help); `healthcheck`
and `wait` are probe.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import logging
import os
import re
import ssl
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.types import ASGIApp

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from mock_server.http.handling import ServerContext
    from mock_server.state.persistence import StateFile

from mock_server import __version__, environment
from mock_server.domain.clock import parse_instant
from mock_server.domain.documents import bare_cnpj
from mock_server.domain.errors import ScenarioNotFound
from mock_server.domain.models import Scenario
from mock_server.domain.words import counted
from mock_server.http.hosts import allowed_host_entry
from mock_server.http.tls import CLIENT_CERT_MODES, TlsSetupError, server_context
from mock_server.scenarios.loader import ScenarioError, ScenarioLoader
from mock_server.server import Server
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from mock_server.state.bounds import Bounds, ConnectionLimits, parse_size
from mock_server.state.coverage import Coverage, markdown
from mock_server.state.recording import RecordOptions

EXIT_INVALID = 2
# Commands with their own options, parsed by probe.py (standard library only: they never load the server; and
# the server never loads probe.py's http.client).
PROBES = ("healthcheck", "wait", "pact")
VERIFY_PROVIDER = "verify-provider"  # its own options (mock_server/provider/command.py)
RECORD = "record"  # its own parser: serve's options, the target's instead of shadow mode's (docs/recording.md)
MCP = "mcp"  # its own options (_mcp_parser): the MCP server over stdio
COMMANDS = ("serve", "check", *PROBES, VERIFY_PROVIDER, "pki", RECORD, MCP)
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
    from mock_server.http.outbound import header_option  # the outbound client: imported by what uses it

    return header_option(value)


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


def _outbound_options(parser: argparse.ArgumentParser, flag: str, noun: str, title: str, what: str) -> None:
    """The URL of a real service the mock forwards to (`--shadow`, record's `--target`) and how to reach it: headers,
    TLS files, a timeout, each flag named after `flag` (checked in main: a bad value is a usage error)."""
    settings = Settings()
    group = parser.add_argument_group(title)
    group.add_argument(f"--{flag}", default=environment.default(flag), metavar="URL", help=what)
    variable = environment.default(f"{flag}_header")
    group.add_argument(
        f"--{flag}-header",
        type=_header,
        action="append",
        # The variable's headers (one a line) come first, the flags' after; checked in main like a flag's.
        default=[line for line in (variable or "").splitlines() if line.strip()],
        metavar="'NAME: VALUE'",
        help=f"send this header to the {noun} with every forwarded call (repeatable; the variable: one a line)",
    )
    for name, help_text in (
        ("cert", f"client certificate (PEM) for a {noun} that asks for one (mutual TLS)"),
        ("key", f"private key (PEM) of --{flag}-cert, if not in its file"),
        ("cacert", f"CA certificate(s) (PEM) the {noun}'s certificate is checked with (default: the system's)"),
    ):
        group.add_argument(
            f"--{flag}-{name}", type=Path, default=environment.default(f"{flag}_{name}"), metavar="FILE", help=help_text
        )
    group.add_argument(
        f"--{flag}-timeout",
        type=_seconds,
        default=environment.default(f"{flag}_timeout", str(settings.shadow_timeout)),
        metavar="SECONDS",
        help=f"the {noun} gets this long to answer a forwarded call, its whole answer read (a deadline for the "
        "call, not for each read), else 502 backend_unreachable (default %(default)s)",
    )
    group.add_argument(
        f"--{flag}-max-body",
        type=_size,
        default=environment.default(f"{flag}_max_body", "8MiB"),
        metavar="SIZE",
        help=f"bytes of a {noun}'s answer read, decompressed (default 8MiB); a larger answer is a 502 "
        "backend_unreachable, journaled as a divergence",
    )


def _shadow_options(parser: argparse.ArgumentParser) -> None:
    """Shadow mode: a real backend answers, the mock compares."""
    _outbound_options(
        parser,
        "shadow",
        "backend",
        "shadow mode (public calls answered by a real backend, compared with the mock)",
        "forward every public call to the backend at URL and answer with its answer; the mock answers the same "
        "call beside it and journals each divergence (GET /__mock/divergences, the dashboard)",
    )


def _parsed_headers(values: Sequence[str | tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Headers as `Name: value` text (a MOCK_SERVER_* variable's) parsed, pairs (the flags') as they are."""
    if not values:
        return ()
    from mock_server.http.outbound import parse_header

    return tuple(parse_header(h) if isinstance(h, str) else h for h in values)


def _check_shadow(parser: argparse.ArgumentParser, args: argparse.Namespace, flag: str = "shadow") -> None:
    """The outbound options as a whole: a URL, headers, TLS files that load; else a usage error (exit 2)."""
    url = getattr(args, flag)
    if url is None:
        return
    # Imported here: a server without a backend never loads the outbound client (http/outbound.py).
    from mock_server.http.outbound import Outbound, TlsFileError, tls_context

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        parser.error(f"argument --{flag}: {url!r} is not an http:// or https:// base URL")
    try:
        headers = list(_parsed_headers(getattr(args, f"{flag}_header")))
        setattr(args, f"{flag}_header", headers)
    except ValueError as exc:
        parser.error(f"MOCK_SERVER_{flag.upper()}_HEADER: {exc}")
    cert, key = getattr(args, f"{flag}_cert"), getattr(args, f"{flag}_key")
    if key is not None and cert is None:
        parser.error(f"argument --{flag}-key goes with --{flag}-cert")
    max_body = getattr(args, f"{flag}_max_body")
    if max_body < 1024:
        parser.error(f"argument --{flag}-max-body: {max_body} bytes is less than 1KiB")
    outbound = Outbound(url, (), cert, key, getattr(args, f"{flag}_cacert"), flags=f"--{flag}-")
    try:
        tls_context(outbound)
    except TlsFileError as exc:
        parser.error(f"the --{flag} TLS files cannot be used: {exc}")


def _record_options(parser: argparse.ArgumentParser) -> None:
    """`mock-server record`: the target (named as shadow mode's backend options are), the file, the pseudonyms."""
    _outbound_options(
        parser,
        "target",
        "target",
        "the provider recorded (public calls answered by it; the mock keeps a session in step)",
        "the provider's base URL: every public call is forwarded to it and answered with its answer (required)",
    )
    group = parser.add_argument_group("the recording")
    group.add_argument(
        "--out",
        type=Path,
        default=environment.default("out"),
        metavar="FILE",
        help="the scenario file written at the end, NAME.yaml or NAME.yml (the scenario is named NAME); required",
    )
    group.add_argument(
        "--pseudonym-key",
        default=environment.default("pseudonym_key", empty_is_unset=False),
        metavar="KEY",
        help="derive pseudonyms with this secret (HMAC-SHA256): the same key gives an input the same pseudonym in "
        "every recording (default: a random key, for this recording alone)",
    )
    group.add_argument(
        "--pseudonym-map",
        type=Path,
        default=environment.default("pseudonym_map"),
        metavar="FILE",
        help="write the map from each original identifier, as the target saw it, to its pseudonym (JSON, mode 0600); "
        "keep it out of the repository",
    )
    group.add_argument(
        "--keep-identifiers",
        action="store_true",
        default=environment.default("keep_identifiers", False),
        help="write CPF and CNPJ numbers and account ids as the target showed them (no pseudonyms)",
    )


def _check_record(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RecordOptions:
    """The record options as a whole, else a usage error (exit 2); the server's options as serve's."""
    if args.target is None:
        parser.error("argument --target URL is required: the provider to record")
    _check_shadow(parser, args, "target")
    out: Path | None = args.out
    if out is None:
        parser.error("argument --out FILE is required: the scenario file to write")
    if out.suffix not in (".yaml", ".yml") or not out.stem:
        parser.error(f"argument --out: {str(out)!r} is not NAME.yaml or NAME.yml (a scenario file is named so)")
    for flag, path in (("--out", out), ("--pseudonym-map", args.pseudonym_map)):
        directory = path.parent if path is not None else None
        if directory is not None and not (directory.is_dir() and os.access(directory, os.W_OK)):
            parser.error(f"argument {flag}: the directory {str(directory)!r} does not exist or cannot be written")
    key = args.pseudonym_key
    if key is not None and not key.strip():
        parser.error("argument --pseudonym-key (or MOCK_SERVER_PSEUDONYM_KEY) is empty: give a key, or unset it")
    if args.keep_identifiers and (key is not None or args.pseudonym_map is not None):
        parser.error("argument --keep-identifiers keeps the originals: --pseudonym-key and --pseudonym-map have no use")
    return RecordOptions(
        out, args.target.rstrip("/"), key.encode("utf-8") if key else None, args.pseudonym_map, args.keep_identifiers
    )


def record_main(parser: argparse.ArgumentParser, arguments: Sequence[str]) -> int:
    """`mock-server record`: serve with the target as shadow mode's backend, sessions started empty, and the file
    written at the end."""
    args = parser.parse_args(arguments)
    if args.admin_token is not None and not args.admin_token.strip():
        parser.error("argument --admin-token (or MOCK_SERVER_ADMIN_TOKEN) is empty: give a token, or unset it")
    recording = _check_record(parser, args)
    _check_tls_options(parser, args)
    defaults = Settings()
    args.fixtures, args.scenario = defaults.fixtures, recording.name
    args.state_file, args.state_interval = None, defaults.state_interval
    for name in ("", "_header", "_cert", "_key", "_cacert", "_timeout", "_max_body"):
        setattr(args, f"shadow{name}", getattr(args, f"target{name}"))
    return serve(dataclasses.replace(settings_from(args), recording=recording))


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
    """The admin token, the sessions' ids and clock, the log level (serve, record and mcp)."""
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


def _parser(record: bool = False) -> argparse.ArgumentParser:
    """`mock-server [serve]`: the server's options; `record`: those of `mock-server record`, the same but for the
    scenario to start from (a recording starts empty) and shadow mode (its target takes its place)."""
    defaults = Settings()
    if record:
        parser = argparse.ArgumentParser(
            prog="mock-server record",
            usage="%(prog)s --target URL --out FILE [OPTION ...]",
            description="Answer every public call with what the target answered, keep a session in step with what "
            "it showed, and on SIGINT/SIGTERM or POST /__mock/record/stop write it as a scenario file (CPF, CNPJ and "
            "account ids replaced by pseudonyms). docs/recording.md",
            epilog=ENVIRONMENT_EPILOG,
        )
        _record_options(parser)
    else:
        parser = _serve_parser()
    return _server_options(parser, defaults, record)


def _serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mock-server",
        # Short, so that a usage error's one line is not lost under every option (--help lists them all).
        usage="%(prog)s [serve] [OPTION ...]\n"
        "       %(prog)s check [--fixtures DIR]\n"
        "       %(prog)s healthcheck [URL] [OPTION ...]\n"
        "       %(prog)s wait URL [OPTION ...]\n"
        "       %(prog)s verify-provider --target URL [OPTION ...]\n"
        "       %(prog)s record --target URL --out FILE [OPTION ...]\n"
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
        "(`mock-server pki init --help`); record: a provider's answers into a scenario (`mock-server record "
        "--help`); mcp: the mock as an MCP server on stdio, for an agent (`mock-server mcp --help`)",
    )
    return parser


def _server_options(parser: argparse.ArgumentParser, defaults: Settings, record: bool) -> argparse.ArgumentParser:
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
    if not record:
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
    if not record:
        parser.add_argument(
            "--state-file",
            type=Path,
            default=environment.default("state_file") or None,
            metavar="FILE",
            help="keep the whole server's state in FILE: read at start (a file that cannot be read back stops the "
            "start, exit 2, and is never written over), written atomically every --state-interval seconds and on "
            "SIGTERM; one server a file (a lock on FILE.lock: a second server exits 2)",
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
    parser.add_argument(
        "--otel-endpoint",
        default=environment.default("otel_endpoint") or None,
        metavar="URL",
        help="send a span per request to this OTLP/HTTP collector's base URL (OTEL_EXPORTER_OTLP_ENDPOINT does "
        "too; needs the [otel] extra; docs/telemetry.md)",
    )
    if not record:
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
        shadow_headers=_parsed_headers(args.shadow_header),
        shadow_cert=args.shadow_cert,
        shadow_key=args.shadow_key,
        shadow_cacert=args.shadow_cacert,
        shadow_timeout=args.shadow_timeout,
        shadow_max_body=args.shadow_max_body,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
        client_cert=args.client_cert or "required",
        client_cert_header=args.client_cert_header.lower() if args.client_cert_header else None,
        client_cnpjs=args.client_cnpj or (),
        state_file=args.state_file,
        state_interval=args.state_interval,
        otel_endpoint=args.otel_endpoint,
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


def server_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The server's TLS context, None for plain HTTP; TlsSetupError names a file that cannot serve."""
    if settings.tls_cert is None:
        return None
    return server_context(settings.tls_cert, settings.tls_key, settings.client_ca, settings.client_cert)


def ready_banner(scenario: str, events: int, accounts: int) -> str:
    """The ready line's tail: `(scenario default: 4 events, 2 accounts)`, `(scenario one: 1 event, 1 account)`."""
    return f"(scenario {scenario}: {counted(events, 'event')}, {counted(accounts, 'account')})"


def serve(settings: Settings) -> int:
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if settings.state_file is None:
        return _serve(settings)
    from mock_server.scenarios.state_file import check_writable
    from mock_server.state.persistence import StateFileInUse, StateFileLock, remove_stale_temporaries

    # One server a state file, for as long as it runs (state/persistence.py): taken before the file is read.
    try:
        lock = StateFileLock.take(settings.state_file)
    except StateFileInUse as exc:
        print(f"mock-server: {exc}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    except OSError as exc:
        try:
            check_writable(settings.state_file)
        except ScenarioError:
            return _serve(settings)  # no directory, or one it cannot write: the state file's own check says which
        print(f"mock-server: {settings.state_file}: cannot take its lock: {exc}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    try:
        for temporary in remove_stale_temporaries(settings.state_file):  # a write killed halfway left it
            logging.getLogger("mock_server").info("removed %s, left by a write that never finished", temporary)
        return _serve(settings)
    finally:
        lock.release()


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


def _serve(settings: Settings) -> int:
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
    recorder = app.state.server.recorder
    if recorder is not None:
        on_shutdown = _writing_recording(app.state.server, on_shutdown)
    state_file: StateFile | None = app.state.state_file
    state_writes: list[asyncio.Task[None]] = []

    def on_start(url: str) -> None:
        if state_file is not None:
            state_writes.append(asyncio.create_task(state_file.run()))
        print(f"mock-server ready on {url} {banner}", flush=True)

    async def on_stop() -> None:
        for task in state_writes:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if state_file is not None:
            # The last requests are answered: this write holds every write acknowledged.
            try:
                state_file.save()
            except OSError as exc:
                print(f"mock-server: cannot write the state file: {exc}", file=sys.stderr, flush=True)
        if on_shutdown is not None:
            on_shutdown()
        if app.state.server.tracing is not None:  # the spans still queued sent (bounded: telemetry/otel.py)
            await asyncio.to_thread(app.state.server.tracing.shutdown)

    server = Server(app, settings, context, on_start=on_start, on_stop=on_stop)
    if recorder is not None:  # POST /__mock/record/stop: the file is written, then the server stops as on SIGTERM
        recorder.on_stop = server.stop
    try:
        server.run()
    except KeyboardInterrupt:
        return 0  # Ctrl-C: stopped as asked, gracefully (handle_exit)
    if server.interrupted:
        return 0
    # uvicorn itself exits 3 (sys.exit) when it cannot bind the port.
    return 0 if server.started else 1


def _writing_recording(server: ServerContext, then: Callable[[], None] | None) -> Callable[[], None]:
    """What the server does once stopped in record mode: the file written (unless a stop wrote it), said, then
    `then`."""

    def finish_recording() -> None:
        from mock_server.admin.recording import finish, said

        try:
            for line in said(finish(server)):
                print(line, flush=True)
        except OSError as exc:
            print(f"mock-server record: cannot write the recording: {exc}", file=sys.stderr, flush=True)
        if then is not None:
            then()

    return finish_recording


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


def _probe(command: str, arguments: Sequence[str]) -> int:
    from mock_server import probe

    run = {"healthcheck": probe.healthcheck_main, "wait": probe.wait_main, "pact": probe.pact_main}[command]
    return run(arguments)


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments and arguments[0] in PROBES:
        return _probe(arguments[0], arguments[1:])
    if arguments and arguments[0] == VERIFY_PROVIDER:
        from mock_server.provider import command  # httpx and the flows, only for this command

        return command.main(arguments[1:], oracle)
    if arguments and arguments[0] == "pki":
        from mock_server.pki import pki_main  # cryptography, when a PKI is made: not for serving

        return pki_main(arguments[1:])
    serve_parser, check_parser, record_parser = _parser(), _check_parser(), _parser(record=True)
    # A MOCK_SERVER_* variable no option reads is most likely a typo of one that is: say so before anything else.
    known = environment.variables_read_by(serve_parser, check_parser, record_parser)
    environment.warn_unknown("mock-server", known, sys.stderr)
    if arguments and arguments[0] == RECORD:
        return record_main(record_parser, arguments[1:])
    if arguments and arguments[0] == MCP:
        return mcp_main(arguments[1:])
    if arguments and arguments[0] == "check":
        return check(check_parser.parse_args(arguments[1:]).fixtures)
    args = serve_parser.parse_args(arguments)
    if args.command == "check":  # `mock-server --fixtures DIR check`: the command after the options
        return check(args.fixtures)
    if args.command == RECORD:  # options before it: they are serve's, not all of them record's
        serve_parser.error("record takes its options after it: mock-server record --target URL --out FILE ...")
    if args.admin_token is not None and not args.admin_token.strip():
        # An empty token would make `Authorization: Bearer` with nothing after it the password.
        serve_parser.error("argument --admin-token (or MOCK_SERVER_ADMIN_TOKEN) is empty: give a token, or unset it")
    _check_shadow(serve_parser, args)
    _check_tls_options(serve_parser, args)
    return serve(settings_from(args))


if __name__ == "__main__":
    sys.exit(main())
