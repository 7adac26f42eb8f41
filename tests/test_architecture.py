"""The package's parts import one way (ARCHITECTURE.md): import-linter's contracts in pyproject.toml, run here."""

from __future__ import annotations

import ast
import functools
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.syntax_trees import syntax_tree

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "mock_server"
PARTS = ("domain", "wire", "spec", "telemetry", "state", "scenarios", "http", "api", "admin", "provider", "gate", "mcp")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package found in `root`, with the repository's contracts."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), str(REPOSITORY / "pyproject.toml"), "--no-cache"],
        cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.e2e  # lint-imports in a child process; test_the_drawing_names_exactly_the_imports_between_parts stays
def test_the_package_keeps_its_contracts() -> None:
    result = lint_imports(REPOSITORY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 kept, 0 broken" in result.stdout


# Imports going the wrong way, each breaking the contract named: all planted in one copy of the package, which
# lint-imports checks once (a run costs ~0.6 s, most of it the interpreter's start and import-linter's imports).
# Each test finds its own import, by its file and line, among those the report names under its contract: a direct
# import is its own shortest chain, so another planted import cannot stand for it.
PLANTED = [
    ("domain/models.py", "from mock_server.state import store", "import one way"),
    ("state/journal.py", "from mock_server.http import pipeline", "import one way"),
    ("api/handlers.py", "from mock_server.admin import handlers", "import one way"),
    ("provider/flows.py", "from mock_server.app import create_app", "import one way"),
    ("http/outbound.py", "from mock_server.provider import flows", "import one way"),
    ("admin/pact.py", "from mock_server.gate import diff", "import one way"),
    ("gate/diff.py", "from mock_server import cli", "import one way"),
    ("api/handlers.py", "from mock_server.http import pipeline", "not the road"),
    ("admin/verify.py", "from mock_server.http.connection import send_json_whole", "not the road"),
    ("domain/limits.py", "import yaml", "pure"),
    ("wire/decoding.py", "import starlette.requests", "know nothing of HTTP"),
    ("http/fault_replies.py", "from mock_server.http.connection import error_bytes", "loads no ASGI server"),
]


@dataclass(frozen=True)
class PlantedRun:
    result: subprocess.CompletedProcess[str]
    lines: dict[tuple[str, str], int]  # (module, planted import) -> its line in the planted copy


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory: pytest.TempPathFactory) -> PlantedRun:
    """lint-imports over a copy of the package with every PLANTED import added at the end of its module."""
    root = tmp_path_factory.mktemp("planted")
    shutil.copytree(PACKAGE, root / "mock_server", ignore=shutil.ignore_patterns("__pycache__", "static"))
    lines = {}
    for module, planted, _ in PLANTED:
        target = root / "mock_server" / module
        text = target.read_text() + f"\n{planted}\n"
        target.write_text(text)
        lines[module, planted] = len(text.splitlines())
    return PlantedRun(lint_imports(root), lines)


@pytest.mark.e2e  # the same, on a copy of the package with the imports planted
@pytest.mark.parametrize(("module", "planted", "broken"), PLANTED)
def test_a_forbidden_import_breaks_a_contract(planted_run: PlantedRun, module: str, planted: str, broken: str) -> None:
    """The contracts can fail: an import going the wrong way is refused, and named under its contract."""
    result = planted_run.result
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in " ".join(broken_contracts(result.stdout)), result.stdout
    (report,) = [text for name, text in broken_reports(result.stdout).items() if broken in name]
    importer = "mock_server." + module.removesuffix(".py").replace("/", ".")
    line = planted_run.lines[module, planted]
    # A chain of this one import, e.g. `- mock_server.domain.models -> mock_server.state.store (l.179)` and an empty
    # line (one import may list several lines: `(l.38, l.40)`).
    numbers = rf"\((?:l\.\d+, )*l\.{line}(?:, l\.\d+)*\)"
    alone = re.compile(rf"^- +{re.escape(importer)} -> [\w.]+ {numbers}\n\n", re.MULTILINE)
    assert alone.search(report), f"{importer} l.{line} is not named under the contract:\n{report}"


def broken_contracts(report: str) -> list[str]:
    """The names of the contracts lint-imports reports BROKEN (its names wrap over lines)."""
    verdicts = report.split("Contracts:")[0].split("dependencies.")[-1].strip("-\n ")
    verdicts = verdicts.replace("\n", "")
    return [name for name, verdict in re.findall(r"(.+?) (KEPT|BROKEN)", verdicts) if verdict == "BROKEN"]


# In the "Broken contracts" part of the report, each contract's name (wrapped over lines) is underlined with dashes
# (wrapped too), then come the imports that break it.
_CONTRACT_HEADING = re.compile(r"^((?:[^-\n][^\n]*\n)+)(?:-+\n)+", re.MULTILINE)


def broken_reports(report: str) -> dict[str, str]:
    """Each contract of the report's "Broken contracts" part -> what the report says breaks it."""
    part = report.split("\nBroken contracts\n", 1)[1].lstrip("-\n")
    headings = list(_CONTRACT_HEADING.finditer(part))
    ends = [heading.start() for heading in headings[1:]] + [len(part)]
    return {
        heading[1].replace("\n", ""): part[heading.end() : end] for heading, end in zip(headings, ends, strict=True)
    }


@pytest.mark.e2e  # a fresh interpreter in a child process
def test_importing_the_app_loads_no_asgi_server() -> None:
    """`import mock_server.app` (what an in-process test, the MCP stdio server and verify-provider's oracle load)
    brings neither uvicorn nor the connection that subclasses its protocol, nor the server seam: in a fresh
    interpreter, so nothing this run imported already stands in the way."""
    probe = (
        "import sys, mock_server.app; "
        "print(sorted(m for m in ('uvicorn', 'mock_server.server', 'mock_server.http.connection') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


def test_every_part_says_what_it_owns() -> None:
    """Each subpackage's docstring is one line, and the parts are the ones ARCHITECTURE.md draws."""
    found = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert found == sorted(PARTS)
    architecture = (REPOSITORY / "ARCHITECTURE.md").read_text()
    for part in PARTS:
        docstring = (PACKAGE / part / "__init__.py").read_text().strip()
        assert docstring.startswith('"""') and docstring.endswith('"""') and "\n" not in docstring, part
        assert f"`{part}/`" in architecture, f"ARCHITECTURE.md does not draw {part}/"


def _part(module: str) -> str | None:
    """The part a module of the package belongs to (`porch` for the modules at its root), None for others."""
    names = module.split(".")
    if names[0] != "mock_server" or len(names) < 2:
        return None
    return names[1] if names[1] in PARTS else "porch"


@functools.cache
def _imported(source: str) -> frozenset[str]:
    """The modules a file imports when it runs (not those imported only for mypy, `if TYPE_CHECKING:`). Kept per
    source text: a copy of the package with one file changed parses that file alone again."""
    tree = syntax_tree(source)
    for_mypy = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for inner in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in for_mypy:
            continue
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return frozenset(found)


def imports_between_parts(package: Path) -> dict[str, set[str]]:
    """Part -> the other parts it imports, read from the package's files."""
    graph: dict[str, set[str]] = {}
    for file in package.rglob("*.py"):
        source = _part(".".join(("mock_server", *file.relative_to(package).with_suffix("").parts)))
        assert source is not None
        for module in _imported(file.read_text(encoding="utf-8")):
            target = _part(module)
            if target is not None and target != source:
                graph.setdefault(source, set()).add(target)
    return graph


def drawn_imports(architecture: str) -> dict[str, set[str]]:
    """Part -> the parts its row of ARCHITECTURE.md's drawing says it imports."""
    drawing = architecture.split("```", 2)[1]
    rows = re.findall(r"^  (the porch|[a-z]+/) +(.+)$", drawing, flags=re.MULTILINE)
    return {
        ("porch" if name == "the porch" else name.rstrip("/")): set(re.findall(r"([a-z]+)/", parts))
        for name, parts in rows
        if parts.strip() != "imports"
    }


def test_the_drawing_names_exactly_the_imports_between_parts() -> None:
    drawn = drawn_imports((REPOSITORY / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    assert sorted(drawn) == sorted([*PARTS, "porch"])
    found = imports_between_parts(PACKAGE)
    for part in drawn:
        assert found.get(part, set()) == drawn[part], f"{part}: imports {sorted(found.get(part, ()))}"


def test_an_import_the_drawing_lacks_is_seen(tmp_path: Path) -> None:
    shutil.copytree(PACKAGE, tmp_path / "mock_server", ignore=shutil.ignore_patterns("__pycache__", "static"))
    target = tmp_path / "mock_server" / "api" / "handlers.py"
    target.write_text(target.read_text() + "\nfrom mock_server.state import store\n")
    assert "state" in imports_between_parts(tmp_path / "mock_server")["api"]
