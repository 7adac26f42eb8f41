"""The package as a user gets it (issue 23 item 3): `make dist` builds a wheel that holds `mock_server` alone, with
its metadata; installed into a new venv outside the repository, from that wheel and from a `git+file://` URL of
the repository, `mock-server --version`, `mock-server check` (the scenarios shipped inside the wheel) and the
server itself work from any directory.

Needs the package index (pip resolves the dependencies, `build` fetches hatchling): about 40 s, most of it pip.
"""

from __future__ import annotations

import email.parser
import os
import re
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import mock_server
from tests.default_scenario import PENDING_EVENT_PATH

pytestmark = pytest.mark.e2e

REPOSITORY = Path(__file__).resolve().parents[2]
VERSION = mock_server.__version__
DIST_INFO = f"pix_limits_mock_server-{VERSION}.dist-info/"
TIMEOUT = 600.0  # pip over the network; its own timeouts are shorter
READY = re.compile(r"^mock-server ready on (?P<url>\S+) ")
SHIPPED_SCENARIOS = "4 scenarios valid in {fixtures}: default, empty, payments, recipients\n"


def _env() -> dict[str, str]:
    """The caller's environment without what would let the repository leak in: no PYTHONPATH, no MOCK_SERVER_*,
    no virtualenv of the caller's."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSAFEPATH")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("MOCK_SERVER_")}


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT, check=False)


@dataclass
class Built:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """`make dist` into a directory of the test's (-o: the venv the tests run from counts as installed)."""
    dist = tmp_path_factory.mktemp("dist")
    made = run(["make", "--no-print-directory", "-o", ".venv/.installed-stamp", "dist", f"DIST={dist}"], REPOSITORY)
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    (wheel,) = dist.glob("pix_limits_mock_server-*.whl")
    (sdist,) = dist.glob("pix_limits_mock_server-*.tar.gz")
    return Built(wheel, sdist)


@dataclass
class Venv:
    root: Path
    elsewhere: Path  # a directory outside the repository, the commands' working directory

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return run(list(argv), self.elsewhere)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, built: Built) -> Venv:
    """A new venv outside the repository with the wheel installed, dependencies resolved by pip."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    assert not elsewhere.resolve().is_relative_to(REPOSITORY)
    created = run([sys.executable, "-m", "venv", str(elsewhere / "venv")], elsewhere)
    assert created.returncode == 0, created.stderr
    made = Venv(elsewhere / "venv", elsewhere)
    installed = made.run(
        made.bin("python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(built.wheel)
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return made


def shipped_fixtures(venv: Venv) -> Path:
    found = venv.run(
        venv.bin("python"), "-c", "import mock_server, pathlib; print(pathlib.Path(mock_server.__file__).parent)"
    )
    assert found.returncode == 0, found.stderr
    package = Path(found.stdout.strip())
    assert package.is_relative_to(venv.root), f"mock_server imported from {package}, not from the venv"
    return package / "_data" / "fixtures"


# --- the wheel -------------------------------------------------------------------------------------------------


def test_the_wheel_holds_mock_server_alone(built: Built) -> None:
    names = zipfile.ZipFile(built.wheel).namelist()
    strays = [name for name in names if not name.startswith(("mock_server/", DIST_INFO))]
    assert strays == []  # no top-level bench/ (nor tests/, scripts/) to clash with an installer's own
    for shipped in (
        "mock_server/__init__.py",
        "mock_server/py.typed",
        "mock_server/_data/openapi.yaml",
        "mock_server/_data/admin/openapi.yaml",
        "mock_server/_data/fixtures/default.yaml",
        "mock_server/admin/static/dashboard.js",
        f"{DIST_INFO}licenses/LICENSE",
        f"{DIST_INFO}entry_points.txt",
    ):
        assert shipped in names


def test_the_wheel_has_complete_metadata(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as wheel:
        metadata = email.parser.Parser().parsestr(wheel.read(f"{DIST_INFO}METADATA").decode())
        entry_points = wheel.read(f"{DIST_INFO}entry_points.txt").decode()
    assert metadata["Name"] == "pix-limits-mock-server"
    assert metadata["Version"] == VERSION
    assert metadata["License-Expression"] == "MIT"
    assert metadata["Requires-Python"] == ">=3.11"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert str(metadata.get_payload()).startswith("# PIX limits mock server")  # the README
    assert "contract testing" in metadata["Keywords"]
    classifiers = metadata.get_all("Classifier") or []
    for classifier in (
        "Framework :: Pytest",
        "Topic :: Software Development :: Testing :: Mocking",
        "Programming Language :: Python :: 3.11",
        "Typing :: Typed",  # mock_server/py.typed is in the wheel
    ):
        assert classifier in classifiers
    assert "mock-server = mock_server.cli:main" in entry_points
    assert "mock_server = mock_server.pytest_plugin" in entry_points


def test_the_sdist_keeps_the_benchmarks_and_tests(built: Built) -> None:
    """The source distribution is the repository's source: `python -m bench.run` works from it."""
    listing = run(["tar", "tzf", str(built.sdist)], REPOSITORY).stdout.splitlines()
    top = f"pix_limits_mock_server-{VERSION}/"
    for kept in ("bench/run.py", "tests/conftest.py", "fixtures/default.yaml", "openapi.yaml", "LICENSE"):
        assert top + kept in listing


# --- installed elsewhere ---------------------------------------------------------------------------------------


def test_version_and_check_work_installed_outside_the_repository(venv: Venv) -> None:
    version = venv.run(venv.bin("mock-server"), "--version")
    assert (version.returncode, version.stdout, version.stderr) == (0, f"mock-server {VERSION}\n", "")
    checked = venv.run(venv.bin("mock-server"), "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == SHIPPED_SCENARIOS.format(fixtures=shipped_fixtures(venv))  # the wheel's own scenarios
    no_bench = venv.run(venv.bin("python"), "-c", "import bench")
    assert "ModuleNotFoundError: No module named 'bench'" in no_bench.stderr


@pytest.fixture
def served(venv: Venv) -> Iterator[str]:
    proc = subprocess.Popen(
        [venv.bin("mock-server"), "--port", "0"],
        cwd=venv.elsewhere,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        match = READY.match(proc.stdout.readline())
        assert match, "no ready line"
        yield match["url"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def test_the_installed_server_serves_the_api_the_specs_and_the_pages(served: str) -> None:
    deadline = time.monotonic() + 10
    for path in (
        "/__mock/health",
        PENDING_EVENT_PATH,
        "/openapi.yaml",
        "/__mock/openapi.yaml",
        "/__mock/ui",
        "/__mock/docs",
        "/__mock/assets/dashboard.js",
        "/__mock/assets/swagger-ui-bundle.js",
    ):
        with urllib.request.urlopen(served + path, timeout=max(deadline - time.monotonic(), 1)) as response:
            assert response.status == 200, path


def test_a_git_url_of_the_repository_installs_too(venv: Venv) -> None:
    """`pip install "git+file://..."`: what the README shows for a clone on a Git host (its committed HEAD)."""
    installed = venv.run(
        venv.bin("python"),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--force-reinstall",
        "--no-deps",
        f"git+file://{REPOSITORY}",
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    version = venv.run(venv.bin("mock-server"), "--version")
    assert version.stdout == f"mock-server {VERSION}\n"
    checked = venv.run(venv.bin("mock-server"), "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == SHIPPED_SCENARIOS.format(fixtures=shipped_fixtures(venv))
