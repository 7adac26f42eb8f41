"""docs/pact.md's worked example reproduces: its export and verify steps, run as shown on servers of their own,
print what the page shows (the verifier's timings aside). The page's `curl` lines are replayed by
tests/api/test_readme.py like every page's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pact", reason="the [pact] extra (pact-python) is not installed")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "pact_example.py"


def pact_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pact_example", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_pages_export_and_verification_print_what_it_shows(monkeypatch) -> None:
    monkeypatch.setenv("PACT_DO_NOT_TRACK", "true")
    example = pact_example()
    markdown = example.PAGE.read_text(encoding="utf-8")
    printed = example.outputs(markdown)
    for name in example.STEPS:
        _, start, end = example.step(markdown, name)
        shown = "\n".join(markdown.split("\n")[start:end])
        assert example.same_but_timings(shown, printed[name]), (
            f"{name}: the page shows\n{shown}\nit prints\n{printed[name]}"
        )
    assert "4 interactions between ci-consumer and pix-limits (Pact 4.0)" in printed["export"]
    assert printed["verify"].count("has status code") == 4 and "FAILED" not in printed["verify"]


def test_the_timings_are_all_that_may_differ() -> None:
    example = pact_example()
    shown = "  a lookup, answered 200 (1ms loading, 20ms verification)\n      has status code 200 (OK)"
    assert example.same_but_timings(shown, shown.replace("20ms", "7ms").replace("1ms", "0s"))
    assert not example.same_but_timings(shown, shown.replace("200 (OK)", "404 (FAILED)"))
