"""What a newcomer can rely on when finding a thing in mock_server: a class name means one class, and no module
is so long that what it holds cannot be told from its name (at most MAX_LINES lines)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.syntax_trees import syntax_tree

PACKAGE = Path(__file__).resolve().parents[1] / "mock_server"
MAX_LINES = 700
# Being shrunk on its own branch (issue 41: `plugin`): the one module over MAX_LINES this branch leaves.


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def classes_named_twice(sources: dict[str, str]) -> dict[str, list[str]]:
    """Class names defined in more than one place, with each `module:line`."""
    found: defaultdict[str, list[str]] = defaultdict(list)
    for module, source in sources.items():
        for node in ast.walk(syntax_tree(source)):
            if isinstance(node, ast.ClassDef):
                found[node.name].append(f"{module}:{node.lineno}")
    return {name: places for name, places in sorted(found.items()) if len(places) > 1}


def modules_over(limit: int) -> dict[str, int]:
    """The package's modules longer than `limit` lines, with their lengths."""
    lengths = {
        str(path.relative_to(PACKAGE)): len(path.read_text(encoding="utf-8").splitlines()) for path in _modules()
    }
    return {module: lines for module, lines in lengths.items() if lines > limit}


def test_no_two_classes_of_the_package_share_a_name() -> None:
    sources = {str(path.relative_to(PACKAGE)): path.read_text(encoding="utf-8") for path in _modules()}
    assert classes_named_twice(sources) == {}


def test_a_class_named_twice_is_found_with_both_places() -> None:
    sources = {
        "a.py": "class Call:\n    pass\n",
        "b/c.py": "def f():\n    class Call: ...\n",
        "d.py": "class Reply: ...",
    }
    assert classes_named_twice(sources) == {"Call": ["a.py:1", "b/c.py:2"]}


def _over_the_limit() -> dict[str, int]:
    return modules_over(MAX_LINES)


def test_no_module_is_over_the_limit() -> None:
    over = _over_the_limit()
    assert over == {}, "modules over 700 lines (split them by what the parts do): " + ", ".join(
        f"{module} ({lines})" for module, lines in over.items()
    )


def test_the_limit_finds_a_long_module() -> None:
    longest = max(_modules(), key=lambda path: len(path.read_text(encoding="utf-8").splitlines()))
    lines = len(longest.read_text(encoding="utf-8").splitlines())
    assert str(longest.relative_to(PACKAGE)) in modules_over(lines - 1)
    assert modules_over(lines) == {}
