"""docs/gate.md's examples reproduce: each ```text block after a `<!-- replayed: SETUP -->` line is run again, in
page order, in a directory holding the files the page names, and must print what the page shows.

The files: `openapi.yaml` (the shipped spec), `openapi-next.yaml` (it with NEXT_CHANGES: a request field renamed,
an account id's bound lowered, a status added), `journal.json` (a client's flow through the seven operations as
GET /__mock/requests exports it, seed 1), `pacts/pix-client-pix-limits.json` (the pact pact-python's consumer DSL
wrote: tests/gate/consumer_pact.py) and `pacts/pix-client-pix-limits-drifted.json` (it after the consumer drifted:
`drift`). SETUP `gate` runs the commands there; `one-defect`, `two-defects` and `three-defects` serve a provider
with those planted defects (tests/planted_defects.py) where the page says http://127.0.0.1:8001; the baseline
file a block writes stays for the next. The time a verification took, the instants and the ids the provider
makes up are not compared.

`python -m tests.gate.test_docs_page` prints every block as this machine runs it (to write the page)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp

from mock_server import cli
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.resources import data_path
from tests.gate.consumer_pact import CHECKED_IN
from tests.gate.mutations import CORPUS, shipped
from tests.pact_flow import run_flow
from tests.planted_defects import DEFECTS, mock_app, serve
from tests.provider import test_docs_examples as verify_provider_page
from tests.provider.test_docs_examples import Block, Command
from tests.whole_answer_client import WholeAnswerTestClient

PAGE = Path(__file__).resolve().parents[2] / "docs" / "gate.md"
MARKER = re.compile(r"^<!-- replayed: (?P<setup>gate|one-defect|two-defects|three-defects) -->$")
SHOWN_TARGET = "http://127.0.0.1:8001"
EXIT_ECHO = '; echo "exit status $?"'
PROMPT = "$ "
_SECONDS = re.compile(r", \d+\.\d s: ")
_INSTANT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d")
_MADE_UP_ID = re.compile(r'"(limit_update_request_id|recipient_id)": "[0-9a-f-]{36}"')
NEXT_CHANGES = ("request-field-renamed", "request-max-length-lowered", "status-added")
KNOWN = ("unknown-key-answers-another-event", "duplicate-account-wrong-code")
THIRD = "notification-never-awaited"
SETUPS = {"one-defect": KNOWN[:1], "two-defects": KNOWN, "three-defects": (*KNOWN, THIRD)}


def blocks(markdown: str) -> list[Block]:
    """The page's replayed blocks, read as docs/verify-provider.md's are."""
    return verify_provider_page.blocks(markdown, MARKER)


def masked(lines: list[str]) -> list[str]:
    """The lines without what differs from run to run: the seconds a run took, the instants the provider's clock
    and the mock's gave, the ids the provider made up."""
    return [_MADE_UP_ID.sub(r'"\1": "ID"', _INSTANT.sub("INSTANT", _SECONDS.sub(", N s: ", line))) for line in lines]


def write_files(directory: Path) -> None:
    shutil.copy(data_path("openapi.yaml"), directory / "openapi.yaml")
    next_version = shipped()
    for name in NEXT_CHANGES:
        next(m for m in CORPUS if m.name == name).change(next_version)
    (directory / "openapi-next.yaml").write_text(json.dumps(next_version, indent=2), encoding="utf-8")
    with WholeAnswerTestClient(create_app(Settings(seed=1))) as client:
        run_flow(client)
        journal = client.get("/__mock/requests").json()
    (directory / "journal.json").write_text(json.dumps(journal, indent=1), encoding="utf-8")
    pacts = directory / "pacts"
    pacts.mkdir()
    shutil.copy(CHECKED_IN["v4"], pacts / "pix-client-pix-limits.json")
    drifted = json.loads(CHECKED_IN["v4"].read_text(encoding="utf-8"))
    drift(drifted)
    (pacts / "pix-client-pix-limits-drifted.json").write_text(json.dumps(drifted, indent=1), encoding="utf-8")


def drift(pact: dict[str, Any]) -> None:
    """The consumer's pact after it drifted: it now expects a 200 to a registration and a state the mock lacks."""
    by_description = {i["description"]: i for i in pact["interactions"]}
    by_description["a registration of a new account"]["response"]["status"] = 200
    by_description["a raise of an account's withdraw limit"]["providerStates"][0]["name"] = "an account exists"


def provider(names: tuple[str, ...]) -> ASGIApp:
    by_name = {d.name: d for d in DEFECTS}
    app: ASGIApp = mock_app()
    for name in names:
        app = by_name[name].wrap(app)  # type: ignore[arg-type]
    return app


def run(command: str, target: str | None) -> list[str]:
    """The command's output lines as the page shows them (stdout then stderr, then the exit status line)."""
    text = command[: -len(EXIT_ECHO)] if command.endswith(EXIT_ECHO) else command
    argv = shlex.split(text)
    quiet = argv[-2:] == [">", "/dev/null"]  # stdout thrown away
    argv = argv[:-2] if quiet else argv
    assert argv[0] == "mock-server", command
    if target is not None:
        argv = [target if arg == SHOWN_TARGET else arg for arg in argv]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv[1:])
    lines = (err.getvalue() if quiet else out.getvalue() + err.getvalue()).splitlines()
    if target is not None:
        lines = [line.replace(target, SHOWN_TARGET) for line in lines]
    if command.endswith(EXIT_ECHO):
        lines.append(f"exit status {status}")
    return lines


@contextlib.contextmanager
def setting(setup: str) -> Iterator[str | None]:
    if setup == "gate":
        yield None
        return
    with serve(provider(SETUPS[setup])) as url:
        yield url


def replayed(directory: Path, page: list[Block]) -> Iterator[tuple[Command, list[str]]]:
    write_files(directory)
    with contextlib.chdir(directory):
        for block in page:
            with setting(block.setup) as target:
                for command in block.commands:
                    yield command, run(command.text, target)


def test_the_page_has_replayed_blocks_of_every_gate() -> None:
    page = blocks(PAGE.read_text(encoding="utf-8"))
    shown = " ".join(c.text for b in page for c in b.commands)
    for gate in ("gate pact", "gate spec", "--traffic", "--baseline", "--write-baseline"):
        assert gate in shown


@pytest.mark.e2e  # real providers (in threads) and the page's gate and verify-provider runs: a new feature's slow test
def test_every_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    page = blocks(PAGE.read_text(encoding="utf-8"))
    for command, lines in replayed(tmp_path, page):
        assert masked(lines) == masked(command.output), command.text


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        for command, lines in replayed(Path(work), blocks(PAGE.read_text(encoding="utf-8"))):
            print(f"{PROMPT}{command.text}")
            print("\n".join(lines))
            print()
