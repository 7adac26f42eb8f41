"""What a verification prints (a line per check, then each difference with its smallest flow) and the JUnit XML
it writes for CI (one testcase per check)."""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from mock_server.domain.answers import Answer
from mock_server.provider.runner import Check, StepExchange, Verification

SHOWN_BODY = 2000  # characters of a body a difference shows
VERDICT_WIDTH = 8
OPERATION_WIDTH = 38
# Characters XML 1.0 cannot hold, even escaped: a provider's body may carry them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    raise TypeError(type(value).__name__)


def answer_text(answer: Answer) -> str:
    """`409 {"code": ...}`, or `no answer (why)`; a long body cut."""
    if answer.status is None:
        return f"no answer ({answer.error})"
    if answer.body is None:
        return f"{answer.status} (no body)"
    body = answer.body if isinstance(answer.body, str) else json.dumps(answer.body, default=_json_default)
    if len(body) > SHOWN_BODY:
        body = f"{body[:SHOWN_BODY]}... ({len(body) - SHOWN_BODY} more characters)"
    return f"{answer.status} {body}"


def where(check: Check) -> str:
    """`register-twice 2/2: register the same account_id again`, with the flow's repetition when it repeats."""
    repeat = f" (run {check.number})" if check.number > 1 else ""
    return f"{check.flow.name}{repeat} {check.index + 1}/{len(check.flow.steps)}: {check.step.name}"


def check_key(check: Check) -> str:
    """What names a check from run to run (a baseline's entries): its operation, flow and step."""
    return f"{check.operation_id}: {where(check)}"


def verdict(check: Check, known: Collection[str] = ()) -> str:
    if check.ok:
        return "ok"
    if check_key(check) in known:
        return "known"
    return "not run" if check.not_run is not None else "differs"


def check_line(check: Check, known: Collection[str] = ()) -> str:
    line = f"{verdict(check, known):<{VERDICT_WIDTH}} {check.operation_id:<{OPERATION_WIDTH}} {where(check)}"
    return f"{line} ({check.not_run})" if check.not_run is not None else line


def _exchange_line(number: int, exchange: StepExchange) -> str:
    expected, actual = exchange.expected, exchange.actual
    got = "no answer" if actual.status is None else str(actual.status)
    return f"{number}. {exchange.sent.shown()} -> expected {expected.status}, got {got}"


def difference_block(number: int, check: Check) -> list[str]:
    exchange = check.exchange
    if exchange is None:  # the step could not be checked at all: the difference says why
        return [f"{number}) {check.operation_id}: {where(check)}"] + [f"   differs:  {d}" for d in check.differences]
    lines = [
        f"{number}) {check.operation_id}: {where(check)}",
        f"   request:  {exchange.sent.shown()}",
        f"   expected: {answer_text(exchange.expected)}",
        f"   actual:   {answer_text(exchange.actual)}",
    ]
    lines += [f"   differs:  {difference}" for difference in check.differences]
    smallest = check.smallest or [exchange]
    steps = "1 step" if len(smallest) == 1 else f"{len(smallest)} steps"
    lines.append(f"   smallest flow that shows it ({steps}):")
    lines += [f"     {_exchange_line(i, step)}" for i, step in enumerate(smallest, start=1)]
    return lines


def summary(verification: Verification) -> list[str]:
    checks = verification.checks
    ok = sum(1 for c in checks if c.ok)
    differ = sum(1 for c in checks if c.differences)
    not_run = sum(1 for c in checks if c.not_run is not None)
    lines = [
        f"{len(checks)} checks in {verification.flows} flows, {verification.seconds:.1f} s: "
        f"{ok} ok, {differ} differ, {not_run} not run"
    ]
    operations = sorted({c.operation_id for c in verification.differing})
    if operations:
        lines.append(f"operations that differ: {', '.join(operations)}")
    else:
        lines.append("the provider agrees with the mock on every check")
    return lines


def text_report(verification: Verification, header: str, quiet: bool = False, known: Collection[str] = ()) -> list[str]:
    """A line per check (`quiet`: per check that is not ok), the summary, then every difference but those a
    baseline lists (`known`: their line says `known`; the baseline holds their reason)."""
    shown = [check_line(check, known) for check in verification.checks if not (quiet and check.ok)]
    lines = [header, "", *shown, *([""] if shown else []), *summary(verification)]
    differing = [check for check in verification.checks if check.differences and check_key(check) not in known]
    if differing:
        lines += ["", "Differences (request, the mock's answer as expected, the provider's as actual):"]
        for number, check in enumerate(differing, start=1):
            lines += ["", *difference_block(number, check)]
    return lines


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(
    verification: Verification, suite_name: str, properties: dict[str, str], known: Mapping[str, str] | None = None
) -> bytes:
    """JUnit XML: one testsuite, one testcase per check (classname the operation), a failure per difference and
    `skipped` for a step not run or a divergence the baseline (`known`: check -> reason) lists."""
    checks = verification.checks
    known = known or {}
    baselined = {id(c) for c in checks if not c.ok and check_key(c) in known}
    failures = sum(1 for c in checks if c.differences and check_key(c) not in known)
    skipped = sum(1 for c in checks if c.not_run is not None or (c.differences and check_key(c) in known))
    counts = {"tests": str(len(checks)), "failures": str(failures), "errors": "0", "skipped": str(skipped)}
    seconds = f"{verification.seconds:.3f}"
    root = ET.Element("testsuites", {"name": "mock-server verify-provider", **counts, "time": seconds})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _xml_text(suite_name),
            **counts,
            "time": seconds,
            "timestamp": datetime.now(UTC).replace(microsecond=0, tzinfo=None).isoformat(),
            "hostname": socket.gethostname(),
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in properties.items():
        ET.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
    for number, check in enumerate(checks, start=1):
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": check.operation_id, "name": _xml_text(where(check)), "time": f"{check.seconds:.3f}"},
        )
        if id(check) in baselined:
            reason = known[check_key(check)] or "listed in the baseline"
            ET.SubElement(case, "skipped", {"message": _xml_text(f"known divergence (baseline): {reason}")})
        elif check.not_run is not None:
            ET.SubElement(case, "skipped", {"message": _xml_text(check.not_run)})
        elif check.differences:
            failure = ET.SubElement(case, "failure", {"message": _xml_text(check.differences[0]), "type": "differs"})
            failure.text = _xml_text("\n".join(difference_block(number, check)))
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"


def write_junit(
    path: Path,
    verification: Verification,
    suite_name: str,
    properties: dict[str, str],
    known: Mapping[str, str] | None = None,
) -> None:
    path.write_bytes(junit_xml(verification, suite_name, properties, known))
