"""`mock-server [serve|check|verify-provider]`: argv and MOCK_SERVER_* variables -> Settings -> the server
(mock_server/server.py, the one module that configures uvicorn).

The option groups are cli_options.py's; what `check` and serving run is cli_serve.py's. `mock-server check` has
a parser of its own (its own --help); `healthcheck` and `wait` are probe.py's.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from mock_server import __version__, environment
from mock_server.cli_options import (
    ENVIRONMENT_EPILOG,
    _at_least_one,
    _bound_options,
    _check_record,
    _check_shadow,
    _check_tls_options,
    _fixtures_option,
    _host_list,
    _parsed_headers,
    _port,
    _record_options,
    _scenario_options,
    _seconds,
    _session_options,
    _shadow_options,
    _tls_options,
)
from mock_server.cli_serve import EXIT_INVALID, _app_or_exit, check, oracle, serve
from mock_server.mcp.names import DEFAULT_PRESET, MISSING_EXTRA, PRESETS
from mock_server.settings import Settings
from mock_server.state.bounds import Bounds, ConnectionLimits

# Commands with their own options, parsed by probe.py (standard library only: they never load the server; and
# the server never loads probe.py's http.client).
PROBES = ("healthcheck", "wait", "pact")
VERIFY_PROVIDER = "verify-provider"  # its own options (mock_server/provider/command.py)
GATE = "gate"  # its own options (mock_server/gate/command.py)
RECORD = "record"  # its own parser: serve's options, the target's instead of shadow mode's (docs/recording.md)
MCP = "mcp"  # its own options (_mcp_parser): the MCP server over stdio
COMMANDS = ("serve", "check", *PROBES, VERIFY_PROVIDER, GATE, "pki", RECORD, MCP)


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
        "       %(prog)s pact --consumer NAME --provider NAME [OPTION ...]\n"
        "       %(prog)s verify-provider --target URL [OPTION ...]\n"
        "       %(prog)s pki init DIR [OPTION ...]\n"
        "       %(prog)s gate {pact,spec} [OPTION ...]\n"
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
        "the mock, see `mock-server verify-provider --help`; gate pact|spec: release gates "
        "(`mock-server gate --help`); pki init DIR: test certificates for mutual TLS "
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
    _mcp_http_options(parser, defaults)
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
        max_mcp_sessions=args.max_mcp_sessions,
        mcp_replica=args.mcp_replica,
        otel_endpoint=args.otel_endpoint,
    )


def _mcp_parser() -> argparse.ArgumentParser:
    """`mock-server mcp`: serve's options for the sessions (scenario, clock, seed, token)."""
    parser = argparse.ArgumentParser(
        prog="mock-server mcp",
        description="Serve the mock as an MCP server over stdin and stdout, for an agent (an MCP client) that "
        "starts it: every operation of the public API and of /__mock reachable from a short tool list (--tools), "
        "working in a session of its own. "
        "stdout carries MCP messages only; the ready line and the logs go to stderr. Needs the mcp extra "
        "(the official MCP SDK).",
        epilog=ENVIRONMENT_EPILOG,
    )
    _scenario_options(parser)
    _session_options(parser)
    parser.add_argument(
        "--tools",
        choices=PRESETS,
        default=environment.default("tools", DEFAULT_PRESET),
        help="the tools listed: default (at most 12: search_operations, describe_operation, call_operation and "
        "the operations used most), api (one per public operation), all (one per operation) (default %(default)s)",
    )
    environment.name_variables(parser)
    return parser


def _mcp_http_options(parser: argparse.ArgumentParser, defaults: Settings) -> None:
    """/__mock/mcp's options (serve and record): how many MCP sessions it holds, the replica it names."""
    parser.add_argument(
        "--max-mcp-sessions",
        type=_at_least_one,
        default=environment.default("max_mcp_sessions", str(defaults.max_mcp_sessions)),
        help="MCP sessions open at once on /__mock/mcp; beyond, the least recently used idle one is closed with "
        "its mock session, or an initialize is refused 503 when none is idle (default %(default)s)",
    )
    parser.add_argument(
        "--mcp-replica",
        type=_replica_name,
        default=environment.default("mcp_replica"),
        metavar="NAME",
        help="behind a router: begin every MCP session id this server issues with NAME and a dot, so the router "
        "sends the session's calls back here (deploy/nginx/mock-cluster.conf; docs/mcp.md)",
    )


def _replica_name(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,31}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is no replica name: 1 to 32 of a-z, 0-9 and -")
    return value


def mcp_main(arguments: Sequence[str]) -> int:
    parser = _mcp_parser()
    args = parser.parse_args(arguments)
    if args.admin_token is not None and not args.admin_token.strip():
        parser.error("argument --admin-token (or MOCK_SERVER_ADMIN_TOKEN) is empty: give a token, or unset it")
    try:
        from mock_server.mcp.stdio import serve as serve_mcp  # the SDK: only for this command
    except ImportError:
        print(f"mock-server mcp: {MISSING_EXTRA}", file=sys.stderr)
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
    return serve_mcp(app, settings, banner, args.tools)


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
    if arguments and arguments[0] == GATE:
        from mock_server.gate import command as gate  # the gates: only for this command

        return gate.main(arguments[1:])
    if arguments and arguments[0] == "pki":
        from mock_server.pki import pki_main  # cryptography, when a PKI is made: not for serving

        return pki_main(arguments[1:])
    serve_parser, check_parser, record_parser = _parser(), _check_parser(), _parser(record=True)
    # A MOCK_SERVER_* variable no option reads is most likely a typo of one that is: say so before anything else.
    known = environment.variables_read_by(serve_parser, check_parser, record_parser, _mcp_parser())
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
