"""docs/reference.md is what scripts/gen_reference.py renders from the code now: a changed option, variable or
Settings field fails here until `make docs` (or `python scripts/gen_reference.py`) rewrites the page."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from scripts import gen_reference

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_the_committed_reference_is_a_fresh_rendering() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == gen_reference.render(), (
        "docs/reference.md is stale: run `python scripts/gen_reference.py` (or `make docs`) and commit it"
    )


def test_the_rendering_ignores_the_callers_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Defaults come from MOCK_SERVER_* variables when set: the page must not show the variables of whoever ran it."""
    monkeypatch.setenv("MOCK_SERVER_PORT", "9999")
    monkeypatch.setenv("MOCK_SERVER_SEED", "42")
    monkeypatch.setenv("COLUMNS", "40")
    assert gen_reference.render() == REFERENCE.read_text(encoding="utf-8")
    assert os.environ["MOCK_SERVER_PORT"] == "9999"  # and leaves them as they were


def test_every_serve_option_is_on_the_page_with_its_variable() -> None:
    """The page's table of `mock-server` options holds each flag the parser has, with the variable it reads."""
    parser = gen_reference.parser_of([])
    flags = [action for action in parser._actions if action.option_strings and action.dest not in ("help", "version")]
    assert len(flags) >= 20
    page = REFERENCE.read_text(encoding="utf-8")
    with gen_reference.parsers_kept():  # the plain parser once, not once per option
        variables = {action.dest: gen_reference.environment_variable([], action) for action in flags}
    for action in flags:
        variable = variables[action.dest]
        assert variable == f"MOCK_SERVER_{action.dest.upper()}", f"{action.option_strings[0]} reads {variable}"
        row = next(line for line in page.splitlines() if line.startswith(f"| `{action.option_strings[0]}` |"))
        assert f"`{variable}`" in row


def test_an_option_that_reads_no_variable_shows_none() -> None:
    """The variable column is found by setting the variable, not by a naming rule: `wait --timeout` reads none."""
    parser = gen_reference.parser_of(["wait"])
    timeout = next(action for action in parser._actions if "--timeout" in action.option_strings)
    assert gen_reference.environment_variable(["wait"], timeout) is None


def test_settings_fields_are_traced_to_the_options_that_set_them() -> None:
    found = gen_reference.settings_set_by([], gen_reference.parser_of([]))
    assert found["admin"] == ["--no-admin"]
    assert found["access_log"] == ["--log-level"]  # info and debug turn the access log on
    assert found["bounds.journal_bytes"] == ["--journal"]
    assert found["connection.idle_timeout"] == ["--idle-timeout"]


def test_the_parser_is_caught_before_it_parses() -> None:
    """Catching the parser never serves: `mock-server` with no arguments would start a server."""
    parser = gen_reference.parser_of([])
    assert isinstance(parser, argparse.ArgumentParser)
    assert parser.prog == "mock-server"
    assert gen_reference.parser_of(["healthcheck"]).prog == "mock-server healthcheck"
