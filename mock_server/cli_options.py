"""`mock-server`'s command line, option by option: the value types its options take and the builders that add
each group of options to a parser (bounds, shadow mode, record mode, scenario, session, TLS), with the checks
of what argparse cannot judge alone. The parsers themselves are cli.py's."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    pass

from mock_server import environment
from mock_server.domain.clock import parse_instant
from mock_server.domain.documents import bare_cnpj
from mock_server.http.hosts import allowed_host_entry
from mock_server.http.tls import CLIENT_CERT_MODES
from mock_server.record_command import unwritable_directory
from mock_server.settings import Settings
from mock_server.state.bounds import Bounds, ConnectionLimits, parse_size
from mock_server.state.recording import RecordOptions

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
    group.add_argument(
        "--force",
        action="store_true",
        default=environment.default("force", False),
        help="replace an existing --out file (without it, an existing file is a usage error: nothing is overwritten "
        "by surprise)",
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
        unwritable = unwritable_directory(path.parent) if path is not None else None
        if path is not None and unwritable is not None:
            parser.error(f"argument {flag}: the directory {str(path.parent)!r} {unwritable}")
    pseudonym_map: Path | None = args.pseudonym_map
    if pseudonym_map is not None:
        # The map holds every original: written over the recording (or as a scenario beside it), it would be the
        # file a team commits.
        if pseudonym_map.suffix.lower() in (".yaml", ".yml"):
            parser.error(
                f"argument --pseudonym-map: {str(pseudonym_map)!r} ends in {pseudonym_map.suffix}: the map of "
                "originals must not read as a scenario file (name it NAME.json)"
            )
        if os.path.realpath(pseudonym_map) == os.path.realpath(out):
            parser.error(
                f"argument --pseudonym-map: {str(pseudonym_map)!r} is the --out file: the map would replace it"
            )
    key = args.pseudonym_key
    if key is not None and not key.strip():
        parser.error("argument --pseudonym-key (or MOCK_SERVER_PSEUDONYM_KEY) is empty: give a key, or unset it")
    if args.keep_identifiers and (key is not None or args.pseudonym_map is not None):
        parser.error("argument --keep-identifiers keeps the originals: --pseudonym-key and --pseudonym-map have no use")
    if out.is_dir():
        parser.error(f"argument --out: {str(out)!r} is a directory: name the scenario file to write in it")
    if out.exists():
        if not args.force:
            parser.error(f"argument --out: {str(out)!r} exists: give --force to replace it, or another file")
        print(f"mock-server record: --force: the recording will replace {out}", file=sys.stderr, flush=True)
    return RecordOptions(
        out, args.target.rstrip("/"), key.encode("utf-8") if key else None, args.pseudonym_map, args.keep_identifiers
    )


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
