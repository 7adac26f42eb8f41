"""`mock-server verify-provider`: its options, and the run from argv to an exit status (0 agrees, 1 differs,
2 usage error or unreachable provider)."""

from __future__ import annotations

import argparse
import asyncio
import functools
import re
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from starlette.types import ASGIApp

from mock_server.domain.errors import ApiError
from mock_server.domain.models import Scenario
from mock_server.http.outbound import MAX_BODY_BYTES, Outbound, TlsFileError, header_option, tls_context
from mock_server.provider.baseline import BaselineFileError, baseline_bytes, judge, read_baseline
from mock_server.provider.flows import account_namer, catalogue
from mock_server.provider.noise import NoiseFileError, read_noise
from mock_server.provider.report import text_report, write_junit
from mock_server.provider.runner import USER_AGENT, Unreachable, verify
from mock_server.scenarios.loader import ScenarioError
from mock_server.spec.openapi import Specs, load_specs
from mock_server.spec.resources import data_path
from mock_server.state.bounds import parse_size

EXIT_AGREES, EXIT_DIFFERS, EXIT_USAGE = 0, 1, 2
# Loaded once per process: a process running several verifications (a test suite) reads the specs once.
_specs = functools.cache(load_specs)
RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,24}$")
# The mock on a scenario, from the fixtures directory, with the specs loaded once: the oracle app and the scenario it
# was loaded with (built by the porch, which owns create_app). Raises ScenarioError, or ApiError (ScenarioNotFound).
OracleFactory = Callable[[Path, str, Specs], tuple[ASGIApp, Scenario]]

DESCRIPTION = (
    "Check a real implementation of the interface against the mock: run flows that cover every public "
    "operation (every documented status a client can provoke, and stateful sequences) against the provider at "
    "--target and against the mock loaded with the scenario that describes the provider's data, and compare each "
    "answer: status, error code, the body against the spec, and every field the interface fixes (ids and "
    "timestamps the server generates by type only). Never pays or cancels an event; registers only accounts "
    "with ids unique to the run."
)
EPILOG = (
    "Exit status: 0 the provider agrees on every check; 1 at least one check differs (each printed with its "
    "request, the expected and the actual answer, and the smallest flow that shows it); 2 a usage error, or the "
    "provider cannot be reached. --report writes JUnit XML, one testcase per check. With --baseline, the "
    "divergences it lists are known and do not fail the run (1 only for a new one); those that no longer occur are "
    "reported fixed."
)


def _at_least_one(value: str) -> int:
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return int(value)


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds from 0 to 3600")
    return seconds


def _body_bound(value: str) -> int:
    try:
        size = parse_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if size < 1024:
        raise argparse.ArgumentTypeError(f"{value!r} is less than 1KiB")
    return size


def _url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise argparse.ArgumentTypeError(f"{value!r} is not an http:// or https:// base URL")
    return value.rstrip("/")


def _run_id(value: str) -> str:
    if not RUN_ID.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not 1 to 24 of A-Z a-z 0-9 . _ -")
    return value


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mock-server verify-provider", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument(
        "--target",
        type=_url,
        required=True,
        metavar="URL",
        help="base URL of the provider, e.g. https://sandbox.example/api",
    )
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=data_path("fixtures"),
        metavar="DIR",
        help="directory of scenario files (default: the shipped scenarios)",
    )
    parser.add_argument(
        "--scenario",
        default="default",
        metavar="NAME",
        help="the scenario that describes the provider's data: its events are looked up (default %(default)s)",
    )
    parser.add_argument(
        "--report", type=Path, metavar="FILE", help="write a JUnit XML report here, one testcase per check"
    )
    parser.add_argument(
        "--noise",
        type=Path,
        metavar="FILE",
        help="YAML of fields never compared, per operationId or '*': {pointers: [JSON pointers], patterns: [regexes]}",
    )
    parser.add_argument(
        "--header",
        type=header_option,
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="send this header with every call to the provider (repeatable), e.g. 'Authorization: Bearer T'",
    )
    parser.add_argument("--cert", type=Path, metavar="FILE", help="client certificate (PEM) for mutual TLS")
    parser.add_argument("--key", type=Path, metavar="FILE", help="private key (PEM) of --cert, if not in its file")
    parser.add_argument(
        "--cacert", type=Path, metavar="FILE", help="CA certificate(s) (PEM) the provider's certificate is checked with"
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="for each call to the provider, as a whole: connecting, sending and reading the whole answer (not "
        "each read); no answer in time is a difference, or an unreachable provider on the first call "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--max-body",
        type=_body_bound,
        default=MAX_BODY_BYTES,
        metavar="SIZE",
        help="bytes of an answer read, decompressed, e.g. 2MiB (default 8MiB); a larger answer is a difference "
        "of its call (no answer)",
    )
    parser.add_argument(
        "--flows",
        type=_at_least_one,
        metavar="N",
        help="run N flows, the catalogue over and over with new accounts (default: each flow once)",
    )
    parser.add_argument(
        "--concurrency",
        type=_at_least_one,
        default=4,
        metavar="N",
        help="flows in flight at once (default %(default)s)",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print only the checks that differ (and the summary and differences), not a line per check",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="divergences already known (a file --write-baseline wrote): reported, skipped in the JUnit report, "
        "and not failing the run; a new one fails it; a known one that no longer occurs is reported fixed",
    )
    parser.add_argument(
        "--write-baseline",
        type=Path,
        metavar="FILE",
        help="write this run's divergences here, sorted and without timestamps (commit it; use it as --baseline)",
    )
    parser.add_argument(
        "--run-id",
        type=_run_id,
        metavar="TOKEN",
        help="the token in the ids of the accounts this run registers (default: random); reuse one only on a "
        "fresh provider",
    )
    return parser


def _fail(message: str) -> int:
    print(f"mock-server verify-provider: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def main(argv: Sequence[str], oracle_factory: OracleFactory) -> int:
    args = parser().parse_args(list(argv))
    if args.key is not None and args.cert is None:
        return _fail("--key goes with --cert")
    outbound = Outbound(
        args.target,
        (("User-Agent", USER_AGENT), *args.header),
        args.cert,
        args.key,
        args.cacert,
        args.timeout,
        args.max_body,
    )
    try:
        tls_context(outbound)
    except TlsFileError as exc:
        return _fail(f"the TLS files cannot be used: {exc}")
    known = None
    if args.baseline is not None:
        try:
            known = read_baseline(args.baseline)
        except BaselineFileError as exc:
            return _fail(str(exc))
    specs = _specs()
    operations = specs.public.operations
    noise = {}
    if args.noise is not None:
        try:
            noise = read_noise(args.noise, operations)
        except NoiseFileError as exc:
            return _fail(str(exc))
    try:
        oracle, scenario = oracle_factory(args.fixtures, args.scenario, specs)
    except ApiError as exc:
        return _fail(f"{args.fixtures}: {exc.message}")
    except ScenarioError as exc:
        return _fail(f"the scenarios in {args.fixtures} do not load:\n" + "\n".join(map(str, exc.problems)))
    run_id = args.run_id or uuid.uuid4().hex[:8]
    unknown_key = str(uuid.uuid5(uuid.NAMESPACE_URL, f"verify-provider/{run_id}"))
    while unknown_key in scenario.events:  # a provider's event cannot be the unknown one
        unknown_key = str(uuid.uuid5(uuid.NAMESPACE_URL, unknown_key))
    flows = catalogue(scenario.events.values(), unknown_key)
    count = args.flows or len(flows.flows)
    header = (
        f"verify-provider: {args.target} against the mock on scenario {scenario.name} (run {run_id}, {count} flows)"
    )
    try:
        verification = asyncio.run(
            verify(
                outbound,
                oracle,
                specs.public,
                flows,
                noise,
                account_namer(run_id),
                count,
                args.concurrency,
                f"/event_conciliation/extraordinary_event/{unknown_key}",
            )
        )
    except Unreachable as exc:
        return _fail(f"the provider cannot be reached: {exc}")
    for line in text_report(verification, header, quiet=args.quiet, known=known or ()):
        print(line)
    judged = judge(verification.differing, known) if known is not None else None
    if judged is not None:
        print()
        for line in judged.lines(args.baseline):
            print(line)
    sys.stdout.flush()
    if args.report is not None:
        properties = {"target": args.target, "scenario": scenario.name, "run": run_id}
        try:
            write_junit(args.report, verification, f"verify-provider {args.target}", properties, known)
        except OSError as exc:
            return _fail(f"cannot write the report: {exc}")
    if args.write_baseline is not None:
        try:
            args.write_baseline.write_bytes(baseline_bytes(verification.differing))
        except OSError as exc:
            return _fail(f"cannot write the baseline: {exc.strerror or exc}")
    if judged is not None:
        return EXIT_AGREES if judged.holds else EXIT_DIFFERS
    return EXIT_AGREES if verification.agrees else EXIT_DIFFERS
