"""What the gates print (one line per incompatible interaction, per change, per broken call) and the JUnit XML
they write for CI: no timestamps or host names, so the same verdicts make the same bytes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from mock_server.domain.words import counted
from mock_server.gate.diff import SpecChange
from mock_server.gate.pact import InteractionVerdict
from mock_server.gate.traffic import Impact

SHOWN_CALLS = 20  # recorded calls named under one change; the rest are counted
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def verdict_line(verdict: InteractionVerdict) -> str:
    problems = "; ".join(f"{p.what} at {p.where}" for p in verdict.problems)
    return f'incompatible: {verdict.file} "{verdict.description}": {problems}'


def pact_lines(verdicts: Sequence[InteractionVerdict], files: int) -> list[str]:
    lines = [verdict_line(v) for v in verdicts if not v.compatible]
    bad = sum(1 for v in verdicts if not v.compatible)
    lines.append(
        f"gate pact: {counted(len(verdicts), 'interaction')} in {counted(files, 'file')}: "
        f"{len(verdicts) - bad} compatible, {bad} incompatible"
    )
    return lines


def spec_lines(changes: Sequence[SpecChange], impact: Impact | None, old: str, new: str) -> list[str]:
    breaking = [c for c in changes if c.breaking]
    other = [c for c in changes if not c.breaking]
    if not changes:
        lines = [f"gate spec: {old} -> {new}: no changes"]
    else:
        lines = [f"gate spec: {old} -> {new}: {len(breaking)} breaking, {len(other)} not breaking"]
    for change in breaking:
        lines.append(f"breaking: {change.line()}")
        if impact is not None:
            calls = impact.by_change.get(change, [])
            if calls:
                lines.append(f"  breaks {counted(len(calls), 'recorded call')}:")
                lines += [f"    {c.name}" for c in calls[:SHOWN_CALLS]]
                if len(calls) > SHOWN_CALLS:
                    lines.append(f"    and {len(calls) - SHOWN_CALLS} more")
            else:
                lines.append("  breaks no recorded call")
    lines += [f"not breaking: {change.line()}" for change in other]
    if impact is not None:
        for recorded, problem in impact.rejected:
            lines.append(f"refused by the new spec: {recorded.name}: {problem.what} at {problem.where}")
        skipped = f", {counted(impact.not_operations, 'call')} of no operation skipped" if impact.not_operations else ""
        lines.append(
            f"traffic: {counted(impact.replayed, 'recorded call')} replayed{skipped}: {len(impact.broken)} broken"
        )
    return lines


def _suite(root: ET.Element, name: str, cases: list[tuple[str, str, str | None, str]]) -> None:
    """A testsuite of (classname, name, failure message or None, failure text)."""
    failures = sum(1 for _, _, failure, _ in cases if failure is not None)
    suite = ET.SubElement(
        root, "testsuite", {"name": _xml(name), "tests": str(len(cases)), "failures": str(failures), "errors": "0"}
    )
    for classname, case_name, failure, text in cases:
        case = ET.SubElement(suite, "testcase", {"classname": _xml(classname), "name": _xml(case_name)})
        if failure is not None:
            element = ET.SubElement(case, "failure", {"message": _xml(failure), "type": "incompatible"})
            element.text = _xml(text)


def _document(root: ET.Element) -> bytes:
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return document + b"\n"


def pact_junit(verdicts: Sequence[InteractionVerdict]) -> bytes:
    """One testcase per interaction, its file the classname; a failure per incompatible one."""
    root = ET.Element("testsuites", {"name": "mock-server gate pact"})
    cases = [
        (
            v.file,
            v.description,
            None if v.compatible else v.problems[0].what,
            "\n".join(f"{p.what} at {p.where}" for p in v.problems),
        )
        for v in verdicts
    ]
    _suite(root, "gate pact", cases)
    return _document(root)


def spec_junit(changes: Sequence[SpecChange], impact: Impact | None) -> bytes:
    """One testcase per change (failing: a breaking one, with traffic only when it breaks a recorded call) and one
    per recorded call refused for no listed change."""
    root = ET.Element("testsuites", {"name": "mock-server gate spec"})
    cases: list[tuple[str, str, str | None, str]] = []
    for change in changes:
        calls = impact.by_change.get(change, []) if impact is not None else []
        fails = change.breaking and (impact is None or bool(calls))
        text = "\n".join([change.line(), *(c.name for c in calls)])
        cases.append((change.operation or "spec", change.what, change.line() if fails else None, text))
    if impact is not None:
        for recorded, problem in impact.rejected:
            cases.append(("traffic", recorded.name, f"{problem.what} at {problem.where}", recorded.name))
    _suite(root, "gate spec", cases)
    return _document(root)


def write(path: Path, document: bytes) -> None:
    path.write_bytes(document)
