"""Scenario files: YAML read with a safe loader, validated against the admin spec's `Scenario` schema
and the cross-checks a schema cannot say, then turned into the seed sessions start from.

Problems are reported as `FILE:LINE:COLUMN: PATH: what is wrong`, every one of them, never just the first.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import os
import stat
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mock_server.domain.conversions import account_from_scenario, event_from_scenario, uuid_text
from mock_server.domain.documents import canonical_document
from mock_server.domain.errors import Detail, FieldPath, field_path
from mock_server.domain.events import cross_check_event
from mock_server.domain.models import PENDING, Scenario
from mock_server.scenarios import validated
from mock_server.scenarios.text import Located, Unreadable, read
from mock_server.spec.openapi import SchemaCheck, Specs
from mock_server.state.schedules import plan_from_json, plan_problems
from mock_server.state.seed_storage import SeedEvents

SCENARIO_SUFFIXES = (".yaml", ".yml")
MAX_FILE_BYTES = 1024**3  # a million generated events take 586 MB in JSON syntax


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


def shown(path: Path) -> str:
    """A path as it can be printed: bytes of a name that are not UTF-8 as `\\xNN` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


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


def schedule_problems(data: dict[str, Any], faulty: Container[int] = ()) -> list[Detail]:
    """What the schema cannot say about each well-formed schedule (those not in `faulty`): one trigger, an
    amount only to pay, and an event of this scenario that is still pending."""
    statuses = {
        uuid_text(key): e.get("status", PENDING)
        for _, e in _dicts(data.get("events"))
        if isinstance(key := e.get("extraordinary_event_conciliation_key"), str)
    }
    problems: list[Detail] = []
    for index, schedule in _dicts(data.get("schedules")):
        if index in faulty:
            continue
        problems += [d.within("schedules", index) for d in plan_problems(schedule)]
        key = uuid_text(schedule["key"])
        if key not in statuses:
            problems.append(Detail(("schedules", index, "key"), f"no event {key} in this scenario"))
        elif statuses[key] != PENDING:
            problems.append(Detail(("schedules", index, "key"), f"event {key} is {statuses[key]}: it cannot change"))
    return problems


def cross_check_scenario(data: dict[str, Any]) -> list[Detail]:
    """What the schema cannot say about a schema-valid scenario."""
    return event_problems(enumerate(data.get("events", []))) + uniqueness_problems(data) + schedule_problems(data)


@dataclass(frozen=True)
class ScenarioLoader:
    """Validates and builds scenarios with the checks compiled from the admin spec."""

    scenario_check: SchemaCheck
    event_check: SchemaCheck | None = None  # one event of `Scenario`: for the lean path (scenarios/stream.py)
    # The specs the checks come from: a shipped scenario's judged parse is kept for them (scenarios/validated.py).
    # None (checks given alone): every file is read and judged.
    specs: Specs | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_specs(cls, specs: Specs) -> ScenarioLoader:
        return cls(
            specs.admin.check("#/components/schemas/Scenario"),
            specs.admin.check("#/components/schemas/ScenarioEvent"),
            specs,
        )

    @functools.cached_property
    def _checks_digest(self) -> str:
        assert self.specs is not None
        texts = (self.specs.public.text, self.specs.admin.text)
        return hashlib.sha256("\0".join(texts).encode()).hexdigest()

    def problems(self, data: Any, schema_limit: int | None = None) -> list[Detail]:
        """Every problem of a parsed scenario document, in one run (issue 12: fixing one must not reveal the
        next): the schema's; the consistency of every event, well-formed or not (each rule reads only fields
        it can judge); and the uniqueness of every key, in every item that has one. `schema_limit` bounds the
        schema's as a request's are (SchemaCheck.problems): a request body must not cost seconds to refuse."""
        schema_problems = self.scenario_check.problems(data, limit=schema_limit)
        if not schema_problems:
            return cross_check_scenario(data)
        if not isinstance(data, dict):
            return schema_problems
        said = {d.path for d in schema_problems}
        checked = [d for d in event_problems(_dicts(data.get("events"))) if d.path not in said]
        schedules = data.get("schedules", [])
        if isinstance(schedules, list) and not any(d.path == ("schedules",) for d in schema_problems):
            broken = {d.path[1] for d in schema_problems if d.path[:1] == ("schedules",) and len(d.path) > 1}
            checked += schedule_problems(data, {i for i in broken if isinstance(i, int)})
        return schema_problems + checked + uniqueness_problems(data)

    def build(self, name: str, data: dict[str, Any]) -> Scenario:
        events = SeedEvents(
            event_from_scenario(e, e["extraordinary_event_conciliation_key"]) for e in data.get("events", [])
        )
        accounts = [account_from_scenario(a) for a in data.get("accounts", [])]
        return Scenario(
            name=name,
            description=str(data.get("description", "")),
            events=events,
            accounts={a.account_id: a for a in accounts},
            schedules=tuple(plan_from_json(p, p["key"]) for p in data.get("schedules", [])),
        )

    def load_text(self, name: str, text: str, file: str) -> Scenario:
        return self.build(name, self._judged(text, file))

    def _judged(self, text: str, file: str) -> dict[str, Any]:
        try:
            document = read(text)
        except Unreadable as exc:
            raise ScenarioError([_problem(file, p) for p in exc.problems]) from None
        data = {} if document.data is None else document.data
        found = [_problem(file, p) for p in document.problems]
        details = self.problems(data)
        if details:
            marks = document.marks()
            for detail in details:
                path = detail.path
                while path not in marks and path:
                    path = path[:-1]
                line, column = marks.get(path, (1, 1))
                found.append(Problem(file, line, column, detail.field, detail.message))
        if found:
            raise ScenarioError(sorted(found, key=lambda p: (p.line, p.column)))
        judged: dict[str, Any] = data  # an object: the schema says so
        return judged

    def _load_lean(self, path: Path, name: str) -> Scenario | None:
        """A valid file in JSON syntax, read one event at a time (scenarios/stream.py): a 1M-event file then
        peaks at its packed seed instead of text plus parsed dicts (2.9 GB). None for anything else, which the
        full path reads (and judges) as it always has."""
        if self.event_check is None:
            return None
        # Imported here: a start on the shipped scenarios (their judged parse kept: scenarios/validated.py) reads
        # no file whole, and never needs the big files' machinery (batches, worker processes).
        from mock_server.scenarios.stream import read_lean

        lean = read_lean(path, self.event_check)
        if lean is None:
            return None
        rest, events = lean
        if self.problems(rest):
            return None
        return dataclasses.replace(self.build(name, rest), events=events)

    def load_file(self, path: Path, name: str | None = None) -> Scenario:
        """The scenario of one file, read only when it is a regular file of at most MAX_FILE_BYTES."""
        file = shown(path)
        try:
            status = path.stat()
            if not stat.S_ISREG(status.st_mode):
                raise ScenarioError([Problem(file, 1, 1, "", "is not a regular file")])
            if status.st_size > MAX_FILE_BYTES:
                raise ScenarioError(
                    [
                        Problem(
                            file, 1, 1, "", f"is {status.st_size:,} bytes; a scenario file may have {MAX_FILE_BYTES:,}"
                        )
                    ]
                )
            kept = None
            if self.specs is not None and validated.shipped(path, status.st_size):
                raw = path.read_bytes()
                kept = validated.kept_for(path, raw, self._checks_digest)
                held = kept.held()
                if held is not None:  # judged valid before, for these bytes, specs and code
                    return self.build(name or path.stem, held)
            else:
                lean = self._load_lean(path, name or path.stem)
                if lean is not None:
                    return lean
                raw = path.read_bytes()
        except OSError as exc:
            raise ScenarioError([Problem(file, 1, 1, "", f"cannot be read: {exc.strerror or exc}")]) from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
            where = f"byte {raw[exc.start]:#04x} at line {line}, column {column}"
            raise ScenarioError([Problem(file, 1, 1, "", f"cannot be read: {where} is not UTF-8")]) from None
        if kept is None:
            return self.load_text(name or path.stem, text, file)
        data = self._judged(text, file)
        kept.keep(data)
        return self.build(name or path.stem, data)

    def load_directory(self, directory: Path) -> dict[str, Scenario]:
        """Every scenario of the directory (see `_load_directory`), with the cyclic garbage collector paused: a
        big scenario is millions of short-lived dicts freed by their reference counts and a seed that lives
        on, and the collector's repeated passes over everything alive cost a third of a big load for nothing
        to collect. Only at start-up (the server, `mock-server check`), never while a server answers."""
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._load_directory(directory)
        finally:
            if was_enabled:
                gc.enable()

    def _load_directory(self, directory: Path) -> dict[str, Scenario]:
        """Every scenario of the directory, or ScenarioError with the problems of all of them.

        Every entry named NAME.yaml or NAME.yml is a scenario file or a problem: a name that is not UTF-8
        (the scenario could never be named in JSON), two files for one NAME, a directory, FIFO or device,
        a symbolic link leading out of the directory (its contents would be echoed in problems)."""
        if not directory.is_dir():
            raise ScenarioError([Problem(shown(directory), 1, 1, "", "is not a directory")])
        inside = directory.resolve()
        scenarios: dict[str, Scenario] = {}
        problems: list[Problem] = []
        entries = sorted(p for p in directory.iterdir() if p.suffix in SCENARIO_SUFFIXES)
        stems: dict[str, list[Path]] = {}
        for path in entries:
            stems.setdefault(path.stem, []).append(path)
        for path in entries:
            file = shown(path)
            others = [other.name for other in stems[path.stem] if other != path]
            if others:
                problems.append(
                    Problem(
                        file, 1, 1, "", f"scenario {shown(Path(path.stem))} is also defined by {shown(Path(others[0]))}"
                    )
                )
                continue
            if file != str(path):
                problems.append(Problem(file, 1, 1, "", "the file name is not UTF-8: the scenario could not be named"))
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(inside):
                problems.append(Problem(file, 1, 1, "", f"is a symbolic link out of {shown(directory)}: not read"))
                continue
            try:
                scenarios[path.stem] = self.load_file(path)
            except ScenarioError as exc:
                problems += exc.problems
        if problems:
            raise ScenarioError(problems)
        return scenarios


def _problem(file: str, located: Located) -> Problem:
    return Problem(file, located.line, located.column, field_path(located.path), located.message)
