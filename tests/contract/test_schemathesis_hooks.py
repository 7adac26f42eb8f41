"""The schemathesis hooks ship in the wheel; what they import comes with the `schemathesis` extra (issue 12 item 4).

`make interop` also installs the package into fresh virtual environments, without and with the extra.
"""

from __future__ import annotations

import ast
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import mock_server.schemathesis_hooks as hooks

DISTRIBUTION = "pix-limits-mock-server"
INSTALL_HINT = "pip install 'pix-limits-mock-server[schemathesis]'"


def _third_party_imports(source: Path) -> set[str]:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in ("mock_server", "__future__")}


def _requirements(extra: str | None) -> set[str]:
    found = set()
    for line in importlib.metadata.requires(DISTRIBUTION) or []:
        requirement = Requirement(line)
        marker = requirement.marker
        wanted = marker is None if extra is None else marker is not None and marker.evaluate({"extra": extra})
        if wanted:
            found.add(requirement.name.lower())
    return found


def test_the_extra_brings_every_distribution_the_hooks_import() -> None:
    by_module = importlib.metadata.packages_distributions()
    needed = {dist.lower() for module in _third_party_imports(Path(hooks.__file__)) for dist in by_module[module]}
    assert needed == {"schemathesis", "hypothesis"}
    assert needed <= _requirements("schemathesis")
    assert not needed & _requirements(None), "the server itself must not need schemathesis"


@pytest.mark.e2e  # a fresh interpreter in a child process each
@pytest.mark.parametrize("missing", ["schemathesis", "hypothesis"])
def test_importing_the_hooks_without_the_extra_says_what_to_install(missing: str) -> None:
    # A None entry in sys.modules makes `import NAME` raise ImportError, as if NAME were not installed.
    code = f"import sys; sys.modules[{missing!r}] = None; import mock_server.schemathesis_hooks"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)

    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: mock_server.schemathesis_hooks needs schemathesis")
    assert f"({missing} is not installed)" in last
    assert last.endswith(INSTALL_HINT)


@pytest.mark.e2e  # a fresh interpreter in a child process
def test_the_server_imports_without_schemathesis() -> None:
    code = "import sys; sys.modules['schemathesis'] = None; sys.modules['hypothesis'] = None; import mock_server.cli"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)

    assert result.returncode == 0, result.stderr
