"""A consumer's pact written by pact-python's consumer DSL (its Rust mock server runs in process) passes
`mock-server gate pact`, and is the pact the fast tests check in (tests/gate/pacts/): same interactions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mock_server import cli
from tests.gate.consumer_pact import CHECKED_IN, write_consumer_pact

pytest.importorskip("pact", reason="the [pact] extra (pact-python) is not installed")


@pytest.mark.parametrize("version", ["V3", "V4"])
def test_a_pact_python_pact_passes_and_is_the_checked_in_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    monkeypatch.setenv("PACT_DO_NOT_TRACK", "true")
    written = write_consumer_pact(tmp_path, version)
    status = cli.main(["gate", "pact", str(written)])
    out, err = capsys.readouterr()
    assert (status, err) == (0, ""), out + err
    assert out == "gate pact: 4 interactions in 1 file: 4 compatible, 0 incompatible\n"
    made = json.loads(written.read_text(encoding="utf-8"))
    kept = json.loads(CHECKED_IN[version.lower()].read_text(encoding="utf-8"))
    assert made["interactions"] == kept["interactions"]
    assert made["metadata"]["pactSpecification"] == kept["metadata"]["pactSpecification"]
