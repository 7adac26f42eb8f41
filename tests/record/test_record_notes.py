"""What record mode says, in process: a provider (a small Starlette app served for real) that answers what no
interface allows, with a CPF where no field should hold one; every call the recording drops is a note, and no note,
no line the command prints, no stop's answer and no log line names an original identifier or quotes the target's
bytes (issue 43: H2, M2, M1)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from mock_server.admin.recording import said
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.recording import RecordOptions
from tests.default_scenario import PENDING_EVENT_BODY
from tests.helpers import ADMIN_HEADERS
from tests.planted_defects import serve
from tests.record.reference import CPF, FIRST, layouts

KEY = b"the team's pseudonym key"
HOLDER_CPF = "52998224725"  # the CPF a provider puts where the interface has no field
ORIGINALS = (CPF, HOLDER_CPF, FIRST)
EVENT_DATE = "2026-11-21T10:00:00.000-03:00"


def event(key: str, installments: int = 1, **fields: Any) -> dict[str, Any]:
    """The default scenario's pending event under `key`, with `installments` instalments; `fields` first."""
    instalment = PENDING_EVENT_BODY["event_conciliation_list"][0]
    return {
        **fields,
        **PENDING_EVENT_BODY,
        "extraordinary_event_conciliation_key": key,
        "event_conciliation_list": [
            {
                **instalment,
                "event_conciliation_key": f"5c3d4e5f-6a7b-4c8d-8e9f-{i:012x}",
                "installment_key": f"6d4e5f6a-7b8c-4d9e-9f0a-{i:012x}",
            }
            for i in range(installments)
        ],
    }


def compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


WITH_A_CPF = "0a000000-0000-4000-8000-000000000001"  # a CPF first in the answer, in a field the interface lacks
STATUS_A_NUMBER = "0a000000-0000-4000-8000-000000000002"  # the field the mock interned, a number
CUT = "0a000000-0000-4000-8000-000000000003"
NOT_UTF8 = "0a000000-0000-4000-8000-000000000004"
TOO_DEEP = "0a000000-0000-4000-8000-000000000005"
TOO_MANY_INSTALMENTS = "0a000000-0000-4000-8000-000000000006"
LOOKUPS: dict[str, bytes] = {
    WITH_A_CPF: compact({"holder": HOLDER_CPF, **event(WITH_A_CPF)}),
    STATUS_A_NUMBER: compact(event(STATUS_A_NUMBER) | {"status": 5}),
    CUT: compact(event(CUT))[:-40],
    NOT_UTF8: compact(event(NOT_UTF8)).replace(b"early_amortization", b"early_amortiza\xe7\xe3o"),
    TOO_DEEP: b"[" * 100_000 + b"]" * 100_000,
    TOO_MANY_INSTALMENTS: compact(event(TOO_MANY_INSTALMENTS, installments=1001)),
}
DROPPED = (STATUS_A_NUMBER, CUT, NOT_UTF8, TOO_DEEP, TOO_MANY_INSTALMENTS)


async def lookup(request: Request) -> Response:
    return Response(LOOKUPS[request.path_params["key"]], media_type="application/json")


async def register(request: Request) -> Response:
    body = await request.json()
    return Response(
        compact({"account_id": body["account_id"], "event_date": EVENT_DATE}), 201, media_type="application/json"
    )


async def recipient_list(request: Request) -> Response:
    return Response(compact({"event_date": EVENT_DATE}), 201, media_type="application/json")


async def recipient_without_id(request: Request) -> Response:
    """An addition accepted, its answer without the recipient_id the recording needs."""
    return Response(
        compact({"recipient_status": "created", "event_date": EVENT_DATE}), 201, media_type="application/json"
    )


PROVIDER = Starlette(
    routes=[
        Route("/event_conciliation/extraordinary_event/{key}", lookup),
        Route("/limits/account", register, methods=["POST"]),
        Route("/limits/account/{account_id}/recipient_list", recipient_list, methods=["POST"]),
        Route("/limits/account/{account_id}/recipient_list/recipient", recipient_without_id, methods=["POST"]),
    ]
)


@dataclass
class Recorded:
    stopped: dict[str, Any]  # the stop's answer
    printed: list[str]  # what the command prints once the file is written
    logged: str  # the log at the default level (warning)
    out: Path
    map_file: Path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, specs: Specs) -> Iterator[Recorded]:
    """Every lookup above and an account flow through a recorder, then the stop."""
    directory = tmp_path_factory.mktemp("notes")
    out, map_file = directory / "sandbox.yaml", directory / "names.json"
    handler = _Kept()
    logger = logging.getLogger("mock_server")
    logger.addHandler(handler)
    try:
        with serve(PROVIDER) as url:
            options = RecordOptions(out, url, KEY, map_file)
            app = create_app(Settings(shadow=url, recording=options), specs)
            with TestClient(app, headers=ADMIN_HEADERS) as client:
                for key in LOOKUPS:
                    assert client.get(f"/event_conciliation/extraordinary_event/{key}").status_code == 200
                windows = {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 1}]}}
                registration = {"account_id": FIRST, "registration_date": EVENT_DATE, "limit": windows}
                assert client.post("/limits/account", json=registration).status_code == 201
                base = f"/limits/account/{FIRST}/recipient_list"
                assert client.post(base, json={"limit": windows}).status_code == 201
                assert client.post(f"{base}/recipient", json={"document_number": CPF}).status_code == 201
                stopped = client.post("/__mock/record/stop")
                assert stopped.status_code == 200, stopped.text
    finally:
        logger.removeHandler(handler)
    yield Recorded(stopped.json(), said(stopped.json()), "\n".join(handler.lines), out, map_file)


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


def test_nothing_said_names_an_original_or_quotes_the_targets_bytes(recorded: Recorded) -> None:
    said_everywhere = {
        "the stop's answer": json.dumps(recorded.stopped, ensure_ascii=False),
        "stdout": "\n".join(recorded.printed),
        "the log": recorded.logged,
    }
    assert recorded.logged  # the dropped calls are logged (a warning, the default level)
    for where, text in said_everywhere.items():
        for original in ORIGINALS:
            for written in layouts(original):
                assert written not in text, (where, original)
        assert "early_amortiza" not in text, where  # no excerpt of an answer either
    assert HOLDER_CPF not in recorded.out.read_text()


def test_an_answer_not_given_byte_for_byte_says_where_by_offset_and_path(recorded: Recorded) -> None:
    [unreproduced] = recorded.stopped["unreproduced_events"]
    assert unreproduced == {
        "key": WITH_A_CPF,
        "why": f"the target's answer ({len(LOOKUPS[WITH_A_CPF])} bytes) and the mock's "
        f"({len(LOOKUPS[WITH_A_CPF]) - len(HOLDER_CPF) - 12} bytes) part at byte 2, at $.<field 1> of the target's "
        "answer",
    }


def test_every_dropped_lookup_is_a_note_saying_why_in_words(recorded: Recorded) -> None:
    notes = {
        note.split(" of event ")[1].split(":")[0]: note for note in recorded.stopped["notes"] if " of event " in note
    }
    assert sorted(notes) == sorted(DROPPED)
    said = "the target's 200 answer is not an event"
    assert notes[STATUS_A_NUMBER].endswith(f"{said} a scenario can hold: $.status must be a string")
    assert "intern()" not in notes[STATUS_A_NUMBER]
    assert notes[CUT].startswith(
        f"getExtraordinaryEvent of event {CUT}: not recorded: {said}: The body is not valid JSON"
    )
    bad_byte = LOOKUPS[NOT_UTF8].index(b"\xe7")
    assert notes[NOT_UTF8].endswith(f"{said}: The body is not UTF-8: byte {bad_byte} is invalid.")
    assert notes[TOO_DEEP].endswith(
        f"{said}: The body is not acceptable JSON: it nests lists and objects deeper than 100 levels."
    )
    assert notes[TOO_MANY_INSTALMENTS].endswith(
        f"{said} a scenario can hold: $.event_conciliation_list must have at most 1000 items (it has 1001)"
    )
    assert recorded.stopped["events"] == 1  # the one with a CPF in a field of its own: recorded without it


def test_a_call_not_recorded_names_its_account_by_pseudonym(recorded: Recorded) -> None:
    names = json.loads(recorded.map_file.read_text())
    [note] = [n for n in recorded.stopped["notes"] if n.startswith("addRecipient")]
    assert note == f"addRecipient on account {names[FIRST]}: not recorded: the field recipient_id is missing"
    assert f"mock-server record: {note}" in recorded.printed
    assert f"record: {note}" in recorded.logged


def test_a_recording_that_cannot_be_written_at_exit_is_kept_elsewhere_and_said(tmp_path: Path, specs: Specs) -> None:
    from mock_server.admin.recording import finish_at_exit

    gone = tmp_path / "gone"
    gone.mkdir()
    out, map_file = gone / "sandbox.yaml", tmp_path / "names.json"
    with serve(PROVIDER) as url:
        options = RecordOptions(out, url, KEY, map_file)
        app = create_app(Settings(shadow=url, recording=options), specs)
        with TestClient(app, headers=ADMIN_HEADERS) as client:
            assert client.get(f"/event_conciliation/extraordinary_event/{WITH_A_CPF}").status_code == 200
            gone.rmdir()
            printed, errors = finish_at_exit(app.state.server)
    assert errors[0] == f"mock-server record: cannot write {out}: no such file or directory"
    kept = Path(errors[1].removeprefix("mock-server record: kept in ").removesuffix(f" instead: move it to {out}"))
    assert kept.name == "sandbox.yaml" and kept.parent != gone
    assert WITH_A_CPF in kept.read_text()
    assert printed[0] == f"mock-server record: wrote {kept} (scenario sandbox: 1 event, 0 accounts)"
    assert map_file.exists()  # written where asked: only the file that could not be is elsewhere
    shown = page_section("When the file cannot be written")[0].strip().splitlines()
    assert errors == [
        line.replace("recorded/sandbox.yaml", str(out)).replace("/tmp/mock-server-record-k1v2x3y4", str(kept.parent))
        for line in shown
    ]


PAGE = Path(__file__).resolve().parents[2] / "docs" / "recording.md"


def page_section(heading: str) -> list[str]:
    """The ```text blocks of docs/recording.md's section `## heading`."""
    import re

    page = PAGE.read_text(encoding="utf-8")
    section = page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```text\n(.*?)```", section, flags=re.S)


def test_the_pages_notes_are_what_the_recorder_says(tmp_path: Path, specs: Specs) -> None:
    """docs/recording.md's "What the recorder says": the stop's answer and stdout, replayed (paths aside)."""
    (tmp_path / "recorded").mkdir()
    out, map_file = tmp_path / "recorded" / "sandbox.yaml", tmp_path / "sandbox-names.json"
    with serve(PROVIDER) as url:
        options = RecordOptions(out, url, b"team secret", map_file)
        with TestClient(create_app(Settings(shadow=url, recording=options), specs), headers=ADMIN_HEADERS) as client:
            for key in (WITH_A_CPF, CUT):
                assert client.get(f"/event_conciliation/extraordinary_event/{key}").status_code == 200
            windows = {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 50000}]}}
            registration = {"account_id": "0003-777777", "registration_date": EVENT_DATE, "limit": windows}
            assert client.post("/limits/account", json=registration).status_code == 201
            base = "/limits/account/0003-777777/recipient_list"
            assert client.post(base, json={"limit": windows}).status_code == 201
            assert client.post(f"{base}/recipient", json={"document_number": CPF}).status_code == 201
            stopped = client.post("/__mock/record/stop", headers=ADMIN_HEADERS)
    answer, printed = page_section("What the recorder says")
    command, shown_answer = answer.strip().splitlines()
    assert command == "$ curl -s -X POST http://127.0.0.1:8000/__mock/record/stop -H 'X-Mock-Admin: 1'"

    def shown(text: str) -> str:
        return text.replace(f"{tmp_path}/", "")

    assert shown(stopped.text) == shown_answer
    assert [shown(line) for line in said(stopped.json())] == printed.strip().splitlines()
