"""Two answers to one call compared as the interface fixes them: the status, an error's code, every field equal
except those the server generates (compared by type), and what the user says is noise.

verify-provider compares a provider's answer with the mock's (the oracle), shadow mode a backend's with the
mock's: both by these rules, so a difference means the same thing in both.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from mock_server.domain.operations import NAMED_LATER, facts_of

# An error's prose is the server's own: only its `code` is fixed (and `details` say where, in the server's words).
ERROR_PROSE = frozenset({"/message", "/details"})
NO_ANSWER = "no answer"


def json_type(value: Any) -> str:
    """The JSON type of a decoded value (Python's bool is an int: asked first)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float | Decimal):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def pointer_escape(part: str | int) -> str:
    """One reference token of a JSON pointer (RFC 6901)."""
    return str(part).replace("~", "~0").replace("/", "~1")


def pointer(parts: Iterable[str | int]) -> str:
    """`("limit", "pix", 0)` -> `/limit/pix/0`; `()` -> `` (the whole body)."""
    return "".join(f"/{pointer_escape(part)}" for part in parts)


@dataclass(frozen=True)
class Answer:
    """What one side answered: a status (None: no answer at all, with `error` saying why) and a body (decoded
    JSON, or the text when it is not JSON; None when empty)."""

    status: int | None
    body: Any = None
    error: str | None = None  # why there is no answer (connection refused, timeout, ...)

    @property
    def code(self) -> str | None:
        """An error body's `code`, when it has one."""
        if isinstance(self.body, dict) and isinstance(self.body.get("code"), str):
            return str(self.body["code"])
        return None


@dataclass(frozen=True)
class Noise:
    """Fields a user says never to compare: exact JSON pointers, and regular expressions searched in a pointer.
    A pointer ignores the fields below it too (`/details` ignores `/details/0/field`)."""

    pointers: frozenset[str] = frozenset()
    patterns: tuple[re.Pattern[str], ...] = ()

    def ignores(self, where: str) -> bool:
        if not self.pointers and not self.patterns:  # nearly always: asked of every field compared
            return False
        if any(where == p or where.startswith(p + "/") or p == "" for p in self.pointers):
            return True
        return any(pattern.search(where) for pattern in self.patterns)

    def __or__(self, other: Noise) -> Noise:
        return Noise(self.pointers | other.pointers, self.patterns + other.patterns)


@dataclass(frozen=True)
class Rules:
    """How one operation's answers are compared: `generated` by type only, `noise` not at all."""

    generated: frozenset[str] = frozenset()
    noise: Noise = field(default_factory=Noise)


def rules_for(operation_id: str, noise: Noise | None = None) -> Rules:
    """How answers of `operation_id` compare: the fields its declaration (domain/operations.py) says the server
    makes up by type, `noise` not at all."""
    facts = facts_of(operation_id)
    return Rules(facts.generated if facts is not None else frozenset(), noise or Noise())


def shown(value: Any) -> str:
    """A value as a difference quotes it: JSON-like, numbers as written."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, list):
        return "[" + ", ".join(shown(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{shown(k)}: {shown(v)}" for k, v in value.items()) + "}"
    return str(value)


def _same_value(expected: Any, actual: Any) -> bool:
    if type(expected) is type(actual) and expected == actual:
        return True
    if json_type(expected) != json_type(actual):
        return False
    if json_type(expected) == "number":
        return Decimal(str(expected)) == Decimal(str(actual))
    return bool(expected == actual)


def _identical(expected: Any, actual: Any) -> bool:
    """Whether two bodies are the same JSON, type for type (true is not 1, 1 is not 1.0): then no field of them
    differs, whatever the rules, and there is nothing to walk. Most shadowed answers agree."""
    kind = type(expected)
    if kind is not type(actual):
        return False
    if kind is dict:
        return len(expected) == len(actual) and all(
            key in actual and _identical(value, actual[key]) for key, value in expected.items()
        )
    if kind is list:
        return len(expected) == len(actual) and all(_identical(a, b) for a, b in zip(expected, actual, strict=True))
    return bool(expected == actual)


def _walk(expected: Any, actual: Any, where: str, rules: Rules, out: list[str]) -> None:
    if rules.noise.ignores(where):
        return
    name = where or "(body)"
    if where in rules.generated:
        if json_type(expected) != json_type(actual):
            out.append(f"{name}: expected a {json_type(expected)} (its value is the server's), got {shown(actual)}")
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            inner = f"{where}/{pointer_escape(key)}"
            if key not in actual:
                if not rules.noise.ignores(inner):
                    out.append(f"{inner}: missing (expected {shown(expected[key])})")
            else:
                _walk(expected[key], actual[key], inner, rules, out)
        for key in actual:
            inner = f"{where}/{pointer_escape(key)}"
            if key not in expected and not rules.noise.ignores(inner):
                out.append(f"{inner}: not expected (got {shown(actual[key])})")
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(f"{name}: expected {len(expected)} items, got {len(actual)}")
        for index, (mine, theirs) in enumerate(zip(expected, actual, strict=False)):
            _walk(mine, theirs, f"{where}/{index}", rules, out)
        return
    if not _same_value(expected, actual):
        out.append(f"{name}: expected {shown(expected)}, got {shown(actual)}")


def differences(
    expected: Answer, actual: Answer, rules: Rules, schema_problems: Iterable[tuple[str, str]] = ()
) -> list[str]:
    """Every way `actual` departs from `expected`, one line each (empty: they agree).

    A different status is one difference (the bodies of two statuses are not comparable field by field). Error
    answers compare their `code` only. `schema_problems` (what the spec finds wrong with the actual answer, as
    (JSON pointer, message)) count unless their field is noise."""
    if actual.status is None:
        return [f"status: expected {expected.status}, got {NO_ANSWER} ({actual.error or 'none'})"]
    if expected.status != actual.status:
        found = [f"status: expected {expected.status}, got {actual.status}"]
        if expected.code is not None and actual.code is not None and expected.code != actual.code:
            found.append(f"/code: expected {shown(expected.code)}, got {shown(actual.code)}")
        return found
    out: list[str] = []
    if _identical(expected.body, actual.body):
        pass
    elif expected.status is not None and expected.status >= 400:
        error_rules = Rules(rules.generated, rules.noise | Noise(ERROR_PROSE))
        _walk(expected.body, actual.body, "", error_rules, out)
    else:
        _walk(expected.body, actual.body, "", rules, out)
    for where, message in schema_problems:
        if not rules.noise.ignores(where):
            out.append(f"schema: {where or '(body)'}: {message}")
    return out


def generated_id(operation_id: str, answer: Answer) -> str | None:
    """The id a later call will name, from a successful answer of `operation_id` (a recipient's id), or None: the
    id the operation issues, when some operation's path names it (domain/operations.py)."""
    facts = facts_of(operation_id)
    name = facts.issued_id if facts is not None else None
    if name is None or name not in NAMED_LATER or not isinstance(answer.body, dict):
        return None
    if answer.status is None or not 200 <= answer.status < 300:
        return None
    value = answer.body.get(name)
    return value if isinstance(value, str) else None
