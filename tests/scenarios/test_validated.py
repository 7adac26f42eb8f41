"""The shipped scenarios' judged parse kept beside them (scenarios/validated.py): used only for the same bytes, specs
and code, written only when Python would write byte code and only for a valid file, never for another directory."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from mock_server.scenarios import loader as scenario_loader
from mock_server.scenarios import validated
from mock_server.scenarios.loader import ScenarioError, ScenarioLoader
from mock_server.spec.openapi import file_stamp, library_stamp, load_specs
from mock_server.spec.resources import data_path
from tests.scenarios.test_stream import exact, full_path

SPECS = load_specs()
SHIPPED = sorted(data_path("fixtures").glob("*.yaml"))


@pytest.fixture
def shipped_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the shipped fixtures directory, taken for the shipped one, where caches are written."""
    directory = tmp_path / "fixtures"
    shutil.copytree(data_path("fixtures"), directory, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(validated, "_shipped", lambda: directory.resolve())
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return directory


def cache_of(path: Path) -> Path:
    return path.parent / "__pycache__" / f"{path.name}.validated.json"


def never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenario_loader, "read", lambda text: pytest.fail("read and judged again: cache unused"))


def test_the_shipped_scenarios_are_valid_when_read_and_judged_without_a_cache() -> None:
    judged_alone = ScenarioLoader(ScenarioLoader.from_specs(SPECS).scenario_check)  # no specs: nothing kept
    assert {p.stem for p in SHIPPED} <= set(judged_alone.load_directory(data_path("fixtures")))


def test_a_second_load_comes_from_the_cache_and_builds_the_same_scenarios(shipped_here, monkeypatch):
    judged = {p.stem: exact(full_path(p)) for p in shipped_here.glob("*.yaml")}
    first = ScenarioLoader.from_specs(SPECS).load_directory(shipped_here)
    assert all(cache_of(path).is_file() for path in shipped_here.glob("*.yaml"))
    never_read(monkeypatch)
    again = ScenarioLoader.from_specs(SPECS).load_directory(shipped_here)
    assert {n: exact(s) for n, s in first.items()} == judged
    assert {n: exact(s) for n, s in again.items()} == judged


def test_a_changed_file_is_read_and_judged_again(shipped_here):
    loader = ScenarioLoader.from_specs(SPECS)
    loader.load_directory(shipped_here)
    default = shipped_here / "default.yaml"
    default.write_text(default.read_text(encoding="utf-8").replace("description:", "description: changed", 1))
    assert loader.load_file(default).description.startswith("changed")


def test_a_cache_of_other_code_or_other_specs_is_not_used(shipped_here, monkeypatch):
    default = shipped_here / "default.yaml"
    ScenarioLoader.from_specs(SPECS).load_file(default)
    held = json.loads(cache_of(default).read_text(encoding="utf-8"))
    held["document"]["description"] = "not what the file says"
    cache_of(default).write_text(json.dumps(held), encoding="utf-8")
    assert ScenarioLoader.from_specs(SPECS).load_file(default).description == "not what the file says"  # same key
    monkeypatch.setattr(validated, "_code", lambda: "other code")
    assert ScenarioLoader.from_specs(SPECS).load_file(default).description != "not what the file says"
    monkeypatch.undo()
    monkeypatch.setattr(validated, "_shipped", lambda: shipped_here.resolve())
    cache_of(default).write_text(json.dumps(held), encoding="utf-8")
    other_specs = load_specs()
    other_specs.admin.text += "\n# another text\n"
    assert ScenarioLoader.from_specs(other_specs).load_file(default).description != "not what the file says"


@pytest.mark.parametrize("held", ["", "{", "[]", '{"key": 1}', "\x00\xff"])
def test_a_damaged_cache_is_read_past_and_written_anew(shipped_here, held):
    default = shipped_here / "default.yaml"
    cache_of(default).parent.mkdir(exist_ok=True)
    cache_of(default).write_text(held, encoding="utf-8", errors="surrogateescape")
    assert exact(ScenarioLoader.from_specs(SPECS).load_file(default)) == exact(full_path(default))
    assert "document" in json.loads(cache_of(default).read_text(encoding="utf-8"))


def test_an_invalid_file_is_refused_and_never_kept(shipped_here):
    broken = shipped_here / "broken.yaml"
    broken.write_text("events: 1\n", encoding="utf-8")
    with pytest.raises(ScenarioError):
        ScenarioLoader.from_specs(SPECS).load_file(broken)
    assert not cache_of(broken).exists()


def test_nothing_is_written_where_python_writes_no_byte_code(shipped_here, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    ScenarioLoader.from_specs(SPECS).load_directory(shipped_here)
    assert not (shipped_here / "__pycache__").exists()


def test_another_directory_s_scenarios_are_never_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    shutil.copy(data_path("fixtures") / "default.yaml", tmp_path / "default.yaml")
    ScenarioLoader.from_specs(SPECS).load_directory(tmp_path)
    assert not (tmp_path / "__pycache__").exists()


def test_a_file_of_code_changed_under_the_same_size_and_time_is_another_stamp(tmp_path):
    module = tmp_path / "module.py"
    module.write_text("__version__ = '6.0.1'\n", encoding="utf-8")
    before = os.stat(module)
    stamp = file_stamp(str(module))
    module.write_text("__version__ = '6.0.2'\n", encoding="utf-8")  # what an installer keeping times could leave
    os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(module).st_size == before.st_size
    assert file_stamp(str(module)) != stamp
    assert library_stamp("no_such_library_here") == "absent"
