"""Issue 41's line for the pytest plugin: fixtures over the client and the server seam. pytest_plugin.py, with any
pytest-only module it alone uses, is at most 450 lines; it names no `app.state` (a server's sessions are reached
through their one door, state/session_door.py, by mock_server/serving.py) and builds no error body of its own (a
refusal is the server's own answer). Nor does mock_server/session_supply.py, the road its sessions take."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mock_server"
PLUGIN = PACKAGE / "pytest_plugin.py"
LIMIT = 450
ERROR_KEYS = {"code", "message", "details"}  # the contract's error body: {"code", "message", "details"}


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def plugin_modules() -> list[Path]:
    """The plugin and every module of the package that imports pytest and that no module but the plugin imports.
    Only the files whose text could hold such an import are parsed (this runs at collection, in each xdist worker:
    parsing all 140 files cost each ~1 s): an import of pytest names "pytest", one of module `a.b.c` names "c"."""
    modules = [path for path in PACKAGE.rglob("*.py") if path != PLUGIN]
    texts = {path: path.read_text(encoding="utf-8") for path in modules}
    by_plugin = _imported(PLUGIN)
    found = [PLUGIN]
    for path in modules:
        name = _module_name(path)
        if name not in by_plugin or "pytest" not in texts[path] or "pytest" not in _imported(path):
            continue
        users = [other for other in modules if other != path and path.stem in texts[other] and name in _imported(other)]
        if not users:
            found.append(path)
    return found


def problems(source: str) -> list[str]:
    """`app.state` named, or an error body built (a dict with the contract's error keys, literal or dict(...))."""
    found = [
        f"line {number}: names app.state" for number, line in enumerate(source.splitlines(), 1) if "app.state" in line
    ]
    for node in ast.walk(ast.parse(source)):
        keys: set[str] = set()
        if isinstance(node, ast.Dict):
            keys = {key.value for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            keys = {keyword.arg for keyword in node.keywords if keyword.arg}
        built = ", ".join(sorted(keys & ERROR_KEYS))
        if built:
            found.append(f"line {getattr(node, 'lineno', 0)}: builds an error body ({built})")
    return found


def test_the_rule_finds_what_it_is_for():
    assert problems("sessions = server.app.state.sessions\n") == ["line 1: names app.state"]
    assert len(problems('error = {"code": code, "message": message}\n')) == 1
    assert len(problems("error = dict(code=code, message=text)\n")) == 1
    assert problems('body = {"name": name, "scenario": scenario}\nheaders = {"X-Mock-Admin": "1"}\n') == []


def test_the_plugin_and_its_pytest_only_modules_are_at_most_450_lines():
    counted = {_module_name(path): len(path.read_text(encoding="utf-8").splitlines()) for path in plugin_modules()}
    assert "mock_server.pytest_plugin" in counted
    assert sum(counted.values()) <= LIMIT, counted


@pytest.mark.parametrize("path", [*plugin_modules(), PACKAGE / "session_supply.py"], ids=lambda path: path.name)
def test_the_plugin_neither_touches_the_apps_state_nor_builds_error_bodies(path):
    assert problems(path.read_text(encoding="utf-8")) == []
