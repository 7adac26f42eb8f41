"""Scenario files: YAML read with a safe loader, validated against the admin spec's `Scenario` schema
and the cross-checks a schema cannot say, then turned into the seed sessions start from.

Problems are reported as `FILE:LINE:COLUMN: PATH: what is wrong`, every one of them, never just the first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, ClassVar

import yaml

from .body import decode_json_text
from .documents import canonical_document
from .errors import Detail, FieldPath
from .events import cross_check_event
from .models import Scenario
from .shapes import account_from_scenario, event_from_scenario, uuid_text
from .spec import FastSafeLoader, SchemaCheck, Specs

SCENARIO_SUFFIXES = (".yaml", ".yml")
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


class _ScenarioYamlLoader(FastSafeLoader):  # type: ignore[valid-type, misc]
    """The safe loader, keeping as written what JSON cannot hold, so the schema judges it where it stands:
    unquoted dates and times stay text (not datetimes that `2026-02-30` or a leap second would crash),
    `.nan` and `.inf` stay text, and a key that is not a string (`1:`, `yes:`, `~:`) is its text."""

    yaml_implicit_resolvers: ClassVar[dict[Any, list[tuple[str, re.Pattern[str]]]]] = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP_TAG]
        for first, resolvers in FastSafeLoader.yaml_implicit_resolvers.items()
    }

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float | str:
        value: float = super().construct_yaml_float(node)
        return value if math.isfinite(value) else str(node.value)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self.flatten_mapping(node)
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else yaml.safe_dump(key).strip()
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping


_ScenarioYamlLoader.add_constructor("tag:yaml.org,2002:float", _ScenarioYamlLoader.construct_yaml_float)
_ScenarioYamlLoader.add_constructor("tag:yaml.org,2002:map", _ScenarioYamlLoader.construct_yaml_map)


@dataclass(frozen=True, slots=True)
class Problem:
    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path or '(file)'}: {self.message}"


class ScenarioError(Exception):
    """A scenario that does not validate, with every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(map(str, problems)))
        self.problems = problems


def _plain(value: Any) -> Any:
    """YAML's own types -> JSON's: unquoted dates and times become the strings the schema describes."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, (date, datetime)) else k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    return value


def _parse(text: str) -> Any:
    """The document's data. A file written in JSON syntax (which YAML includes) is read by the json module:
    PyYAML builds Python objects node by node, about 300 us an event, which makes a 100k-event scenario take
    half a minute; json reads the same file in well under a second."""
    if text.lstrip().startswith("{"):
        try:
            return decode_json_text(text)
        except (ValueError, RecursionError):
            pass  # not JSON as the API reads it (flow-style YAML, NaN, ...): the YAML reader reports where
    return _plain(yaml.load(text, Loader=_ScenarioYamlLoader))


def _marks(text: str) -> dict[tuple[str | int, ...], tuple[int, int]]:
    """path -> (line, column), 1-based, of every node of the document: only built when there are problems.

    libyaml composes with the same marks as the pure-Python composer, about six times faster: locating one
    problem in a 10k-event file took 13.5 s of composing with the latter."""
    marks: dict[tuple[str | int, ...], tuple[int, int]] = {}

    def walk(node: yaml.Node, path: tuple[str | int, ...]) -> None:
        marks[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                walk(value, (*path, str(key.value)))
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, (*path, index))

    root = yaml.compose(text, Loader=FastSafeLoader)
    if root is not None:
        walk(root, ())
    return marks


def _duplicates(
    items: Iterable[tuple[FieldPath, Any]], what: str, normalize: Callable[[str], str] = str
) -> list[Detail]:
    """Each text value met before, at its path. A value that is not text is the schema's to report."""
    seen: set[str] = set()
    problems = []
    for path, raw in items:
        if not isinstance(raw, str):
            continue
        value = normalize(raw)
        if value in seen:
            problems.append(Detail(path, f"{what} {value} appears more than once"))
        seen.add(value)
    return problems


def _dicts(items: Any) -> list[tuple[int, dict[str, Any]]]:
    """The mappings of a list, with their indexes; anything else (the schema reports it) is passed over."""
    return [(i, item) for i, item in enumerate(items) if isinstance(item, dict)] if isinstance(items, list) else []


def uniqueness_problems(data: dict[str, Any]) -> list[Detail]:
    """CONTRACT 3 "keys unique", over every item that has the key, well-formed or not: a schema problem
    elsewhere in an item must not hide that its key is taken twice."""
    events = _dicts(data.get("events"))
    accounts = _dicts(data.get("accounts"))
    key = "extraordinary_event_conciliation_key"
    problems = _duplicates(((("events", i, key), e.get(key)) for i, e in events), "event key", uuid_text)
    problems += _duplicates(
        (
            (("events", i, "event_conciliation_list", j, "event_conciliation_key"), c.get("event_conciliation_key"))
            for i, e in events
            for j, c in _dicts(e.get("event_conciliation_list"))
        ),
        "event_conciliation_key",
        uuid_text,
    )
    problems += _duplicates(((("accounts", i, "account_id"), a.get("account_id")) for i, a in accounts), "account_id")
    for i, account in accounts:
        recipient_list = account.get("recipient_list")
        recipients = _dicts(recipient_list.get("recipients") if isinstance(recipient_list, dict) else None)
        base = ("accounts", i, "recipient_list", "recipients")
        problems += _duplicates(
            (((*base, j, "recipient_id"), r.get("recipient_id")) for j, r in recipients), "recipient_id"
        )
        problems += _duplicates(
            (((*base, j, "document_number"), r.get("document_number")) for j, r in recipients),
            "document number",
            canonical_document,
        )
    return problems


def event_problems(events: Iterable[tuple[int, dict[str, Any]]]) -> list[Detail]:
    """The cross-checks of each (schema-valid) event, named by its place in the scenario's list."""
    return [d.within("events", index) for index, event in events for d in cross_check_event(event)]


def cross_check_scenario(data: dict[str, Any]) -> list[Detail]:
    """What the schema cannot say about a schema-valid scenario."""
    return event_problems(enumerate(data.get("events", []))) + uniqueness_problems(data)


@dataclass(frozen=True)
class ScenarioLoader:
    """Validates and builds scenarios with the checks compiled from the admin spec."""

    scenario_check: SchemaCheck

    @classmethod
    def from_specs(cls, specs: Specs) -> ScenarioLoader:
        return cls(specs.admin.check("#/components/schemas/Scenario"))

    def problems(self, data: Any) -> list[Detail]:
        """Every problem of a parsed scenario document: the schema's; the consistency of every event the schema
        found well-formed (one malformed event must not hide the others' problems); and the uniqueness of
        every key, in every item that has one."""
        schema_problems = self.scenario_check.problems(data, limit=None)
        if not schema_problems:
            return cross_check_scenario(data)
        if not isinstance(data, dict):
            return schema_problems
        events = data.get("events", [])
        checked: list[Detail] = []
        if isinstance(events, list) and not any(d.path == ("events",) for d in schema_problems):
            faulty = {d.path[1] for d in schema_problems if d.path[:1] == ("events",) and len(d.path) > 1}
            checked = event_problems((i, event) for i, event in enumerate(events) if i not in faulty)
        return schema_problems + checked + uniqueness_problems(data)

    def build(self, name: str, data: dict[str, Any]) -> Scenario:
        events = [event_from_scenario(e, e["extraordinary_event_conciliation_key"]) for e in data.get("events", [])]
        accounts = [account_from_scenario(a) for a in data.get("accounts", [])]
        return Scenario(
            name=name,
            description=str(data.get("description", "")),
            events={e.key: e for e in events},
            accounts={a.account_id: a for a in accounts},
        )

    def load_text(self, name: str, text: str, file: str) -> Scenario:
        try:
            data = _parse(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
            line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
            reason = " ".join(
                str(p) for p in (getattr(exc, "context", None), getattr(exc, "problem", None)) if p
            ) or str(exc)
            raise ScenarioError([Problem(file, line, column, "", f"not a safe YAML document: {reason}")]) from None
        except (ValueError, RecursionError) as exc:  # an explicit tag's bad value (`!!timestamp 2026-02-30`), depth
            raise ScenarioError([Problem(file, 1, 1, "", f"cannot be read: {exc or type(exc).__name__}")]) from None
        if data is None:
            data = {}
        details = self.problems(data)
        if details:
            marks = _marks(text)
            problems = []
            for detail in details:
                path = detail.path
                while path not in marks and path:
                    path = path[:-1]
                line, column = marks.get(path, (1, 1))
                problems.append(Problem(file, line, column, detail.field, detail.message))
            raise ScenarioError(problems)
        return self.build(name, data)

    def load_file(self, path: Path) -> Scenario:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError([Problem(str(path), 1, 1, "", f"cannot be read: {exc}")]) from None
        return self.load_text(path.stem, text, str(path))

    def load_directory(self, directory: Path) -> dict[str, Scenario]:
        """Every scenario of the directory, or ScenarioError with the problems of all of them."""
        if not directory.is_dir():
            raise ScenarioError([Problem(str(directory), 1, 1, "", "is not a directory")])
        scenarios: dict[str, Scenario] = {}
        problems: list[Problem] = []
        for path in sorted(p for p in directory.iterdir() if p.suffix in SCENARIO_SUFFIXES and p.is_file()):
            try:
                scenarios[path.stem] = self.load_file(path)
            except ScenarioError as exc:
                problems += exc.problems
        if problems:
            raise ScenarioError(problems)
        return scenarios
