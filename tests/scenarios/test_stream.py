"""mock_server.scenarios.stream: a valid JSON-syntax scenario read one event at a time gives exactly the scenario
the full path gives; anything else is left to the full path, whose verdicts stay as they are."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mock_server.domain.models import Scenario
from mock_server.scenarios import stream as scenario_stream
from mock_server.scenarios.loader import ScenarioError, ScenarioLoader
from mock_server.scenarios.stream import read_lean
from mock_server.spec.openapi import load_specs
from tests.scenarios.generated import generated

ROOT = Path(__file__).resolve().parents[2]
LOADER = ScenarioLoader.from_specs(load_specs())
DEFAULT = yaml.safe_load((ROOT / "fixtures" / "default.yaml").read_text(encoding="utf-8"))


def _plain(value: Any) -> Any:
    """The default scenario as JSON holds it (PyYAML's safe_load reads unquoted dates as dates)."""
    return json.loads(json.dumps(value, default=lambda v: v.isoformat()))


def exact(scenario: Scenario) -> tuple[Any, ...]:
    events = [
        (*dataclasses.astuple(e), str(e.total_expected_amount), str(e.total_discount_amount), str(e.total_paid_amount))
        for e in scenario.events.values()
    ]
    return scenario.name, scenario.description, events, scenario.accounts


def full_path(path: Path) -> Scenario:
    """What the full path makes of the file's text (load_text never takes the lean path)."""
    return LOADER.load_text(path.stem, path.read_text(encoding="utf-8"), str(path))


def write(tmp_path: Path, text: str, name: str = "s") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_default_scenario_in_json_syntax_loads_lean_and_exactly_as_the_full_path(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(_plain(DEFAULT), indent=2))
    assert LOADER.event_check is not None
    assert read_lean(path, LOADER.event_check) is not None
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64])
def test_values_cut_at_any_place_of_the_window_read_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Numbers are the trap: "1500.25" cut after "15" is a valid number too."""
    path = write(tmp_path, json.dumps(_plain(DEFAULT), separators=(",", ":")))
    monkeypatch.setattr(scenario_stream, "CHUNK", chunk)
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


def test_a_generated_scenario_loads_lean_exactly(tmp_path: Path) -> None:
    path = generated(tmp_path, 2000, "json")
    assert LOADER.event_check is not None
    lean = read_lean(path, LOADER.event_check)
    assert lean is not None
    assert len(lean[1]) == 2000
    assert exact(LOADER.load_file(path)) == exact(full_path(path))


def test_no_events_and_no_keys_load_lean(tmp_path: Path) -> None:
    for text in ("{}", '{"events": []}', ' \n{"description": "d", "events": [], "accounts": []}\n'):
        path = write(tmp_path, text)
        assert LOADER.event_check is not None
        assert read_lean(path, LOADER.event_check) is not None
        assert exact(LOADER.load_file(path)) == exact(full_path(path))


def _event(**changes: Any) -> dict[str, Any]:
    return {**_plain(DEFAULT)["events"][0], **changes}


DEFAULT_JSON = json.dumps(_plain(DEFAULT))
EVENT = json.dumps(_event())
GIVE_UP = {
    "block-style YAML": "description: d\nevents: []\n",
    "a byte-order mark": "\ufeff" + DEFAULT_JSON,
    "a key twice in an event": '{"events": [' + EVENT[:-1] + ', "status": "paid"}]}',
    "a key twice at the top": '{"events": [], "events": []}',
    "description twice": '{"description": "a", "description": "b"}',
    "a surrogate escape": '{"description": "\\ud800", "events": []}',
    "NaN": '{"events": [' + EVENT[:-1] + ', "total_paid_amount": NaN}]}',
    "text after the document": DEFAULT_JSON + " {}",
    "two documents": DEFAULT_JSON + "\n---\n{}",
    "events not a list": '{"events": {}}',
    "an event not an object": '{"events": [1]}',
    "an event the schema refuses": '{"events": [' + json.dumps(_event(status="payed")) + "]}",
    "an event the cross-checks refuse": '{"events": [' + json.dumps(_event(total_paid_amount=1e9)) + "]}",
    "one event key twice, in two cases": "{"
    + '"events": ['
    + EVENT
    + ","
    + json.dumps(
        _event(
            extraordinary_event_conciliation_key=_event()["extraordinary_event_conciliation_key"].upper(),
            event_conciliation_list=[
                {
                    "event_conciliation_key": "11111111-1111-4111-8111-111111111111",
                    "installment_key": "22222222-2222-4222-8222-222222222222",
                }
            ],
        )
    )
    + "]}",
    "one instalment key in two events": '{"events": ['
    + EVENT
    + ","
    + json.dumps(_event(extraordinary_event_conciliation_key="11111111-1111-4111-8111-111111111111"))
    + "]}",
    "an unknown top-level key": '{"events": [], "extra": 1}',
    "an account problem": '{"accounts": [{"account_id": ""}]}',
    "not UTF-8": None,
    "cut short": DEFAULT_JSON[:-10],
    "empty": "",
}


@pytest.mark.parametrize("case", GIVE_UP)
def test_anything_but_a_plainly_valid_json_scenario_gets_the_full_paths_verdict(tmp_path: Path, case: str) -> None:
    text = GIVE_UP[case]
    path = tmp_path / "s.yaml"
    if text is None:
        path.write_bytes(b'{"description": "\xff"}')
    else:
        path.write_text(text, encoding="utf-8")
    assert LOADER.event_check is not None
    lean = read_lean(path, LOADER.event_check)
    assert lean is None or LOADER.problems(lean[0]), "the lean path would have taken it"
    if text is None:
        with pytest.raises(ScenarioError):
            LOADER.load_file(path)
        return
    try:
        expected: Any = exact(full_path(path))
    except ScenarioError as exc:
        expected = [str(p) for p in exc.problems]
    try:
        got: Any = exact(LOADER.load_file(path))
    except ScenarioError as exc:
        got = [str(p) for p in exc.problems]
    assert got == expected
