"""mock_server.scenarios.yaml_blocks and the lean YAML path of scenarios.stream: a block-style YAML scenario read a
batch of events at a time gives exactly what the full path gives; any text the cut could get wrong gets the full path's
verdict (the same scenario, or the same problems at the same places)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mock_server.scenarios import stream as scenario_stream
from mock_server.scenarios import yaml_blocks
from mock_server.scenarios.loader import ScenarioError
from mock_server.scenarios.stream import read_lean
from mock_server.scenarios.text import _REFERENCE_ONLY, needs_reference
from mock_server.scenarios.yaml_blocks import NotBlockLayout, split_events
from tests.scenarios.generated import generated
from tests.scenarios.test_stream import DEFAULT, LOADER, _plain, exact, full_path, write

BLOCK_DEFAULT = yaml.safe_dump(_plain(DEFAULT), sort_keys=False, default_flow_style=False)


def outcome(load: Any, path: Path) -> Any:
    try:
        return exact(load(path))
    except ScenarioError as exc:
        return [str(p) for p in exc.problems]


def lean(path: Path) -> Any:
    assert LOADER.event_check is not None
    return read_lean(path, LOADER.event_check)


# --- the cut itself -------------------------------------------------------------------------


def cut(text: str, batch_chars: int = 1) -> tuple[list[str], str]:
    batches: list[str] = []
    rest = split_events(io.StringIO(text), batches.append, batch_chars)
    return batches, rest


def test_items_are_cut_in_batches_at_their_dashes_and_the_rest_keeps_the_key() -> None:
    """A batch ends before the first dash after `batch_chars` characters (15: after `- a: 3`)."""
    text = "description: d\nevents:\n- a: 1\n  b: 2\n- a: 3\n- a: 4\naccounts: []\n"
    batches, rest = cut(text, batch_chars=15)
    assert batches == ["- a: 1\n  b: 2\n- a: 3\n", "- a: 4\n"]
    assert rest == "description: d\nevents:\naccounts: []\n"


def test_an_indented_sequence_ends_at_the_first_line_less_indented() -> None:
    text = "events:\n  - a: 1\n\n    b: 2\n  - a: 3\nx: 1\n"
    batches, rest = cut(text, batch_chars=1000)
    assert batches == ["  - a: 1\n\n    b: 2\n  - a: 3\n"]
    assert rest == "events:\nx: 1\n"


@pytest.mark.parametrize(
    ("text", "rest"),
    [
        ("events:\n- a: 1\n-x\n", "events:\n-x\n"),  # a dash that is not an item's ends the block
        ("events:\n  - a: 1\n  b: 2\n", "events:\n  b: 2\n"),  # a key at the dashes' indentation too
        ("events:\n  - a: 1\n  -x\n", "events:\n  -x\n"),
    ],
)
def test_a_line_at_the_dashes_indentation_that_is_no_dash_goes_to_the_rest(text: str, rest: str) -> None:
    assert cut(text)[1] == rest


def test_the_cut_does_not_depend_on_where_the_reads_end(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "events:\n" + "".join(f"  - a: {i}\n    b: [1, 2]\n" for i in range(50)) + "after: 1\n"
    whole = cut(text, batch_chars=70)
    for block in (1, 2, 3, 5, 11, 64):
        monkeypatch.setattr(yaml_blocks, "BLOCK", block)
        assert cut(text, batch_chars=70) == whole
    assert "".join(whole[0]) + "after: 1\n" == text[len("events:\n") :]


@pytest.mark.parametrize(
    "text", ["events:\n  a: 1\n", "events:\n", "events:\n- a\nevents:\n- b\n", "events:\n\n  {a: 1}\n"]
)
def test_events_not_a_block_sequence_or_twice_is_not_this_layout(text: str) -> None:
    with pytest.raises(NotBlockLayout):
        cut(text)


# --- the lean path against the full path ------------------------------------------------------


def test_the_default_scenario_in_block_yaml_loads_lean_and_exactly(tmp_path: Path) -> None:
    path = write(tmp_path, BLOCK_DEFAULT)
    assert lean(path) is not None
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


@pytest.mark.parametrize("batch_chars", [1, 2, 1000])
@pytest.mark.parametrize("indent", [0, 4])
def test_a_generated_yaml_scenario_loads_lean_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_chars: int, indent: int
) -> None:
    path = generated(tmp_path, 300)
    if indent:  # the same events, their sequence indented under `events:`
        head, _, events = path.read_text(encoding="utf-8").partition("events:\n")
        body, _, tail = events.partition("\naccounts:")
        shifted = "".join(" " * indent + line if line else line for line in body.splitlines(keepends=True))
        path.write_text(f"{head}events:\n{shifted}\naccounts:{tail}" if tail else f"{head}events:\n{shifted}")
    monkeypatch.setattr(scenario_stream, "BATCH_CHARS", batch_chars)
    found = lean(path)
    assert found is not None
    assert len(found[1]) == 300
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


EVENT_YAML = BLOCK_DEFAULT.split("events:\n", 1)[1].split("\n- ", 1)[0] + "\n"
HEAD = "description: d\nevents:\n"
GIVE_UP = {
    "a quoted text over lines, with a line like a dash": HEAD
    + EVENT_YAML.replace("  security_key:", '  note: "one\n- two"\n  security_key:', 1),
    "a dash at column 0 that is no item": HEAD + EVENT_YAML + "-x\n",
    "a key at the dashes' indentation": HEAD + EVENT_YAML + "status: paid\n",
    "events twice": HEAD + EVENT_YAML + "events:\n" + EVENT_YAML,
    "events: then a mapping": "events:\n  a: 1\n",
    "events as a flow sequence": "events: [1, 2]\n",
    "events: with nothing": "description: d\nevents:\n",
    "a comment": HEAD + EVENT_YAML + "# the end\n",
    "a document marker after the events": HEAD + EVENT_YAML + "---\n",
    "an anchor and an alias": HEAD + EVENT_YAML.replace("- ", "- &e ", 1) + "- *e\n",
    "a key twice in an event": HEAD + EVENT_YAML + "  paid_at: null\n",
    "an event the schema refuses": HEAD + EVENT_YAML + "  status: payed\n",
    "an unknown top-level key": HEAD + EVENT_YAML + "extra: 1\n",
    "yes, which YAML 1.1 reads as true": HEAD + EVENT_YAML.replace("early_amortization", "yes", 1),
    "a number with a leading zero": HEAD + EVENT_YAML.replace("total_expected_amount: ", "total_expected_amount: 0", 1),
    "one event key twice": HEAD + EVENT_YAML + EVENT_YAML,
    "a flow mapping cut over lines": HEAD + EVENT_YAML.replace("- ", "- {\n- a: 1}\n- ", 1),
}


@pytest.mark.parametrize("batch_chars", [1, 1000])
@pytest.mark.parametrize("case", GIVE_UP)
def test_anything_the_cut_could_get_wrong_gets_the_full_paths_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str, batch_chars: int
) -> None:
    monkeypatch.setattr(scenario_stream, "BATCH_CHARS", batch_chars)
    path = write(tmp_path, GIVE_UP[case])
    found = lean(path)
    assert found is None or LOADER.problems(found[0]), "the lean path would have taken it"
    assert outcome(LOADER.load_file, path) == outcome(full_path, path)


SCREENED = st.text(alphabet=st.sampled_from(list("ab-+.:<\n {[,!#é\u2028\u0100")), max_size=40)


# The default tier draws 150 texts; the exhaustive tier the full count, 500.
@settings(max_examples=150, deadline=None)
@given(SCREENED)
def test_the_one_pass_screen_never_misses_a_mark_the_reference_reader_takes(text: str) -> None:
    if any(mark in text for mark in _REFERENCE_ONLY):
        assert needs_reference(text, text.encode("utf-8"))


@pytest.mark.exhaustive
@settings(max_examples=500, deadline=None)
@given(SCREENED)
def test_the_one_pass_screen_never_misses_a_mark_full_count(text: str) -> None:
    if any(mark in text for mark in _REFERENCE_ONLY):
        assert needs_reference(text, text.encode("utf-8"))


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("a: 1.5\nb: [1, 2]\nc: {d: e}\n- x: -1\n", False),  # what scenarios are made of
        ("a: ção\n", False),  # multi-byte UTF-8 makes no pair
        ("a: x .y\n", True),  # a space before a dot: not a mark, sent to libyaml all the same (only slower)
        ("a: <b\n", False),
        ("a: <<\n", True),
        ("a: -.5\n", True),
        ("a:\n: b\n", True),
    ],
)
def test_the_screen_lets_plain_text_through(text: str, sent: bool) -> None:
    assert needs_reference(text, text.encode("utf-8")) is sent
