"""A YAML typo is reported where the text needs mending and in plain words (issue 23): what libyaml found, not
"not a safe YAML document" (which stays the verdict on tags), through the loader, `mock-server check` and
PUT /__mock/state alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_server import cli
from mock_server.scenarios.loader import Problem, ScenarioError, ScenarioLoader
from mock_server.spec.openapi import Specs
from tests.helpers import Client, assert_error

# name -> (text, line, column, the message). Each text is one typo a person makes in a scenario file.
TYPOS = {
    "a key without its colon": (
        "description: x\nevents:\n  - status: 1\n    bar 2\n    baz: 3\n",
        4,
        5,
        "invalid YAML: expected ':' after 'bar 2' (a mapping's lines are `key: value`)",
    ),
    "a list never closed": (
        "description: x\nevents: [1, 2\naccounts: []\n",
        3,
        9,
        "invalid YAML: expected ',' or ']' here: the list opened with '[' at line 2, column 9 is not closed, or two "
        "of its items have no ',' between them",
    ),
    "a mapping never closed": (
        "description: x\nfaults: {a: 1\nb: 2\n",
        3,
        2,
        "invalid YAML: expected ',' or '}' here: the mapping opened with '{' at line 2, column 9 is not closed, or "
        "two of its items have no ',' between them",
    ),
    "a quote never closed": (
        'description: "x\naccounts: []\n',
        1,
        14,
        'invalid YAML: the text quoted here is never closed: its closing " is missing',
    ),
    "a tab in the indentation": (
        "description: x\n\tevents: []\n",
        2,
        1,
        "invalid YAML: a tab in the indentation: YAML indents with spaces only",
    ),
    "a colon inside a plain value": (
        "description: time: 10:00\n",
        1,
        18,
        "invalid YAML: a ': ' is not allowed here: a value that holds ': ' must be in quotes, and a key must be "
        "indented like the keys beside it",
    ),
    "a key indented too little": (
        "description: x\naccounts:\n  - account_id: a\n registration_date: b\n",
        4,
        2,
        "invalid YAML: expected a key here, indented like the mapping that starts at line 1, column 1: check this "
        "line's indentation",
    ),
    "a key among list items": (
        "events:\n  - a: 1\n  b: 2\n",
        3,
        3,
        "invalid YAML: expected a list item ('- ...') here, indented like the list that starts at line 2, column 3: "
        "a list cannot also hold `key: value` lines; check the indentation",
    ),
    "text after a quoted value": (
        'description: "x" y\n',
        1,
        18,
        "invalid YAML: unexpected 'y' after the value: put the whole value in quotes, or start a new line",
    ),
    "a reserved character": (
        "description: @home\n",
        1,
        14,
        "invalid YAML: a value cannot start with '@' (YAML reserves it): put the value in quotes",
    ),
    "an alias of nothing": (
        "description: *x\n",
        1,
        14,
        "invalid YAML: the alias *x names no anchor (&x) defined before it; if the '*' is part of the text, put the "
        "value in quotes",
    ),
    "a lone star": (
        "description: *\n",
        1,
        14,
        "invalid YAML: '*' starts an alias (*name) in YAML, and no name follows it: put the value in quotes if the "
        "'*' is part of the text",
    ),
    "an unknown escape": (
        'description: "C:\\pix"\n',
        1,
        17,
        "invalid YAML: unknown escape '\\p' in a double-quoted text: write '\\\\' for a backslash, or use single "
        "quotes",
    ),
    "a control character": (
        "description: a\x07b\n",
        1,
        15,
        "invalid YAML: the control character U+0007 is not allowed in a YAML text: remove it, or write it as an "
        "escape in a double-quoted text",
    ),
    "two documents": (
        "description: x\n---\ndescription: y\n",
        2,
        1,
        "invalid YAML: a second document starts here (after a '---' or '...' line): a scenario is one document",
    ),
}


@pytest.fixture(scope="module")
def loader(specs: Specs) -> ScenarioLoader:
    return ScenarioLoader.from_specs(specs)


def only_problem(loader: ScenarioLoader, text: str) -> Problem:
    with pytest.raises(ScenarioError) as raised:
        loader.load_text("s", text, "s.yaml")
    (problem,) = raised.value.problems
    return problem


@pytest.mark.parametrize("name", list(TYPOS))
def test_a_typo_is_said_in_plain_words_at_its_place(loader: ScenarioLoader, name: str) -> None:
    text, line, column, message = TYPOS[name]
    problem = only_problem(loader, text)
    assert (problem.line, problem.column, problem.message) == (line, column, message)
    assert str(problem) == f"s.yaml:{line}:{column}: (file): {message}"


def test_a_tag_is_still_not_a_safe_yaml_document(loader: ScenarioLoader) -> None:
    problem = only_problem(loader, "description: !!python/name:os.system x\n")
    assert problem.message.startswith("not a safe YAML document: the tag !!python/name:os.system is not allowed")


def test_check_prints_the_typo_with_its_file_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    text, line, column, message = TYPOS["a key without its colon"]
    (tmp_path / "default.yaml").write_text(text, encoding="utf-8")
    assert cli.main(["check", "--fixtures", str(tmp_path)]) == 2
    assert capsys.readouterr().out == f"{tmp_path / 'default.yaml'}:{line}:{column}: (file): {message}\n"


def test_a_state_body_with_a_typo_is_refused_with_its_place(client: Client) -> None:
    text, line, column, message = TYPOS["a key without its colon"]
    response = client.put("/__mock/state", content=text.encode(), headers={"Content-Type": "application/yaml"})
    body = assert_error(response, 400, "malformed_yaml")
    assert body["message"] == f"The body cannot be read as YAML: line {line}, column {column}: {message}."
    assert body["details"] == [{"field": "", "message": f"line {line}, column {column}: {message}"}]
