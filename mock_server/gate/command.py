"""`mock-server gate pact|spec`: the options, and the run from argv to an exit status (0 the gate holds, 1 it does
not, 2 an unreadable input or a usage error)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from mock_server.gate.diff import SpecShapeError, compare
from mock_server.gate.inputs import GateInputError, read_mapping
from mock_server.gate.pact import check_pact
from mock_server.gate.report import pact_junit, pact_lines, spec_junit, spec_lines, write
from mock_server.gate.traffic import read_traffic, replay
from mock_server.spec.openapi import Spec, compile_document
from mock_server.spec.resources import data_path

EXIT_HOLDS, EXIT_FAILS, EXIT_USAGE = 0, 1, 2
PROG = "mock-server gate"
EPILOG = "Exit status: 0 the gate holds; 1 it does not; 2 an input cannot be read, or a usage error."


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own usage errors exit 2 too, in one line
        self.exit(EXIT_USAGE, f"{self.prog}: {message}\n")


PACT_HELP = "check Pact files (V2, V3, V4) against the spec"
PACT_DESCRIPTION = (
    "Check each HTTP interaction of Pact files (V2, V3 or V4) against the spec: a request the spec accepts (method, "
    "path, parameters, required headers, body), a documented status, a response example valid for that status's "
    "schema and true to its matching rules, provider states the mock knows. One line per incompatible interaction."
)
SPEC_HELP = "breaking changes between two spec versions, and the recorded calls they break"
SPEC_DESCRIPTION = (
    "List the changes from --old to --new that break a client (with a JSON pointer each), then the ones that do not. "
    "With --traffic, replay every recorded call through the new spec and name the calls each breaking change "
    "breaks: then only broken calls fail the gate."
)


def _pact_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="Pact files")
    parser.add_argument("--spec", type=Path, metavar="FILE", help="the OpenAPI document (default: the shipped one)")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML, one testcase per interaction")


def _spec_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--old", type=Path, required=True, metavar="FILE", help="the spec clients were built on")
    parser.add_argument("--new", type=Path, required=True, metavar="FILE", help="the spec to release")
    parser.add_argument(
        "--traffic",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="recorded calls: a Pact file, or the journal as GET /__mock/requests exports it (repeatable)",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML, one testcase per change")


GATES = {"pact": (PACT_HELP, PACT_DESCRIPTION, _pact_options), "spec": (SPEC_HELP, SPEC_DESCRIPTION, _spec_options)}


def parser() -> argparse.ArgumentParser:
    """`mock-server gate`: its gates named (each parses its own options: `gate_parser`)."""
    parser = _Parser(
        prog=PROG,
        description="Release gates without a broker: a consumer's pact against the spec, and the breaking changes "
        "between two versions of the spec with the recorded calls each one breaks.",
        epilog=EPILOG,
    )
    commands = parser.add_subparsers(
        dest="gate", required=True, metavar="{pact,spec}", parser_class=_Parser, help="the gate: pact or spec"
    )
    for name, (summary, _, _) in GATES.items():
        commands.add_parser(name, help=f"{summary} (`{PROG} {name} --help`)", add_help=False)
    return parser


def gate_parser(name: str) -> argparse.ArgumentParser:
    _, description, options = GATES[name]
    parser = _Parser(prog=f"{PROG} {name}", description=description, epilog=EPILOG)
    options(parser)
    return parser


def _fail(message: str) -> int:
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    return EXIT_USAGE


def load_spec(path: Path) -> tuple[dict[str, Any], Spec]:
    """The document at `path` and its operations compiled, every schema inlined now (a bad `$ref` found here, not
    half-way through a check); GateInputError when it is not an OpenAPI 3 document this gate reads."""
    _, document = read_mapping(path, "an OpenAPI document")
    if not str(document.get("openapi", "")).startswith("3."):
        raise GateInputError(f"{path}: is not an OpenAPI 3 document (no `openapi: 3.x`)")
    try:
        spec = compile_document(document, uri=path.resolve().as_uri())
        for operation in spec.operations.values():
            checks = [p.check for p in operation.parameters] + [operation.body, *operation.responses.values()]
            for check in checks:
                if check is not None:
                    _ = check.schema
    except KeyError as exc:
        missing = str(exc.args[0]) if exc.args else ""
        if missing.startswith(("file:", "http:", "https:")):  # a $ref into a document not loaded: another file
            raise GateInputError(f"{path}: refers to another document ({missing}): give the spec bundled") from None
        raise GateInputError(
            f"{path}: is not an OpenAPI document this gate reads (no {missing!r} where needed)"
        ) from None
    except (IndexError, TypeError, ValueError, AttributeError) as exc:
        raise GateInputError(
            f"{path}: is not an OpenAPI document this gate reads ({type(exc).__name__}: {exc})"
        ) from None
    return document, spec


def _write(path: Path | None, document: bytes) -> int | None:
    if path is None:
        return None
    try:
        write(path, document)
    except OSError as exc:
        return _fail(f"cannot write {path}: {exc.strerror or exc}")
    return None


def pact_main(args: argparse.Namespace) -> int:
    try:
        _, spec = load_spec(args.spec or data_path("openapi.yaml"))
        verdicts = [verdict for path in args.files for verdict in check_pact(spec, path)]
    except GateInputError as exc:
        return _fail(str(exc))
    for line in pact_lines(verdicts, len(args.files)):
        print(line)
    sys.stdout.flush()
    failed = _write(args.junit, pact_junit(verdicts))
    if failed is not None:
        return failed
    return EXIT_HOLDS if all(v.compatible for v in verdicts) else EXIT_FAILS


def spec_main(args: argparse.Namespace) -> int:
    try:
        old_document, old = load_spec(args.old)
        new_document, new = load_spec(args.new)
        changes = compare(old_document, new_document)
        calls = [call for path in args.traffic for call in read_traffic(path)]
    except (GateInputError, SpecShapeError) as exc:
        return _fail(str(exc))
    impact = replay(old, new, changes, calls) if args.traffic else None
    for line in spec_lines(changes, impact, str(args.old), str(args.new)):
        print(line)
    sys.stdout.flush()
    failed = _write(args.junit, spec_junit(changes, impact))
    if failed is not None:
        return failed
    if impact is not None:
        return EXIT_FAILS if impact.broken else EXIT_HOLDS
    return EXIT_FAILS if any(c.breaking for c in changes) else EXIT_HOLDS


def main(argv: Sequence[str]) -> int:
    arguments = list(argv)
    try:
        if not arguments or arguments[0] not in GATES:
            parser().parse_args(arguments)  # --help, or a usage error: both exit
            return EXIT_USAGE
        args = gate_parser(arguments[0]).parse_args(arguments[1:])
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    return pact_main(args) if arguments[0] == "pact" else spec_main(args)
