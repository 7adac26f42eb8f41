"""The default scenario's pending event is named in one place (tests/default_scenario.py): a test module that
writes its UUID again fails here, by file and line. A YAML or pytester text (a string of several lines) may hold
it: that text is a file's content, not a name."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.default_scenario import PENDING_EVENT

TESTS = Path(__file__).resolve().parent
HELPER = TESTS / "default_scenario.py"


def repeated_in(source: str) -> list[int]:
    """The lines of `source` where a one-line string holds the pending event's UUID (a source whose text does not
    hold it is not parsed: ~300 modules, ~1 s)."""
    if PENDING_EVENT not in source.lower():
        return []
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and PENDING_EVENT in node.value.lower()
        and "\n" not in node.value
    )


def test_no_test_module_repeats_the_default_events_uuid() -> None:
    found = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != HELPER
        for line in repeated_in(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "use tests.default_scenario's PENDING_EVENT (or PENDING_EVENT_PATH) instead: " + ", ".join(
        found
    )


def test_a_repeated_uuid_is_found_in_a_plain_string_and_an_f_string() -> None:
    source = (
        f'KEY = "{PENDING_EVENT}"\n'
        f'PATH = f"/events/{PENDING_EVENT.upper()}/{{x}}"\n'
        f'YAML = """\nkey: {PENDING_EVENT}\n"""\n'
    )
    assert repeated_in(source) == [1, 2]
