"""docs/quickstart.md, replayed as a new user would: its Python files written into an empty directory, then every
`$` line of its ```text blocks run by bash there, in order, each printing the lines the page shows under it (in that
order; a duration may differ, and 8000 is a free port). The commands are this checkout's (`pytest`, `mock-server`
from its venv); a server a line starts in the background is stopped at the end."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

PAGE = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
DURATION = re.compile(r" in \d+(\.\d+)?s\b")
TIMEOUT = 180  # seconds a command may take, on a loaded machine


def files(page: str) -> dict[str, str]:
    """The page's ```python blocks, by the file name of their first line (`# test_pix.py`)."""
    found = {}
    for block in re.findall(r"```python\n(.*?)```", page, re.DOTALL):
        first, _, _ = block.partition("\n")
        assert first.startswith("# ") and first.endswith(".py"), first
        found[first[2:]] = block
    return found


def commands(page: str) -> list[tuple[str, list[str]]]:
    """Each `$` line of the page's ```text blocks, with the lines shown under it."""
    steps: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```text\n(.*?)```", page, re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return steps


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def shown_in(shown: list[str], printed: str) -> bool:
    """Whether the lines shown appear in what was printed, in order (durations aside)."""
    lines = iter(DURATION.sub(" in Ns", line) for line in printed.splitlines())
    return all(any(line == DURATION.sub(" in Ns", want) for line in lines) for want in shown)


def test_the_page_holds_an_install_three_tests_and_a_screen_each_for_n_tls_and_pact() -> None:
    page = PAGE.read_text(encoding="utf-8")
    written = files(page)
    assert sorted(written) == ["test_pix.py", "test_pix_tls.py"]
    assert len(re.findall(r"^def test_", written["test_pix.py"], re.MULTILINE)) == 3
    run = " ".join(command for command, _ in commands(page))
    for option in ("-n 2", "--mock-server-url", "--mock-server-tls mutual", "--mock-server-pact"):
        assert option in run


@pytest.mark.own_protocol  # the page's mutual-TLS test verifies the client certificate
def test_the_quickstart_runs_as_the_page_shows(tmp_path: Path) -> None:
    page = PAGE.read_text(encoding="utf-8")
    for name, text in files(page).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    port = str(free_port())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_SERVER_", "PYTEST_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    background: list[subprocess.Popen[bytes]] = []
    try:
        for command, shown in commands(page):
            command = command.replace("8000", port)
            shown = [line.replace("8000", port) for line in shown if line.strip()]
            if command.endswith("&"):
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", f"exec {command[:-1]}"], cwd=tmp_path, env=env, start_new_session=True
                    )
                )
                continue
            result = subprocess.run(
                ["bash", "-c", command],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=TIMEOUT,
            )
            assert result.returncode == 0, f"$ {command}\n{result.stdout}"
            assert shown_in(shown, result.stdout), (
                f"$ {command}\nshown:\n{chr(10).join(shown)}\nprinted:\n{result.stdout}"
            )
    finally:
        for process in background:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
