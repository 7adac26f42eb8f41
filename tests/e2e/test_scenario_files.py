"""Hostile scenario files through the real command line (issue 16 item 2): `mock-server check` and `serve` exit 2
with `FILE:LINE:COLUMN: PATH: message` lines, never a signal (139), a traceback (exit 1) or a pass."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[2]
PROBLEM = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+): (?P<path>\S+): (?P<message>.+)$")
GOOD = "description: good\nevents: []\naccounts: []\n"
BOMB = "\n".join(
    ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["description: *a8", ""]
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_SERVER_")}
    return subprocess.run(
        [sys.executable, "-m", "mock_server", *args],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def both(directory: Path) -> list[tuple[str, list[re.Match[str]]]]:
    """What `check` and a start-up say about `directory`: each exits 2, every line a located problem."""
    outputs: list[tuple[str, list[re.Match[str]]]] = []
    for args, stream in ((("check",), "stdout"), (("--port", "0"), "stderr")):
        result = run(*args, "--fixtures", str(directory))
        text = getattr(result, stream)
        assert result.returncode == 2, (args, result.returncode, result.stderr[-2000:])
        assert "Traceback" not in result.stdout + result.stderr
        lines = [line for line in text.splitlines() if line.strip()]
        matches = [PROBLEM.match(line) for line in lines]
        assert lines and all(matches), lines
        outputs.append((" ".join(args), [m for m in matches if m is not None]))
    return outputs


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("description: " + "[" * 30_000 + "]" * 30_000 + "\n", "nested deeper than", id="deep-yaml"),
        pytest.param('{"description": ' + "[" * 30_000 + "]" * 30_000 + "}", "nested deeper than", id="deep-json"),
        pytest.param(BOMB, "aliases repeat more than", id="alias-bomb"),
        pytest.param("description: d\nevents: !!binary aGVsbG8=\n", "the tag !!binary is not allowed", id="binary"),
        pytest.param("description: d\nevents: !!set {a, b}\n", "the tag !!set is not allowed", id="set"),
        pytest.param("description: d\ndescription: e\n", "key 'description' appears twice", id="duplicate-key"),
        pytest.param('{"description": "\\ud800"}', "lone UTF-16 surrogate", id="surrogate"),
    ],
)
def test_a_hostile_file_is_a_located_problem_with_exit_2(tmp_path: Path, text: str, message: str) -> None:
    """Before: exit 139 with nothing printed (deep), past 60 s and 4.8 GB (bomb), a traceback and exit 1 (tags),
    exit 0 (a key twice: the last won; a surrogate: later 500s)."""
    (tmp_path / "default.yaml").write_text(text, encoding="utf-8")
    for _, problems in both(tmp_path):
        assert any(message in p["message"] for p in problems), [p.group() for p in problems]
        assert all(p["file"] == str(tmp_path / "default.yaml") for p in problems)


def test_directory_problems_are_located_and_printable(tmp_path: Path) -> None:
    (tmp_path / "default.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "twice.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "twice.yml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "folder.yaml").mkdir()
    Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.yaml")).write_text(GOOD, encoding="utf-8")
    for _, problems in both(tmp_path):
        by_file = {Path(p["file"]).name: p["message"] for p in problems}
        assert by_file == {
            "caf\\xe9.yaml": "the file name is not UTF-8: the scenario could not be named",
            "folder.yaml": "is not a regular file",
            "twice.yaml": "scenario twice is also defined by twice.yml",
            "twice.yml": "scenario twice is also defined by twice.yaml",
        }
