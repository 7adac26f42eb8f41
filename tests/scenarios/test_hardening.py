"""Hostile and odd scenario files (issue 16 item 2) and every problem of every item (issue 12 item 6): each is a
located problem `FILE:LINE:COLUMN: PATH: message`, never a traceback, never a signal, never a silent choice."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mock_server.scenarios import loader as scenarios
from mock_server.scenarios import text as scenario_text
from mock_server.scenarios.loader import Problem, ScenarioError, ScenarioLoader
from mock_server.scenarios.text import MAX_DEPTH, MAX_REPEATED_NODES
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT_BODY

GOOD = """\
description: good
accounts:
  - account_id: "0001"
    registration_date: "2026-01-10T09:00:00-03:00"
    limit: {pix: {withdraw: [{start_time: "06:00:00-03:00", amount: 1}]}}
"""
# The default scenario's pending event as a scenario file writes it at the least: defaults left out, one instalment.
EVENT = {
    **{
        k: v for k, v in PENDING_EVENT_BODY.items() if k not in ("total_discount_amount", "total_paid_amount", "status")
    },
    "event_conciliation_list": [
        {k: PENDING_EVENT_BODY["event_conciliation_list"][0][k] for k in ("event_conciliation_key", "installment_key")}
    ],
}


@pytest.fixture(scope="module")
def loader(specs: Specs) -> ScenarioLoader:
    return ScenarioLoader.from_specs(specs)


def problems_of(loader: ScenarioLoader, text: str) -> list[Problem]:
    with pytest.raises(ScenarioError) as raised:
        loader.load_text("s", text, "s.yaml")
    return raised.value.problems


def only(loader: ScenarioLoader, text: str) -> Problem:
    problems = problems_of(loader, text)
    assert len(problems) == 1, problems
    return problems[0]


# --- bounded depth ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "place"),
    [
        # the root mapping is level 1: the first level past the bound opens MAX_DEPTH - 1 characters later
        pytest.param("description: " + "[" * 30_000 + "]" * 30_000 + "\n", (1, 13 + MAX_DEPTH), id="yaml-flow"),
        pytest.param('{"description": ' + "[" * 30_000 + "]" * 30_000 + "}", (1, 16 + MAX_DEPTH), id="json-syntax"),
        pytest.param(
            "description:\n" + "".join(" " * i + "-\n" for i in range(1, 400)),
            (MAX_DEPTH + 1, MAX_DEPTH + 1),
            id="yaml-block",
        ),
        pytest.param(
            "description: é€😀\nx: " + "{a: " * 30_000 + "1" + "}" * 30_000 + "\n",
            (2, 4 + 4 * (MAX_DEPTH - 1)),
            id="yaml-flow-mapping",
        ),
    ],
)
def test_nesting_past_the_bound_is_one_located_problem(loader: ScenarioLoader, text: str, place) -> None:
    """~30,000 levels segfaulted serve and check (libyaml's composer recurses in C). Since PyYAML 6.0.4 libyaml's
    scanner refuses nesting past 1000 levels before the screen sees level 100: our bound and place all the same."""
    problem = only(loader, text)
    assert problem.message == f"nested deeper than {MAX_DEPTH} levels"
    assert problem.path == ""
    assert (problem.line, problem.column) == place


def test_a_yaml_library_bound_met_before_ours_reads_as_ours(loader: ScenarioLoader, monkeypatch) -> None:
    """Were our bound above libyaml's (1000 since PyYAML 6.0.4), libyaml's refusal is still one located problem
    in our words, never "not a safe YAML document"; with older PyYAML, which has no bound, ours meets it."""
    monkeypatch.setattr(scenario_text, "MAX_DEPTH", 5_000)
    problem = only(loader, "description: " + "[" * 30_000 + "]" * 30_000 + "\n")
    assert problem.message == "nested deeper than 5000 levels"
    assert problem.line == 1 and problem.column > 13 + 900


def test_nesting_within_the_bound_reaches_the_schema(loader: ScenarioLoader) -> None:
    depth = MAX_DEPTH - 2  # the root mapping is a level, the list itself another
    problem = only(loader, "description: " + "[" * depth + "]" * depth + "\n")
    assert (problem.path, problem.message) == ("description", "must be a string")


# --- bounded alias expansion -----------------------------------------------------------------------------

BOMB = "\n".join(
    ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    + ["description: *a8", ""]
)


def test_an_alias_bomb_is_stopped_at_the_alias_that_crosses_the_bound(loader: ScenarioLoader) -> None:
    """A 450-byte file ran past 60 s and 4.8 GB."""
    assert len(BOMB.encode()) < 600

    problem = only(loader, BOMB)

    assert problem.message == f"aliases repeat more than {MAX_REPEATED_NODES:,} nodes (an alias bomb?)"
    line_of_first_alias_past = next(i for i, line in enumerate(BOMB.splitlines(), 1) if line.startswith("a6:"))
    assert problem.line == line_of_first_alias_past


def test_aliases_within_the_bound_still_share_a_value(loader: ScenarioLoader) -> None:
    text = """\
description: shared limits
accounts:
  - account_id: a
    registration_date: "2026-01-10T09:00:00Z"
    limit: &limit {pix: {change: [{start_time: "06:00:00Z", amount: 5}]}}
  - account_id: b
    registration_date: "2026-01-10T09:00:00Z"
    limit: *limit
"""
    scenario = loader.load_text("s", text, "s.yaml")
    assert sorted(scenario.accounts) == ["a", "b"]


# --- tags: JSON's values only ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("!!binary aGVsbG8=", "!!binary"),
        ("!!set {a, b}", "!!set"),
        ("!!omap [{a: 1}]", "!!omap"),
        ("!!pairs [{a: 1}]", "!!pairs"),
        ("!!python/tuple [1, 2]", "!!python/tuple"),
    ],
)
def test_a_tag_json_cannot_hold_is_a_located_problem(loader: ScenarioLoader, value: str, shown: str) -> None:
    """!!binary and !!set gave a traceback and exit 1."""
    problem = only(loader, f"description: d\nevents: {value}\n")
    assert (problem.line, problem.column) == (2, 9)
    assert problem.message.startswith(f"not a safe YAML document: the tag {shown} is not allowed")


def test_json_s_own_tags_are_still_read(loader: ScenarioLoader) -> None:
    scenario = loader.load_text("s", "description: !!str 12\nevents: !!seq []\naccounts: []\n", "s.yaml")
    assert scenario.description == "12"


# --- duplicate keys -----------------------------------------------------------------------------------------


def test_a_key_twice_in_a_yaml_mapping_is_located_at_the_second(loader: ScenarioLoader) -> None:
    """It passed silently, the last one winning."""
    text = GOOD.replace('  - account_id: "0001"\n', '  - account_id: "0001"\n    account_id: "0002"\n')
    problem = only(loader, text)
    assert (problem.line, problem.column) == (4, 5)
    assert (problem.path, problem.message) == (
        "accounts[0].account_id",
        "key 'account_id' appears twice in this mapping",
    )


def test_a_key_twice_in_json_syntax_is_located_too(loader: ScenarioLoader) -> None:
    text = '{"description": "x",\n "accounts": [],\n "description": "y"}'
    problem = only(loader, text)
    assert (problem.line, problem.column, problem.path) == (3, 2, "description")


def test_a_merge_key_is_not_a_duplicate(loader: ScenarioLoader) -> None:
    text = GOOD.replace("    limit: {pix", "    <<: {account_id: x}\n    limit: {pix")
    assert "0001" in loader.load_text("s", text, "s.yaml").accounts


# --- lone surrogates --------------------------------------------------------------------------------------


def test_a_lone_surrogate_in_json_syntax_is_a_located_problem(loader: ScenarioLoader) -> None:
    """It passed check, then scenarios, state and health answered text/plain 500s."""
    text = '{"description": "ok",\n "events": [], "accounts": [{"account_id": "\\udc80"}]}'
    problems = problems_of(loader, text)
    surrogate = [(p.path, p.line, p.column) for p in problems if "surrogate" in p.message]
    assert surrogate == [("accounts[0].account_id", 2, text.splitlines()[1].index('"\\udc80"') + 1)]
    assert {p.path for p in problems} >= {"accounts[0].registration_date", "accounts[0].limit"}  # the rest judged too
    assert all(str(p).encode("utf-8") for p in problems)


def test_a_surrogate_escape_in_yaml_is_refused_by_libyaml_at_its_place(loader: ScenarioLoader) -> None:
    problem = only(loader, 'description: ok\naccounts:\n  - account_id: "\\udc80"\n')
    assert (problem.line, problem.message) == (
        3,
        "invalid YAML: a '\\u' escape that names no character (a lone UTF-16 surrogate such as \\ud800 is none)",
    )


# --- every problem of every item, in one run (issue 12 item 6) ----------------------------------------------


def test_an_event_with_a_schema_problem_still_has_its_consistency_checked(loader: ScenarioLoader) -> None:
    """check and start-up dropped the consistency problems of an item that also had a schema problem."""
    event = {**EVENT, "security_key": 12, "total_paid_amount": 2000}
    found = {(p.path, p.message) for p in problems_of(loader, json.dumps({"events": [event]}))}
    assert found == {
        ("events[0].security_key", "must be a string (got 12)"),
        ("events[0].total_paid_amount", "2000 is more than total_expected_amount - total_discount_amount (1500)"),
    }


def test_a_malformed_status_is_reported_once_not_judged_against(loader: ScenarioLoader) -> None:
    event = {**EVENT, "status": "payed", "paid_at": "2026-11-02", "total_discount_amount": 1}
    found = {(p.path, p.message.split(" (")[0]) for p in problems_of(loader, json.dumps({"events": [event]}))}
    assert found == {
        ("events[0].status", "'payed' is not one of pending_conciliation, paid, canceled"),
        ("events[0].total_discount_amount", "must be 0 unless amortization_type is present_amount"),
    }


@pytest.mark.parametrize("count", [2_000, pytest.param(20_000, marks=pytest.mark.exhaustive)])
def test_thousands_of_bad_items_are_all_reported(loader: ScenarioLoader, count: int) -> None:
    """Collected in linear time: 10,000 bad items took 22 s when each problem was compared with every other (the
    exhaustive tier reads 20,000: there a quadratic collector would take minutes)."""
    events = [{**EVENT, "extraordinary_event_conciliation_key": f"k{i}", "reference_date": i} for i in range(count)]
    problems = problems_of(loader, json.dumps({"events": events}))
    assert len(problems) == 3 * count - 1  # a key that is no UUID, a date that is no text, a repeated instalment
    assert problems[-1].path.endswith("event_conciliation_key")


def test_an_outcome_field_of_the_wrong_type_is_not_also_unknown(loader: ScenarioLoader) -> None:
    text = GOOD + "    outcomes: {limit_update_request: {analysis_status: 5, limit_update_request_status: 6}}\n"
    found = sorted((p.path, p.message) for p in problems_of(loader, text))
    assert found == [
        ("accounts[0].outcomes.limit_update_request.analysis_status", "must be a string (got 5)"),
        ("accounts[0].outcomes.limit_update_request.limit_update_request_status", "must be a string (got 6)"),
    ]


# --- the files of a directory --------------------------------------------------------------------------------


def directory_problems(loader: ScenarioLoader, directory: Path) -> list[Problem]:
    with pytest.raises(ScenarioError) as raised:
        loader.load_directory(directory)
    return raised.value.problems


def test_one_name_in_two_files_is_a_problem_for_both(loader: ScenarioLoader, tmp_path: Path) -> None:
    """x.yaml beside x.yml silently shadowed each other."""
    (tmp_path / "x.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "x.yml").write_text(GOOD, encoding="utf-8")
    problems = directory_problems(loader, tmp_path)
    assert [(Path(p.file).name, p.message) for p in problems] == [
        ("x.yaml", "scenario x is also defined by x.yml"),
        ("x.yml", "scenario x is also defined by x.yaml"),
    ]


def test_a_name_that_is_not_utf8_is_a_problem_that_prints(loader: ScenarioLoader, tmp_path: Path) -> None:
    """It passed check, then scenarios, state and health answered text/plain 500s."""
    (tmp_path / "good.yaml").write_text(GOOD, encoding="utf-8")
    bad = os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9.yaml")
    Path(bad).write_text(GOOD, encoding="utf-8")
    (problem,) = directory_problems(loader, tmp_path)
    assert problem.file.endswith("caf\\xe9.yaml")
    assert "not UTF-8" in problem.message
    assert str(problem).encode("utf-8")


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_an_entry_that_is_not_a_regular_file_is_a_problem(loader: ScenarioLoader, tmp_path: Path, kind: str) -> None:
    """Non-regular files were skipped silently (and a FIFO would block a reader for ever)."""
    entry = tmp_path / "odd.yaml"
    if kind == "directory":
        entry.mkdir()
    else:
        os.mkfifo(entry)
    (problem,) = directory_problems(loader, tmp_path)
    assert (problem.file, problem.message) == (str(entry), "is not a regular file")


def test_a_symlink_out_of_the_directory_is_not_read(loader: ScenarioLoader, tmp_path: Path) -> None:
    """Its contents were echoed in the problems (a secret file's first line, for one)."""
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t-token\n", encoding="utf-8")
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    (fixtures / "leak.yaml").symlink_to(secret)
    (problem,) = directory_problems(loader, fixtures)
    assert problem.message == f"is a symbolic link out of {fixtures}: not read"
    assert "s3cr3t" not in str(problem)


def test_a_symlink_inside_the_directory_is_followed(loader: ScenarioLoader, tmp_path: Path) -> None:
    """As a Kubernetes ConfigMap mounts files: NAME.yaml -> ..data/NAME.yaml."""
    (tmp_path / "..data").mkdir()
    (tmp_path / "..data" / "default.yaml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "default.yaml").symlink_to(Path("..data") / "default.yaml")
    assert loader.load_directory(tmp_path)["default"].description == "good"


def test_a_file_over_the_size_bound_is_not_read(
    loader: ScenarioLoader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scenarios, "MAX_FILE_BYTES", 100)
    (tmp_path / "big.yaml").write_text(GOOD, encoding="utf-8")
    (problem,) = directory_problems(loader, tmp_path)
    assert problem.message == f"is {len(GOOD):,} bytes; a scenario file may have 100"


# --- marks of JSON syntax: the tokenizer places every value where libyaml's composer does -----------------


@pytest.mark.parametrize("name", ["default", "payments", "recipients"])
def test_json_marks_are_libyamls(name: str) -> None:
    from mock_server.scenarios.text import _compose, _json_marks, _walk, read
    from mock_server.spec.resources import data_path

    data = read((data_path("fixtures") / f"{name}.yaml").read_text(encoding="utf-8")).data
    data["odd keys"] = {'q"uote': ["\\", "\u00e9\n", {"": [[], {}]}], "\u00e9": -1.5e3}
    for text in (json.dumps(data), json.dumps(data, indent=2), json.dumps(data, indent="\t", ensure_ascii=False)):
        assert _json_marks(text) == _walk(_compose(text), [])
