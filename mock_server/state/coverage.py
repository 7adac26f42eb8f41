"""API coverage, server-wide: for each public operation, the statuses answered against those its spec
documents, and the fields requests failed validation on. Counts only, never the journal: it is unbounded
by the journal's cap and costs a dict increment per call.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Field names come from clients: a fuzzer sends endless unknown keys. Beyond this many distinct fields of one
# operation, the rest are counted together.
MAX_FIELDS_PER_OPERATION = 200
OTHER_FIELDS = "(other fields)"
_INDEX = re.compile(r"\[\d+\]")


def field_key(field_name: str) -> str:
    """`limit.pix.withdraw[3].amount` -> `limit.pix.withdraw[].amount`: one count per field of the schema."""
    return _INDEX.sub("[]", field_name)


@dataclass(frozen=True, slots=True)
class OperationDoc:
    operation_id: str
    method: str
    path: str
    documented: tuple[str, ...]  # the response keys of the spec: "200", "4XX", "default"

    def documents(self, status: int) -> bool:
        text = str(status)
        return text in self.documented or f"{text[0]}XX" in self.documented or "default" in self.documented


@dataclass(slots=True)
class _Counts:
    answered: Counter[int] = field(default_factory=Counter)
    injected: Counter[int] = field(default_factory=Counter)
    invalid_fields: Counter[str] = field(default_factory=Counter)


class Coverage:
    """Counts of what the public API answered since start-up or the last `clear()`."""

    def __init__(self, operations: Iterable[OperationDoc]) -> None:
        self.operations = {op.operation_id: op for op in operations}
        self._counts = {name: _Counts() for name in self.operations}

    def record(
        self, operation_id: str, status: int, invalid_fields: Iterable[str] = (), injected: bool = False
    ) -> None:
        """One answered call; `injected`: answered by a fault, which proves nothing about the spec's statuses."""
        counts = self._counts[operation_id]
        (counts.injected if injected else counts.answered)[status] += 1
        fields = counts.invalid_fields
        for name in invalid_fields:
            key = field_key(name)
            if key not in fields and len(fields) >= MAX_FIELDS_PER_OPERATION:
                key = OTHER_FIELDS
            fields[key] += 1

    def count(self, operation_id: str, status: int, injected: bool = False) -> None:
        """One answered call with no validation failure to count: `record` without the fields."""
        counts = self._counts[operation_id]
        (counts.injected if injected else counts.answered)[status] += 1

    def tallies(self, operation_id: str) -> tuple[Counter[int], Counter[int]]:
        """The operation's counts of answers by status: (answered, injected), index `injected`. For a caller that
        counts every answer itself, `tallies[injected][status] += 1` being `count`'s whole work: a turn's finish
        (state/turn.py), where a frame of this module at every public call cost more than the count. The same two
        counters for this Coverage's life: `clear()` empties them in place."""
        counts = self._counts[operation_id]
        return counts.answered, counts.injected

    def clear(self) -> None:
        for counts in self._counts.values():  # in place: callers hold `tallies`
            counts.answered.clear()
            counts.injected.clear()
            counts.invalid_fields.clear()

    def report(self) -> dict[str, Any]:
        """The admin spec's CoverageReport."""
        operations = []
        documented_total = answered_total = undocumented_total = 0
        for name, doc in self.operations.items():
            counts = self._counts[name]
            answered = {str(s): n for s, n in sorted(counts.answered.items()) if doc.documents(s)}
            undocumented = {str(s): n for s, n in sorted(counts.answered.items()) if not doc.documents(s)}
            never = [s for s in doc.documented if not any(_covers(s, int(a)) for a in answered)]
            documented_total += len(doc.documented)
            answered_total += len(doc.documented) - len(never)
            undocumented_total += len(undocumented)
            operations.append(
                {
                    "operation_id": name,
                    "method": doc.method,
                    "path": doc.path,
                    "calls": sum(counts.answered.values()) + sum(counts.injected.values()),
                    "answered": answered,
                    "never_answered": never,
                    "undocumented": undocumented,
                    "injected": {str(s): n for s, n in sorted(counts.injected.items())},
                    "invalid_fields": dict(sorted(counts.invalid_fields.items())),
                }
            )
        return {
            "summary": {
                "documented_statuses": documented_total,
                "answered": answered_total,
                "never_answered": documented_total - answered_total,
                "undocumented": undocumented_total,
            },
            "operations": operations,
        }


def _covers(documented: str, status: int) -> bool:
    text = str(status)
    return documented == text or documented == f"{text[0]}XX" or documented == "default"


def _counted(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{status} ({n})" for status, n in counts.items()) or "-"


def markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: one table row per operation, then the validation failures by field."""
    summary = report["summary"]
    lines = [
        "# API coverage",
        "",
        f"{summary['answered']} of {summary['documented_statuses']} documented statuses answered, "
        f"{summary['never_answered']} never; {summary['undocumented']} undocumented statuses answered.",
        "",
        "| operation | calls | answered | never answered | undocumented | injected |",
        "|---|---|---|---|---|---|",
    ]
    for op in report["operations"]:
        never = ", ".join(op["never_answered"]) or "-"
        lines.append(
            f"| `{op['operation_id']}` {op['method']} `{op['path']}` | {op['calls']} | {_counted(op['answered'])} "
            f"| {never} | {_counted(op['undocumented'])} | {_counted(op['injected'])} |"
        )
    failures = [
        (op["operation_id"], name, n) for op in report["operations"] for name, n in op["invalid_fields"].items()
    ]
    lines += ["", "## Request validation failures by field", ""]
    if failures:
        lines += ["| operation | field | failures |", "|---|---|---|"]
        lines += [f"| `{op}` | `{name or '(body)'}` | {n} |" for op, name, n in failures]
    else:
        lines.append("None.")
    return "\n".join(lines)  # no final newline, as the JSON answers; a file gets one when written
