"""The package's layering: the pure rules import nothing of HTTP, state, YAML or JSON encoding."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mock_server"
PURE = (
    "models",
    "limits",
    "events",
    "documents",
    "clock",
    "shapes",
    "errors",
    "matching",
    "verify",
    "coverage",
    "schedules",
)
# Third-party packages of the HTTP, YAML and encoding layers, and the package's own stateful or HTTP modules.
FORBIDDEN_PACKAGES = {"starlette", "uvicorn", "httpx", "orjson", "yaml", "jsonschema", "jsonschema_rs"}
FORBIDDEN_MODULES = {
    "admin", "app", "body", "cli", "encoding", "faults", "ids", "journal", "pipeline", "routes",
    "scenarios", "sessions", "settings", "spec", "store",
}  # fmt: skip


def imports_of(source: str) -> set[str]:
    """Top-level names a module imports: `starlette` for `from starlette.x import y`, `store` for `from .store`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                name = node.module.split(".")[0]
                found.add(name if name != "mock_server" else node.module.split(".")[1])
            elif node.module:
                found.add(node.module.split(".")[0])
            else:
                found |= {alias.name for alias in node.names}  # `from . import store`
    return found


@pytest.mark.parametrize("module", PURE)
def test_pure_rules_import_no_http_state_or_yaml(module: str) -> None:
    imported = imports_of((PACKAGE / f"{module}.py").read_text())
    assert not imported & FORBIDDEN_PACKAGES, f"{module}.py imports {sorted(imported & FORBIDDEN_PACKAGES)}"
    assert not imported & FORBIDDEN_MODULES, f"{module}.py imports {sorted(imported & FORBIDDEN_MODULES)}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from starlette.requests import Request", {"starlette"}),
        ("import yaml", {"yaml"}),
        ("from .store import Store", {"store"}),
        ("from . import store", {"store"}),
        ("from mock_server.pipeline import Call", {"pipeline"}),
    ],
)
def test_the_import_reader_sees_every_form(source: str, expected: set[str]) -> None:
    """The rule above can fail: each way of importing is seen."""
    assert imports_of(source) == expected
