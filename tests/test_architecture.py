"""The package's parts import one way (ARCHITECTURE.md): import-linter's contracts in pyproject.toml, run here."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "mock_server"
PARTS = ("domain", "wire", "spec", "state", "scenarios", "http", "api", "admin", "provider", "mcp")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package found in `root`, with the repository's contracts."""
    return subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), str(REPOSITORY / "pyproject.toml"), "--no-cache"],
        cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_package_keeps_its_contracts() -> None:
    result = lint_imports(REPOSITORY)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "planted", "broken"),
    [
        ("domain/models.py", "from mock_server.state import store", "import one way"),
        ("state/journal.py", "from mock_server.http import pipeline", "import one way"),
        ("api/handlers.py", "from mock_server.admin import handlers", "import one way"),
        ("provider/flows.py", "from mock_server.app import create_app", "import one way"),
        ("http/outbound.py", "from mock_server.provider import flows", "import one way"),
        ("domain/limits.py", "import yaml", "pure"),
        ("wire/decoding.py", "import starlette.requests", "know nothing of HTTP"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(tmp_path: Path, module: str, planted: str, broken: str) -> None:
    """The contracts can fail: a copy of the package with one import going the wrong way is refused."""
    shutil.copytree(PACKAGE, tmp_path / "mock_server", ignore=shutil.ignore_patterns("__pycache__", "static"))
    target = tmp_path / "mock_server" / module
    target.write_text(target.read_text() + f"\n{planted}\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert broken in " ".join(broken_contracts(result.stdout)), result.stdout


def broken_contracts(report: str) -> list[str]:
    """The names of the contracts lint-imports reports BROKEN (its names wrap over lines)."""
    verdicts = report.split("Contracts:")[0].split("dependencies.")[-1].strip("-\n ")
    verdicts = verdicts.replace("\n", "")
    return [name for name, verdict in re.findall(r"(.+?) (KEPT|BROKEN)", verdicts) if verdict == "BROKEN"]


def test_every_part_says_what_it_owns() -> None:
    """Each subpackage's docstring is one line, and the parts are the ones ARCHITECTURE.md draws."""
    found = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert found == sorted(PARTS)
    architecture = (REPOSITORY / "ARCHITECTURE.md").read_text()
    for part in PARTS:
        docstring = (PACKAGE / part / "__init__.py").read_text().strip()
        assert docstring.startswith('"""') and docstring.endswith('"""') and "\n" not in docstring, part
        assert f"`{part}/`" in architecture, f"ARCHITECTURE.md does not draw {part}/"
