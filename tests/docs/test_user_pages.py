"""What a user reads speaks to a user (issue 33): no reference to the team's contract by section ("CONTRACT 2",
"CONTRACT.md section 5", "CONTRACT 1's layout") in the pages, the README, the specs' descriptions (Swagger UI shows
them) or the command line's help. The reason a rule exists is said in words where the user reads it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mock_server import cli
from tests.helpers import read_yaml

ROOT = Path(__file__).resolve().parents[2]
# "CONTRACT 2", "CONTRACT.md 5", "CONTRACT section 4", "CONTRACT §4", "CONTRACT.md, section 6": the team's sections
SECTION_REFERENCE = re.compile(r"CONTRACT(?:\.md)?[\s,]*(?:sections?\s*|§\s*)?\d", re.IGNORECASE)
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "examples").rglob("*.md")],
    key=lambda path: str(path),
)
SPECS = (ROOT / "openapi.yaml", ROOT / "admin" / "openapi.yaml")
HELPS = [[], ["check"], ["healthcheck"], ["wait"], ["pact"], ["verify-provider"], ["pki"], ["pki", "init"]]


def references(text: str) -> list[str]:
    return [match.group(0) for match in SECTION_REFERENCE.finditer(text)]


def test_the_rule_finds_what_it_is_for() -> None:
    found = references("1 to 64 (CONTRACT 2); CONTRACT 1's layout; CONTRACT.md section 5; contract §4; CONTRACT.md, 6")
    assert len(found) == 5
    assert references("the contract's 413; the interface's section 2.1; CONTRACT.md says") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_page_refers_to_a_contract_section(page: Path) -> None:
    assert references(page.read_text(encoding="utf-8")) == []


def _shown(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """Every text of a spec a reader sees: descriptions, summaries, titles (and everything else that is a string
    under them), with where it is."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _shown(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _shown(value, f"{where}/{index}")
    elif isinstance(node, str):
        yield where, node


@pytest.mark.parametrize("spec", SPECS, ids=lambda path: str(path.relative_to(ROOT)))
def test_no_spec_text_refers_to_a_contract_section(spec: Path) -> None:
    document = read_yaml(spec.read_text(encoding="utf-8"))
    found = [(where, hit) for where, text in _shown(document) for hit in references(text)]
    assert found == []


@pytest.mark.parametrize("command", HELPS, ids=lambda argv: " ".join(["mock-server", *argv, "--help"]))
def test_no_help_refers_to_a_contract_section(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        cli.main([*command, "--help"])
    assert ended.value.code == 0
    shown = capsys.readouterr().out
    assert "usage:" in shown
    assert references(shown) == []
