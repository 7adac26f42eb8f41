"""A scenario big enough to be packed by worker processes, loaded by the real `mock-server` (which forks them
while it starts): every event answers its lookup as the file gives it, in either syntax, on a machine with
one core or several (with one, the same file is packed by the server alone)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from bench.gen_scenario import event_key, write_scenario
from mock_server.scenarios.batch_packing import PARALLEL_FROM_BYTES
from tests.live_server import live_server

EVENTS = 16_000  # about 9.3 MB in JSON syntax, 9.2 MB in YAML: over PARALLEL_FROM_BYTES


@pytest.mark.parametrize("syntax", ["json", "yaml"])
def test_a_big_scenario_loads_in_the_real_server_and_every_event_answers(tmp_path: Path, syntax: str) -> None:
    fixtures = tmp_path / "fixtures"
    path = fixtures / "big.yaml"
    write_scenario(EVENTS, path, syntax)
    assert path.stat().st_size >= PARALLEL_FROM_BYTES
    reference = tmp_path / "reference.yaml"  # the same events in JSON syntax: quick to read here
    write_scenario(EVENTS, reference, "json")
    expected = {e["extraordinary_event_conciliation_key"]: e for e in json.loads(reference.read_text())["events"]}
    with (
        live_server("--fixtures", str(fixtures), "--scenario", "big") as server,
        httpx.Client(base_url=server.url) as client,
    ):
        for index in (0, 1, 2, 3, 1999, 2000, EVENTS // 2, EVENTS - 2, EVENTS - 1):
            key = event_key(index)
            answer = client.get(f"/event_conciliation/extraordinary_event/{key}")
            assert answer.status_code == 200, answer.text
            body = answer.json()
            given = expected[key]
            assert body["security_key"] == given["security_key"]
            assert [i["event_conciliation_key"] for i in body["event_conciliation_list"]] == [
                i["event_conciliation_key"] for i in given["event_conciliation_list"]
            ]
        missing = client.get("/event_conciliation/extraordinary_event/00000000-0000-4000-8000-00000000ffff")
        assert missing.status_code == 404
