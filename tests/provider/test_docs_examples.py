"""docs/verify-provider.md's examples reproduce: each ```text block after a `<!-- replayed: SETUP -->` line is run
again, in page order, and must print what the page shows (`scripts/verify_provider_examples.py` made the outputs
by running the commands against real servers).

SETUP `make-run` is a fresh `make run` (the mock with `--seed 1` on 127.0.0.1:8000) shared by the page's
make-run blocks; `shadow` is a mock with `--seed 1 --clock CLOCK --shadow http://127.0.0.1:8001` in front of a
mock on the payments scenario with the same clock (127.0.0.1:8001), new for each such block. A line is
`mock-server verify-provider ...` or `curl ...`, optionally followed by `; echo "exit status $?"`. The time a run
took is the one figure not compared.

Used by scripts/verify_provider_examples.py: `PAGE`, `blocks()`, `Block`, `masked()`, `SHOWN_*`, `CLOCK`.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from mock_server import cli
from mock_server.app import create_app
from mock_server.settings import Settings
from tests.planted_defects import mock_app, serve

PAGE = Path(__file__).resolve().parents[2] / "docs" / "verify-provider.md"
MARKER = re.compile(r"^<!-- replayed: (?P<setup>make-run|shadow) -->$")
SHOWN_TARGET = "http://127.0.0.1:8000"  # where the page's commands go
SHOWN_BACKEND = "http://127.0.0.1:8001"  # the shadow backend, as the page shows it
CLOCK = "2026-11-21T10:00:00-03:00"
EXIT_ECHO = '; echo "exit status $?"'
PROMPT = "$ "
_SECONDS = re.compile(r", \d+\.\d s: ")


@dataclass
class Command:
    line: int
    text: str
    output: list[str] = field(default_factory=list)


@dataclass
class Block:
    setup: str
    commands: list[Command] = field(default_factory=list)


def blocks(markdown: str, marker_line: re.Pattern[str] = MARKER) -> list[Block]:
    """The replayed blocks of the page, in order, with the lines shown under each command; a block follows a line
    `marker_line` matches, whose `setup` group names the block's setup (docs/gate.md's test passes its own)."""
    found: list[Block] = []
    setup: str | None = None
    current: Block | None = None
    for number, line in enumerate(markdown.splitlines(), start=1):
        marker = marker_line.match(line)
        if marker:
            setup = marker["setup"]
        elif setup is not None and current is None:
            assert line == "```text", f"line {number}: a replayed marker must be followed by a ```text block"
            current = Block(setup)
        elif current is not None:
            if line.startswith("```"):
                found.append(current)
                setup = current = None
            elif line.startswith(PROMPT):
                current.commands.append(Command(number, line[len(PROMPT) :]))
            else:
                assert current.commands, f"line {number}: output before any command"
                current.commands[-1].output.append(line)
    return found


def masked(lines: list[str]) -> list[str]:
    """The lines with the time a run took left out."""
    return [_SECONDS.sub(", N s: ", line) for line in lines]


def _curl(words: list[str], base: str) -> list[str]:
    method, url, headers, data, discard = "GET", "", {}, None, False
    rest = iter(words[1:])
    for word in rest:
        if word == "-s":
            continue
        if word == "-o":
            discard = next(rest) == "/dev/null"
        elif word == "-X":
            method = next(rest)
        elif word == "-H":
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word == "-d":
            data = next(rest)
            method = "POST" if method == "GET" else method
        else:
            url = word.replace(SHOWN_TARGET, base)
    response = httpx.request(method, url, headers=headers, content=data, timeout=30)
    return [] if discard or not response.text else response.text.split("\n")


def run(command: str, base: str, backend: str | None) -> list[str]:
    """What the command prints, as the page shows it (the real URLs written as the page's)."""
    text, echo = (command[: -len(EXIT_ECHO)], True) if command.endswith(EXIT_ECHO) else (command, False)
    words = shlex.split(text)
    if words[0] == "curl":
        printed = _curl(words, base)
        status = 0
    else:
        assert words[:2] == ["mock-server", "verify-provider"], f"not replayed: {command}"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = cli.main([word.replace(SHOWN_TARGET, base) for word in words[1:]])
        printed = out.getvalue().rstrip("\n").split("\n")
    if echo:
        printed.append(f"exit status {status}")
    shown = "\n".join(printed).replace(base, SHOWN_TARGET)
    if backend is not None:
        shown = shown.replace(backend, SHOWN_BACKEND)
    return shown.split("\n") if shown else []


@contextlib.contextmanager
def make_run() -> Iterator[tuple[str, None]]:
    with serve(mock_app(seed=1)) as url:
        yield url, None


@contextlib.contextmanager
def shadow() -> Iterator[tuple[str, str]]:
    clock = datetime.fromisoformat(CLOCK)
    with serve(mock_app(scenario="payments", clock=clock)) as backend:
        front = create_app(Settings(seed=1, clock=clock, shadow=backend))
        with serve(front) as url:
            yield url, backend


def test_the_page_has_its_replayed_examples() -> None:
    found = blocks(PAGE.read_text(encoding="utf-8"))
    assert [b.setup for b in found] == ["make-run", "make-run", "shadow"]
    assert all(command.output or command.text.startswith("curl -s -o") for b in found for command in b.commands)
    assert "(output)" not in PAGE.read_text(encoding="utf-8"), "run scripts/verify_provider_examples.py"


def test_the_examples_reproduce(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where --report writes
    found = blocks(PAGE.read_text(encoding="utf-8"))
    report: list[str] = []
    with make_run() as (base, _):
        for block in (b for b in found if b.setup == "make-run"):
            for command in block.commands:
                printed = run(command.text, base, None)
                if masked(printed) != masked(command.output):
                    report += [f"line {command.line}: $ {command.text}", *printed]
    for block in (b for b in found if b.setup == "shadow"):
        with shadow() as (base, backend):
            for command in block.commands:
                printed = run(command.text, base, backend)
                if printed != command.output:
                    report += [f"line {command.line}: $ {command.text}", *printed]
    assert not report, "scripts/verify_provider_examples.py remakes the outputs; printed now:\n" + "\n".join(report)
    assert (tmp_path / "verify-provider.xml").exists()
