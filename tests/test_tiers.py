"""The tiers' rule: a default-tier test that starts the server, pytest or make in a child process fails, saying so."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ChildProcessOutsideE2E, starts_e2e_child


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
