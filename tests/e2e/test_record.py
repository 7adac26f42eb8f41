"""`mock-server record` for real: a reference provider (`mock-server` on a scenario the recorder has never seen) in
one process, the recorder in another, a client's flow through it, the stop (POST /__mock/record/stop, SIGTERM), then
`mock-server check` and a mock started on the file, answering like the provider."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from mock_server.domain.documents import is_valid_document
from tests.live_server import EXIT_TIMEOUT, LiveServer, live_server, run_command, start, stop_process
from tests.record.reference import (
    CNPJ,
    CPF,
    EVENTS,
    EXISTING,
    FIRST,
    IDENTIFIERS,
    NEXT_CHANGES,
    SECOND,
    Flow,
    client_flow,
    layouts,
    write_provider_fixtures,
)

pytestmark = pytest.mark.e2e
CLOCK = "2026-11-21T10:00:00-03:00"
KEY = "a key the team keeps in its CI secrets"


@dataclass
class Recorded:
    flow: Flow
    out: Path
    names: dict[str, str]  # the pseudonym map
    stdout: str
    returncode: int
    stopped: dict[str, Any] | None  # the stop's answer (None: stopped by a signal)


def provider(fixtures: Path) -> Any:
    return live_server("--fixtures", str(fixtures), "--scenario", "sandbox", "--clock", CLOCK)


def record(target: str, directory: Path, how: str) -> Recorded:
    """`mock-server record` against `target`, the flow through it, then stopped `how` (post | sigterm)."""
    out, names = directory / "sandbox.yaml", directory / "names.json"
    recorder = start(
        "record", "--port", "0", "--target", target, "--out", str(out),
        "--pseudonym-key", KEY, "--pseudonym-map", str(names),
    )  # fmt: skip
    try:
        with httpx.Client(base_url=recorder.url, timeout=10) as client:

            def call(method: str, path: str, body: Any) -> tuple[int, bytes]:
                response = client.request(method, path, json=body)
                return response.status_code, response.content

            flow = client_flow(call)
            stopped = None
            if how == "post":
                answer = client.post("/__mock/record/stop", headers={"X-Mock-Admin": "1"})
                assert answer.status_code == 200, answer.text
                stopped = answer.json()
            else:
                recorder.proc.send_signal(signal.SIGTERM)
        returncode = recorder.proc.wait(timeout=EXIT_TIMEOUT)  # a stop ends the process by itself
    finally:
        stdout, _ = stop_process(recorder.proc)
    return Recorded(flow, out, json.loads(names.read_text()), stdout, returncode, stopped)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Recorded, Path]]:
    """A recording stopped by POST /__mock/record/stop, and the provider's fixtures (a fresh provider answers the
    next calls as the recorded one would have)."""
    base = tmp_path_factory.mktemp("record")
    fixtures = write_provider_fixtures(base / "provider")
    (base / "out").mkdir()
    with provider(fixtures) as target:
        yield record(target.url, base / "out", "post"), fixtures


def test_the_stop_writes_a_scenario_check_accepts_and_names_the_partial_account(
    recorded: tuple[Recorded, Path],
) -> None:
    recording, _ = recorded
    assert recording.returncode == 0
    assert recording.stopped is not None
    partial = recording.names[EXISTING]
    assert recording.stopped["partial_accounts"] == [partial]
    assert f"wrote {recording.out} (scenario sandbox: 3 events, 3 accounts)" in recording.stdout
    assert f"1 partial account (registration not recorded, written with what the calls showed): {partial}" in (
        recording.stdout
    )
    check = run_command("check", "--fixtures", str(recording.out.parent))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "1 scenario valid" in check.stdout


def test_a_mock_on_the_file_answers_like_the_provider(recorded: tuple[Recorded, Path]) -> None:
    recording, fixtures = recorded
    names = recording.names
    with (
        live_server("--fixtures", str(recording.out.parent), "--scenario", "sandbox") as mock,
        provider(fixtures) as fresh,
        mock.client() as ours,
    ):
        for key in EVENTS:
            assert ours.get(f"/event_conciliation/extraordinary_event/{key}").content == recording.flow.lookups[key]
        first = ours.get(f"/__mock/accounts/{names[FIRST]}").json()
        assert [r["document_number"] for r in first["recipient_list"]["recipients"]] == [names[CPF], names[CNPJ]]
        assert ours.get(f"/__mock/accounts/{names[SECOND]}").status_code == 200
        replay_provider_changes(fresh)
        with fresh.client() as theirs:
            for account_id, pix in NEXT_CHANGES.items():
                mine = ours.post(f"/limits/account/{names[account_id]}/limit_update_request", json={"pix": pix})
                real = theirs.post(f"/limits/account/{account_id}/limit_update_request", json={"pix": pix})
                assert (mine.status_code, mine.json()["client_notification_status"]) == (
                    real.status_code,
                    real.json()["client_notification_status"],
                ), account_id


def replay_provider_changes(fresh: LiveServer) -> None:
    """A fresh provider brought to where the recorded one was: the same flow, not recorded."""
    with fresh.client() as client:

        def call(method: str, path: str, body: Any) -> tuple[int, bytes]:
            response = client.request(method, path, json=body)
            return response.status_code, response.content

        client_flow(call)


def test_the_file_holds_none_of_the_providers_identifiers(recorded: tuple[Recorded, Path]) -> None:
    recording, _ = recorded
    text = recording.out.read_text()
    for identifier in IDENTIFIERS:
        for written in layouts(identifier):
            assert written not in text, identifier
    for original in (CPF, CNPJ):
        assert is_valid_document(recording.names[original])
        assert recording.names[original] in text


def test_sigterm_writes_the_file_and_the_same_key_gives_the_same_pseudonyms(
    recorded: tuple[Recorded, Path], tmp_path: Path
) -> None:
    first, _ = recorded
    fixtures = write_provider_fixtures(tmp_path / "provider")
    (tmp_path / "out").mkdir()
    with provider(fixtures) as target:
        second = record(target.url, tmp_path / "out", "sigterm")
    assert second.returncode == -signal.SIGTERM
    assert f"wrote {second.out} (scenario sandbox: 3 events, 3 accounts)" in second.stdout
    assert second.names == first.names
    assert written_identifiers(second.out) == written_identifiers(first.out)


def written_identifiers(out: Path) -> tuple[list[str], list[str]]:
    """The account ids and the document numbers of a recorded file, in order."""
    accounts = yaml.safe_load(out.read_text())["accounts"]
    documents = [r["document_number"] for a in accounts for r in a.get("recipient_list", {}).get("recipients", [])]
    return [a["account_id"] for a in accounts], documents


DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "recording.md"


def fenced(markdown: str, language: str) -> list[str]:
    """The bodies of the page's ```LANGUAGE blocks, in order."""
    import re

    return re.findall(rf"```{language}\n(.*?)```", markdown, flags=re.S)


def test_the_pages_recording_is_what_the_commands_print(tmp_path: Path) -> None:
    """docs/recording.md's transcript, replayed against a real provider and recorder: each answer, the recorder's
    stdout, the file and the map as the page shows them (ports and paths aside)."""
    import shlex

    page = DOCS_PAGE.read_text(encoding="utf-8")
    transcript, said = fenced(page, "text")[:2]
    [shown_file] = fenced(page, "yaml")
    [shown_map] = fenced(page, "json")
    (tmp_path / "recorded").mkdir()
    out, names = tmp_path / "recorded" / "sandbox.yaml", tmp_path / "sandbox-names.json"
    with live_server("--seed", "1", "--clock", CLOCK) as target:
        recorder = start(
            "record", "--port", "0", "--target", target.url, "--out", str(out), "--pseudonym-key", "team secret",
            "--pseudonym-map", str(names), "--seed", "1", "--clock", CLOCK,
        )  # fmt: skip

        def shown(text: str) -> str:
            return (
                text.replace("http://127.0.0.1:8001", target.url)
                .replace("recorded/sandbox.yaml", str(out))
                .replace('"sandbox-names.json"', json.dumps(str(names)))
                .replace("to sandbox-names.json", f"to {names}")
            )

        try:
            lines = transcript.strip().splitlines()
            with httpx.Client(timeout=10) as client:
                for command, expected in zip(lines[::2], lines[1::2], strict=True):
                    words = shlex.split(command.removeprefix("$ "))
                    method = words[words.index("-X") + 1] if "-X" in words else "GET"
                    headers = dict(h.split(": ", 1) for h in (words[i + 1] for i, w in enumerate(words) if w == "-H"))
                    data = words[words.index("-d") + 1] if "-d" in words else None
                    url = next(w for w in words if w.startswith("http")).replace("http://127.0.0.1:8000", recorder.url)
                    answer = client.request(method, url, headers=headers, content=data)
                    assert answer.text == shown(expected), command
            recorder.proc.wait(timeout=EXIT_TIMEOUT)
        finally:
            stdout, _ = stop_process(recorder.proc)
    assert stdout.strip().splitlines() == [shown(line) for line in said.strip().splitlines()[1:]]
    assert out.read_text() == shown_file.replace("http://127.0.0.1:8001", target.url)
    assert json.loads(names.read_text()) == json.loads(shown_map)


def test_a_recording_that_cannot_be_written_exits_1_and_is_kept_where_stderr_says(tmp_path: Path) -> None:
    """The folder of --out went away during the recording: SIGTERM writes the file into a folder of the temporary
    directory instead, stderr names it, and the command exits 1 (not by the signal, not 0)."""
    fixtures = write_provider_fixtures(tmp_path / "provider")
    gone = tmp_path / "gone"
    gone.mkdir()
    out = gone / "sandbox.yaml"
    with provider(fixtures) as target:
        recorder = start("record", "--port", "0", "--target", target.url, "--out", str(out), "--pseudonym-key", KEY)
        try:
            with httpx.Client(base_url=recorder.url, timeout=10) as client:
                assert client.get(f"/event_conciliation/extraordinary_event/{EVENTS[0]}").status_code == 200
            gone.rmdir()
            recorder.proc.send_signal(signal.SIGTERM)
            returncode = recorder.proc.wait(timeout=EXIT_TIMEOUT)
        finally:
            stdout, stderr = stop_process(recorder.proc)
    assert returncode == 1
    lines = stderr.strip().splitlines()
    assert f"mock-server record: cannot write {out}: no such file or directory" in lines
    [kept_line] = [line for line in lines if line.startswith("mock-server record: kept in ")]
    kept = Path(kept_line.removeprefix("mock-server record: kept in ").removesuffix(f" instead: move it to {out}"))
    try:
        assert f"wrote {kept} (scenario sandbox: 1 event, 0 accounts)" in stdout
        check = run_command("check", "--fixtures", str(kept.parent))
        assert check.returncode == 0, check.stdout + check.stderr
    finally:
        kept.unlink()
        kept.parent.rmdir()
