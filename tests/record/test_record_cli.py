"""`mock-server record`'s options: what a wrong one says (exit 2), before any server starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mock_server import cli


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(argv))
    assert stopped.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.fixture(autouse=True)
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Options accepted would start a server: the test fails instead, at once."""

    def serve(settings: Any) -> int:
        raise AssertionError("the options were accepted: a server would have started")

    monkeypatch.setattr(cli, "serve", serve)


@pytest.fixture(autouse=True)
def no_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in [n for n in os.environ if n.startswith("MOCK_SERVER_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--out", "x.yaml"], "argument --target URL is required: the provider to record"),
        (["--target", "http://127.0.0.1:1"], "argument --out FILE is required: the scenario file to write"),
        (["--target", "ftp://h", "--out", "x.yaml"], "argument --target: 'ftp://h' is not an http:// or https://"),
        (["--target", "http://127.0.0.1:1", "--out", "x.json"], "'x.json' is not NAME.yaml or NAME.yml"),
        (["--target", "http://127.0.0.1:1", "--out", "/no/such/dir/x.yaml"], "the directory '/no/such/dir' does"),
        (["--target", "http://127.0.0.1:1", "--out", "x.yaml", "--pseudonym-key", " "], "--pseudonym-key"),
        (
            ["--target", "http://127.0.0.1:1", "--out", "x.yaml", "--keep-identifiers", "--pseudonym-map", "m.json"],
            "argument --keep-identifiers keeps the originals",
        ),
        (["--target", "http://127.0.0.1:1", "--target-key", "k.pem", "--out", "x.yaml"], "--target-key goes with"),
        (
            ["--target", "http://127.0.0.1:1", "--out", "x.yaml", "--scenario", "s"],
            "unrecognized arguments: --scenario",
        ),
    ],
)
def test_a_wrong_option_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    assert said in usage_error(capsys, "record", *argv)


def test_options_before_the_command_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "record takes its options after it" in usage_error(capsys, "--port", "0", "record")


RECORD = ["record", "--target", "http://127.0.0.1:1", "--out", "recorded/sandbox.yaml"]


@pytest.mark.parametrize(
    ("pseudonym_map", "said"),
    [
        ("recorded/sandbox.yaml", "'recorded/sandbox.yaml' ends in .yaml: the map of originals must not read as a"),
        ("recorded/../recorded/sandbox.yaml", "ends in .yaml"),
        ("recorded/names.yml", "'recorded/names.yml' ends in .yml"),
        ("recorded/NAMES.YAML", "ends in .YAML"),
        ("link-to-out", "argument --pseudonym-map: 'link-to-out' is the --out file: the map would replace it"),
        ("recorded/../recorded/./link-to-out", "is the --out file"),
    ],
)
def test_a_pseudonym_map_that_would_replace_the_recording_or_read_as_a_scenario_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pseudonym_map: str, said: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "recorded").mkdir()
    (tmp_path / "link-to-out").symlink_to("recorded/sandbox.yaml")
    (tmp_path / "recorded" / "link-to-out").symlink_to("sandbox.yaml")
    assert said in usage_error(capsys, *RECORD, "--pseudonym-map", pseudonym_map)


def test_an_existing_out_file_is_kept_unless_force_is_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "recorded").mkdir()
    (tmp_path / "recorded" / "sandbox.yaml").write_text("kept")
    served: list[Any] = []  # no server started: the options are what is tested

    def serve(settings: Any) -> int:
        served.append(settings)
        return 0

    monkeypatch.setattr(cli, "serve", serve)
    said = usage_error(capsys, *RECORD)
    assert said.endswith("argument --out: 'recorded/sandbox.yaml' exists: give --force to replace it, or another file")
    assert cli.main([*RECORD, "--force"]) == 0
    assert capsys.readouterr().err == "mock-server record: --force: the recording will replace recorded/sandbox.yaml\n"
    assert served[0].recording.out == Path("recorded/sandbox.yaml")
    assert (tmp_path / "recorded" / "sandbox.yaml").read_text() == "kept"


def test_a_read_only_file_system_is_said_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder on a read-only mount (a container's, say): os.access refuses it, statvfs says why."""
    import os

    monkeypatch.chdir(tmp_path)
    (tmp_path / "recorded").mkdir()
    real_statvfs = os.statvfs

    class ReadOnly:
        def __init__(self, path: Any) -> None:
            self.f_flag = real_statvfs(path).f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    monkeypatch.setattr(os, "statvfs", ReadOnly)
    said = usage_error(capsys, *RECORD)
    assert said.endswith("argument --out: the directory 'recorded' cannot be written: read-only file system")
    monkeypatch.setattr(os, "statvfs", real_statvfs)
    assert usage_error(capsys, *RECORD).endswith("the directory 'recorded' cannot be written: permission denied")


def test_an_out_that_is_a_directory_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "recorded" / "sandbox.yaml").mkdir(parents=True)
    said = usage_error(capsys, *RECORD, "--force")
    assert said.endswith(
        "argument --out: 'recorded/sandbox.yaml' is a directory: name the scenario file to write in it"
    )
