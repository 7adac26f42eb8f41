"""The install lines of the README and of Getting started (issue 23 item 3): each way in is shown, and a wheel's
file name is the one `make dist` writes for this version. tests/e2e/test_packaging.py runs them for real."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mock_server

REPOSITORY = Path(__file__).resolve().parents[2]
PAGES = [
    REPOSITORY / "README.md",
    REPOSITORY / "docs" / "getting-started.md",
    REPOSITORY / "docs" / "specs-and-tools.md",
]
WHEEL = f"pix_limits_mock_server-{mock_server.__version__}-py3-none-any.whl"


@pytest.mark.parametrize("page", PAGES[:2], ids=lambda p: p.name)
def test_every_way_in_is_shown(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for line in (
        "pip install .  ",
        "pip install '.[pytest]'",
        "pipx install .  ",
        "make dist\n",
        f"pip install dist/{WHEEL}\n",
        f"pipx install dist/{WHEEL}\n",
        "@ git+https://",
        "pip install 'git+file:///",
        "docker build -f Containerfile -t pix-limits-mock-server .",
        "python3 -m venv .venv && . .venv/bin/activate",
    ):
        assert line in text, line


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_wheel_named_is_this_versions(page: Path) -> None:
    named = set(re.findall(r"pix_limits_mock_server-[^\s'\[/]+\.whl", page.read_text(encoding="utf-8")))
    assert named <= {WHEEL}


def test_no_page_installs_from_an_index_the_package_is_not_on() -> None:
    """`pip install pix-limits-mock-server` fails for everyone: the package is on no public index (a requirement
    with `@ URL` is fine; the schemathesis hooks' ImportError, quoted as it reads, names the extra)."""
    for page in [*PAGES, *sorted((REPOSITORY / "docs").glob("*.md"))]:
        for line in page.read_text(encoding="utf-8").splitlines():
            if "ImportError" not in line:
                assert not re.search(r"pip install '?pix-limits-mock-server(\[\w+\])?'?(?!\s*@)(\s|$)", line), line
