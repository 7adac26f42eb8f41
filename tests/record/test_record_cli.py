"""`mock-server record`'s options: what a wrong one says (exit 2), before any server starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from mock_server import cli


def usage_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        cli.main(list(argv))
    assert stopped.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


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
