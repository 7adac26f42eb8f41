"""The Testcontainers examples of docs/containers-and-scaling.md, run as written: their conftest.py and test file in a
project of their own, by a pytest of their own (a child process), against the image `make image` built.

One container per run and a session per test, serially; then the xdist pattern with `-n 2`, where the controller
starts the one container every worker's tests use.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.containers

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "containers-and-scaling.md"
SECTION = "## Testcontainers: `PixMockContainer`"
# Extra tests beside the page's own: each pays the event in a session of its own, which must start with it pending
# (no test sees another's payment), and notes the server's address, which must be one for the whole run.
MORE_TESTS = """
from pathlib import Path

import pytest

EVENT = "cd613e30-d8f1-4adf-91b7-584a2265b1f5"


@pytest.mark.parametrize("n", range(8))
def test_each_session_starts_afresh(pix, n):
    assert pix.client.get(f"/event_conciliation/extraordinary_event/{EVENT}").json()["status"] == "pending_conciliation"
    pix.pay(EVENT)
    (Path(__file__).parent / f"url-{n}").write_text(pix.client.base_url.netloc.decode())


def test_a_generated_id_is_the_same_every_run(pix):
    account = {
        "account_id": "0001-000001",
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 500000}]}},
    }
    assert pix.client.post("/limits/account", json=account).status_code == 201
    change = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}}
    proposal = pix.client.post("/limits/account/0001-000001/limit_update_request", json=change)
    assert proposal.status_code == 201
    with (Path(__file__).parent / "first-ids").open("a") as ids:
        ids.write(proposal.json()["limit_update_request_id"] + "\\n")
"""


def python_blocks() -> dict[str, list[str]]:
    """The section's python blocks, by the file each names on its first line (`# conftest.py`)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", 1)]
    blocks: dict[str, list[str]] = {}
    for block in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        name = block.splitlines()[0].removeprefix("# ").strip()
        blocks.setdefault(name, []).append(block)
    return blocks


def run_pytest(project: Path, docker_api: str, *options: str) -> subprocess.CompletedProcess[str]:
    environment = {
        **os.environ,
        "DOCKER_HOST": docker_api,
        "TESTCONTAINERS_RYUK_DISABLED": "true",
        "TESTCONTAINERS_CONNECTION_MODE": "docker_host",
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--basetemp", str(project / "tmp"), *options],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def project(tmp_path: Path, conftest: str) -> Path:
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_events.py").write_text(python_blocks()["test_events.py"][0])
    (tmp_path / "test_more.py").write_text(MORE_TESTS)
    return tmp_path


def test_the_page_has_both_patterns() -> None:
    blocks = python_blocks()
    assert len(blocks["conftest.py"]) == 2 and len(blocks["test_events.py"]) == 1


def same_ids_twice(directory: Path, docker_api: str, *options: str) -> None:
    """Two runs of the project, each with a container of its own: the page promises deterministic ids (issue 43:
    its fixtures named sessions at random, and the ids differed run to run)."""
    for _ in range(2):
        done = run_pytest(directory, docker_api, *options)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "10 passed" in done.stdout
    first, second = (directory / "first-ids").read_text().splitlines()
    assert first == second


def test_one_container_per_run_and_a_session_per_test(image: str, docker_api: str, tmp_path: Path) -> None:
    same_ids_twice(project(tmp_path, python_blocks()["conftest.py"][0]), docker_api)


def test_under_xdist_the_controller_starts_the_one_container(image: str, docker_api: str, tmp_path: Path) -> None:
    directory = project(tmp_path, python_blocks()["conftest.py"][1])
    same_ids_twice(directory, docker_api, "-n", "2")
    addresses = {path.read_text() for path in directory.glob("url-*")}
    assert len(addresses) == 1, addresses  # both workers' tests on one server
