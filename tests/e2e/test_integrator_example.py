"""The sample integrator project (examples/integrator) runs its own tests against the mock three ways, each one
command: the plugin in-process, the plugin against an external `mock-server`, and two pytest-xdist workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "integrator"
BIN = Path(sys.executable).parent
TIMEOUT = 240.0


def run(*command: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_SERVER_", "PYTEST_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(command, cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)


def passed(result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    match = re.search(r"(\d+) passed", result.stdout)
    assert match, result.stdout
    assert "warning" not in result.stdout.splitlines()[-1]
    return int(match[1])


@pytest.mark.parametrize(
    "command",
    [
        pytest.param([str(BIN / "pytest"), "-q", "-p", "no:cacheprovider"], id="in-process"),
        pytest.param([str(BIN / "pytest"), "-v", "-p", "no:cacheprovider", "-n", "2"], id="xdist"),
        pytest.param(["./run-against-external.sh", "-q", "-p", "no:cacheprovider"], id="external"),
    ],
)
def test_the_example_project_passes(command):
    result = run(*command)
    assert passed(result) == 11
    if "-n" in command:  # both workers ran tests, on the one in-process server the controller started
        assert re.search(r"\[gw0\] .*PASSED", result.stdout) and re.search(r"\[gw1\] .*PASSED", result.stdout)
