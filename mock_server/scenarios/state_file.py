"""A state file (`--state-file`, state/persistence.py) read back at start: JSON, checked whole against the admin
spec's `StateFile` schema and the scenario loader's own checks before anything is built. Every problem is placed at
FILE:LINE:COLUMN as a scenario file's are, and stops the start (the CLI exits 2): a file the server cannot read
back whole is never overwritten, so nothing a crash or a hand left in it is lost by starting."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Container
from pathlib import Path
from typing import Any

from mock_server.domain.errors import Detail
from mock_server.domain.events import cross_check_event
from mock_server.scenarios.loader import Problem, ScenarioError, ScenarioLoader, shown
from mock_server.scenarios.text import Document
from mock_server.spec.openapi import SchemaCheck
from mock_server.state.schedules import plan_problems
from mock_server.wire.decoding import SCENARIO_JSON, DuplicateKey

WRITTEN_WHOLE = (
    "the server writes it whole (a new file renamed over the old one), so something else changed it; move it "
    "away to start afresh"
)


def _stop(file: str, message: str, line: int = 1, column: int = 1) -> ScenarioError:
    return ScenarioError([Problem(file, line, column, "", message)])


def check_writable(path: Path) -> None:
    """Stop the start now, rather than at the first write, when the file's directory cannot take it (the directory
    of the file a symlink names: that is where it is written)."""
    directory = Path(os.path.realpath(path)).parent
    if not directory.is_dir():
        raise _stop(shown(path), f"cannot be written: there is no directory {shown(directory)}")
    if not os.access(directory, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.R_OK)):
        raise _stop(shown(path), "cannot be written (or read): permission denied")


def read_state_file(
    path: Path,
    state_check: SchemaCheck,
    loader: ScenarioLoader,
    scenarios: Container[str],
    max_bytes: int | None = None,
) -> dict[str, Any] | None:
    """The checked document of the state file at `path`, None when there is none yet (the first start), or
    ScenarioError with every problem found. `scenarios`: the names the fixtures hold; `max_bytes`: the largest file
    the server's bounds let it write (state/persistence.max_file_bytes), refused before a byte is read."""
    file = shown(path)
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _stop(file, f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(status.st_mode):
        raise _stop(file, "is not a regular file")
    if max_bytes is not None and status.st_size > max_bytes:
        raise _stop(file, _too_large(status.st_size, max_bytes))
    try:
        with path.open("rb") as stream:
            head = stream.read(SNIFFED_BYTES)
            if len(head) == SNIFFED_BYTES:  # a large file: refused on its first bytes when it is no JSON object
                _refuse_unless_an_object(file, head)
            rest = stream.read() if max_bytes is None else stream.read(max_bytes + 1 - len(head))
            raw = head + rest
        if max_bytes is not None and len(raw) > max_bytes:  # it grew since: something else is writing it
            raise _stop(file, _too_large(len(raw), max_bytes))
        return _checked(file, raw, state_check, loader, scenarios)
    except OSError as exc:
        raise _stop(file, f"cannot be read: {exc.strerror or exc}") from None
    except MemoryError:
        raise _stop(
            file,
            f"is {status.st_size:,} bytes, more than this process has the memory to read back: give it more memory, "
            "or move the file away to start afresh",
        ) from None


# A file at least this long is judged on its first bytes before the rest is read: the server writes one JSON object,
# so a foreign file (a log, a dump, another program's data) is refused without holding it in memory whole.
SNIFFED_BYTES = 64 * 1024


def _refuse_unless_an_object(file: str, head: bytes) -> None:
    """ScenarioError unless `head` begins, after white space, with the `{` of a JSON object."""
    body = head.lstrip(b" \t\r\n")
    if body.startswith(b"{"):
        return
    skipped = head[: len(head) - len(body)]
    line = skipped.count(b"\n") + 1
    column = len(skipped) - (skipped.rfind(b"\n") + 1) + 1
    reason = f"is not a state file (it does not begin with a JSON object: line {line} column {column})"
    raise _stop(file, f"{reason}: {WRITTEN_WHOLE}", line, column)


def _too_large(size: int, max_bytes: int) -> str:
    return (
        f"is {size:,} bytes, more than a server held to these bounds writes ({max_bytes:,}: --max-sessions times "
        f"--max-session-bytes, and room for the rest): {WRITTEN_WHOLE}, or start with the bounds it was written under"
    )


def _checked(
    file: str, raw: bytes, state_check: SchemaCheck, loader: ScenarioLoader, scenarios: Container[str]
) -> dict[str, Any] | None:
    """The document `raw` holds, checked whole (read_state_file)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        reason = f"is not a state file (byte {raw[exc.start]:#04x} is not UTF-8): {WRITTEN_WHOLE}"
        raise _stop(file, reason, line, column) from None
    if not text.strip():
        raise _stop(file, f"is empty, not a state file: {WRITTEN_WHOLE}")
    try:
        data = SCENARIO_JSON.decode(text)
    except json.JSONDecodeError as exc:
        raise _stop(
            file,
            f"is not a state file ({exc.msg}: line {exc.lineno} column {exc.colno}): {WRITTEN_WHOLE}",
            exc.lineno,
            exc.colno,
        ) from None
    except (ValueError, RecursionError, DuplicateKey) as exc:
        reason = "an object gives one key twice" if isinstance(exc, DuplicateKey) else str(exc) or "nested too deeply"
        raise _stop(file, f"is not a state file ({reason}): {WRITTEN_WHOLE}") from None
    details = state_check.problems(data, limit=None)
    if not details:
        details = _cross_problems(data, loader, scenarios)
    if details:
        marks = Document(text, data, json=True).marks()
        problems = []
        for detail in details:
            where = detail.path
            while where not in marks and where:
                where = where[:-1]
            line, column = marks.get(where, (1, 1))
            problems.append(Problem(file, line, column, detail.field, detail.message))
        raise ScenarioError(sorted(problems, key=lambda p: (p.line, p.column)))
    return data if isinstance(data, dict) else None


def _cross_problems(data: dict[str, Any], loader: ScenarioLoader, scenarios: Container[str]) -> list[Detail]:
    """What the schema cannot say of a schema-valid state file."""
    problems: list[Detail] = []
    names: set[str] = set()
    for index, session in enumerate(data["sessions"]):
        at: tuple[str | int, ...] = ("sessions", index)
        if session["name"] in names:
            problems.append(Detail((*at, "name"), f"session {session['name']!r} is there twice"))
        names.add(session["name"])
        if session["scenario"] not in scenarios:
            problems.append(
                Detail((*at, "scenario"), f"no scenario {session['scenario']!r} in the fixtures (--fixtures)")
            )
        states = session["states"]
        for number, state in enumerate(states):
            problems += [d.within(*at, "states", number) for d in loader.problems(state)]
        stores = [((*at, "store"), session["store"])]
        schedule_lists = [((*at, "schedules"), session["schedules"])]
        snapshot_names: set[str] = set()
        for number, snapshot in enumerate(session["snapshots"]):
            where = (*at, "snapshots", number)
            if snapshot["name"] in snapshot_names:
                problems.append(Detail((*where, "name"), f"snapshot {snapshot['name']!r} is there twice"))
            snapshot_names.add(snapshot["name"])
            stores.append(((*where, "store"), snapshot["store"]))
            schedule_lists.append(((*where, "schedules"), snapshot["schedules"]))
        for where, store in stores:
            if store["base"] is not None and store["base"] >= len(states):
                problems.append(Detail((*where, "base"), f"no state {store['base']} in this session's states"))
            for number, event in enumerate(store["events"]):
                problems += [d.within(*where, "events", number) for d in cross_check_event(event)]
        for where, schedules in schedule_lists:
            for number, item in enumerate(schedules["items"]):
                problems += [d.within(*where, "items", number, "plan") for d in plan_problems(item["plan"])]
    return problems
