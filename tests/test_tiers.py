"""The tiers' rule: a default-tier test that starts the server, pytest or make in a child process fails, saying so."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ChildProcessOutsideE2E, may_select_marker, selects_marker, starts_e2e_child


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ([sys.executable, "-m", "mock_server", "--port", "0"], True),
        ("/repo/.venv/bin/mock-server check --fixtures x", True),
        (["mock-server", "healthcheck"], True),
        ([sys.executable, "-m", "pytest", "-q"], True),
        (["/repo/.venv/bin/pytest", "-n", "2"], True),
        (["make", "example"], True),
        ([sys.executable, "-c", "import mock_server.cli"], False),
        (["/repo/.venv/bin/lint-imports", "pyproject.toml"], False),
        (["actionlint", "ci.yml"], False),
        (["git", "log", "--grep", "pytest"], False),
    ],
)
def test_what_counts_as_an_e2e_child(command, expected) -> None:
    assert starts_e2e_child(command) is expected


def test_a_default_tier_test_cannot_start_the_server() -> None:
    with pytest.raises(ChildProcessOutsideE2E, match="belongs to the e2e tier"):
        subprocess.Popen([sys.executable, "-m", "mock_server", "--port", "0"])


@pytest.mark.e2e
def test_an_e2e_test_may() -> None:
    done = subprocess.run([sys.executable, "-m", "mock_server", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "--fixtures" in done.stdout


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("", True),
        ("exhaustive", True),
        ("e2e or exhaustive", True),
        ("not e2e", True),
        ("not exhaustive", False),
        ("not slow and not browser and not cluster and not e2e and not exhaustive", False),
        ("e2e", False),
    ],
)
def test_which_runs_collect_the_exhaustive_modules(expression, selected) -> None:
    assert selects_marker(expression, "exhaustive") is selected


ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        ("", True),
        ("e2e", True),
        ("e2e and slow", True),  # an e2e test may carry another marker too
        ("e2e and not slow", True),
        ("not exhaustive", True),
        ("slow", True),
        ("not e2e", False),
        ("exhaustive and not e2e", False),
        ("not slow and not browser and not cluster and not e2e and not exhaustive and not containers", False),
    ],
)
def test_which_runs_collect_the_e2e_directory(expression, selected) -> None:
    assert may_select_marker(expression, "e2e") is selected


def test_the_default_tier_leaves_the_exhaustive_tier_to_its_target_which_ci_runs() -> None:
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    default_expression = addopts[addopts.index("-m") + 1]
    assert not selects_marker(default_expression, "exhaustive")
    makefile = (ROOT / "Makefile").read_text()
    assert "\ntest-exhaustive: $(STAMP)\n\t$(BIN)/pytest -q -n 2 -m exhaustive\n" in makefile
    assert re.search(r"^step test-exhaustive\b", (ROOT / ".ci" / "run").read_text(), re.MULTILINE)


def test_every_test_of_an_exhaustive_module_carries_the_marker() -> None:
    modules = sorted((ROOT / "tests").rglob("*_exhaustive.py"))
    assert modules, "the exhaustive tier has at least the schemathesis sweep"
    for module in modules:
        assert re.search(r"^pytestmark = pytest\.mark\.exhaustive$", module.read_text(), re.MULTILINE), module
