"""scenarios/state_file.py: a state file is read back only when every check passes; each problem is placed at
its line and column, and the app is never built over one (tests/e2e/test_state_file.py: the exit status 2, and
the file left as it was)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.scenarios import state_file
from mock_server.scenarios.loader import Problem, ScenarioError, ScenarioLoader
from mock_server.scenarios.state_file import SNIFFED_BYTES, read_state_file
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.bounds import Bounds
from tests.default_scenario import PENDING_EVENT

WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 500000}]


@pytest.fixture(scope="module")
def written(specs: Specs, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The text of a state file the server wrote: two sessions, the second with an account of its own."""
    path = tmp_path_factory.mktemp("state") / "state.json"
    app = create_app(Settings(state_file=path), specs)
    with TestClient(app) as http:
        http.get("/__mock/clock", headers={"X-Mock-Session": "first"})
        body = {
            "account_id": "a-1",
            "registration_date": "2026-11-21T09:00:00-03:00",
            "limit": {"pix": {"withdraw": WINDOWS}},
        }
        assert http.post("/limits/account", json=body, headers={"X-Mock-Session": "second"}).status_code == 201
        assert (
            http.post(
                f"/__mock/events/{PENDING_EVENT}/schedule",
                json={"action": "cancel", "after_lookups": 2},
                headers={"X-Mock-Session": "second"},
            ).status_code
            == 201
        )
        app.state.state_file.save()
    return path.read_text()


def _problems(specs: Specs, tmp_path: Path, text: str | bytes) -> list[Problem]:
    path = tmp_path / "state.json"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    loader = ScenarioLoader.from_specs(specs)
    with pytest.raises(ScenarioError) as refused:
        read_state_file(path, specs.admin.check("#/components/schemas/StateFile"), loader, {"default", "empty"})
    return refused.value.problems


def _edited(written: str, session: int, change: Any) -> str:
    """The text with one session's line changed by `change(data)`, the others untouched."""
    lines = written.split("\n")
    index = 2 + session
    data = json.loads(lines[index].rstrip(","))
    change(data)
    lines[index] = json.dumps(data, separators=(",", ":")) + ("," if lines[index].endswith(",") else "")
    return "\n".join(lines)


def test_there_is_none_before_the_first_write(specs: Specs, tmp_path: Path) -> None:
    loader = ScenarioLoader.from_specs(specs)
    assert (
        read_state_file(tmp_path / "none.json", specs.admin.check("#/components/schemas/StateFile"), loader, ()) is None
    )


def test_what_the_server_wrote_reads_back(specs: Specs, tmp_path: Path, written: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(written)
    loader = ScenarioLoader.from_specs(specs)
    document = read_state_file(path, specs.admin.check("#/components/schemas/StateFile"), loader, {"default"})
    assert document is not None
    assert [s["name"] for s in document["sessions"]] == ["first", "second"]


def test_a_file_cut_short_is_placed_where_it_ends(specs: Specs, tmp_path: Path, written: str) -> None:
    (problem,) = _problems(specs, tmp_path, written[: len(written) - 40])
    assert problem.line == 4  # the second session's line
    assert "is not a state file" in problem.message and "something else changed it" in problem.message


def test_a_field_of_the_wrong_type_is_placed_at_it(specs: Specs, tmp_path: Path, written: str) -> None:
    text = _edited(written, 1, lambda data: data["store"].update(added_recipients="none"))
    (problem,) = _problems(specs, tmp_path, text)
    assert (problem.path, problem.message) == ("sessions[1].store.added_recipients", 'must be an integer (got "none")')
    assert problem.line == 4
    assert problem.column == text.split("\n")[3].index('"none"') + 1


def test_an_account_that_would_not_load_as_a_scenarios_is_placed_at_it(
    specs: Specs, tmp_path: Path, written: str
) -> None:
    text = _edited(written, 1, lambda data: data["store"]["accounts"][0]["limit"]["pix"].update(teleport=WINDOWS))
    (problem,) = _problems(specs, tmp_path, text)
    assert problem.path == "sessions[1].store.accounts[0].limit.pix.teleport"
    assert problem.line == 4


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (
            lambda d: d.update(scenario="gone"),
            "sessions[1].scenario",
            "no scenario 'gone' in the fixtures (--fixtures)",
        ),
        (lambda d: d.update(name="first"), "sessions[1].name", "session 'first' is there twice"),
        (lambda d: d["store"].update(base=3), "sessions[1].store.base", "no state 3 in this session's states"),
        (
            lambda d: d["schedules"]["items"][0]["plan"].update(amount=5),
            "sessions[1].schedules.items[0].plan.amount",
            "is for action pay only",
        ),
    ],
    ids=["unknown scenario", "a name twice", "no such state", "an inconsistent schedule"],
)
def test_what_the_schema_cannot_say_is_placed_too(specs, tmp_path, written, change, path, message) -> None:
    (problem,) = _problems(specs, tmp_path, _edited(written, 1, change))
    assert (problem.path, problem.message) == (path, message)
    assert problem.line == 4


def test_another_format_or_version_is_refused(specs: Specs, tmp_path: Path, written: str) -> None:
    problems = _problems(specs, tmp_path, written.replace('"version":1', '"version":2', 1))
    assert [(p.path, p.message) for p in problems] == [("version", "must be 1 (got 2)")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"", "is empty"),
        (b"   \n", "is empty"),
        (b'{"format": "mock-server-state"\xff}', "is not UTF-8"),
        (b"[1, 2", "is not a state file"),
    ],
)
def test_what_is_no_json_object_at_all_is_refused(specs: Specs, tmp_path: Path, text: bytes, message: str) -> None:
    (problem,) = _problems(specs, tmp_path, text)
    assert message in problem.message


def test_a_large_foreign_file_is_refused_on_its_first_bytes(
    specs: Specs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 270 MB log under the default bounds aborted the start out of memory: it is judged before it is read whole."""
    path = tmp_path / "state.json"
    path.write_bytes(b"\n  " + b"2026-11-26 INFO a log line, not a state file\n" * (4 * SNIFFED_BYTES // 45))
    loader = ScenarioLoader.from_specs(specs)
    check = specs.admin.check("#/components/schemas/StateFile")
    reads: list[int] = []
    opened = Path.open

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        stream = opened(self, *args, **kwargs)
        read = stream.read

        def counted(size: int = -1) -> bytes:
            data: bytes = read(size)
            reads.append(len(data))
            return data

        stream.read = counted
        return stream

    monkeypatch.setattr(Path, "open", counting_open)
    with pytest.raises(ScenarioError) as refused:
        read_state_file(path, check, loader, {"default"})
    (problem,) = refused.value.problems
    assert (problem.line, problem.column) == (2, 3)
    assert "is not a state file (it does not begin with a JSON object: line 2 column 3)" in problem.message
    assert reads == [SNIFFED_BYTES]  # the first bytes alone


def test_a_file_larger_than_the_bound_is_refused_before_a_byte_is_read(
    specs: Specs, tmp_path: Path, written: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    path.write_text(written)
    loader = ScenarioLoader.from_specs(specs)
    check = specs.admin.check("#/components/schemas/StateFile")
    assert read_state_file(path, check, loader, {"default"}, max_bytes=len(written)) is not None  # at the bound

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was opened")

    monkeypatch.setattr(Path, "open", unread)
    with pytest.raises(ScenarioError) as refused:
        read_state_file(path, check, loader, {"default"}, max_bytes=len(written) - 1)
    (problem,) = refused.value.problems
    assert (problem.line, problem.column) == (1, 1)
    assert f"is {len(written):,} bytes, more than a server held to these bounds writes" in problem.message


def test_a_file_the_memory_cannot_hold_is_a_problem_not_a_traceback(
    specs: Specs, tmp_path: Path, written: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    path.write_text(written)

    def exhausted(*args: object) -> None:
        raise MemoryError

    monkeypatch.setattr(state_file, "_checked", exhausted)
    loader = ScenarioLoader.from_specs(specs)
    with pytest.raises(ScenarioError) as refused:
        read_state_file(path, specs.admin.check("#/components/schemas/StateFile"), loader, {"default"})
    (problem,) = refused.value.problems
    assert "more than this process has the memory to read back" in problem.message


def test_the_app_holds_the_file_to_the_bounds_it_is_given(specs: Specs, tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with path.open("wb") as out:
        out.truncate(20 * 1024**2)  # sparse: more than one session of 1 MiB and the eviction records write
    with pytest.raises(ScenarioError) as refused:
        create_app(Settings(state_file=path, max_sessions=1, bounds=Bounds(max_session_bytes=1024**2)), specs)
    assert "more than a server held to these bounds writes" in refused.value.problems[0].message
