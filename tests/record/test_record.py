"""Record mode in process: a recorder (create_app with `recording`) in front of a reference provider served for real
on a scenario it has never seen; the client's flow, the stop, and the file a mock is then started on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.domain.documents import is_valid_document
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.recording import RecordOptions
from tests.helpers import ADMIN_HEADERS
from tests.planted_defects import serve
from tests.record.reference import (
    CNPJ,
    CPF,
    EVENTS,
    EXISTING,
    FIRST,
    IDENTIFIERS,
    NEXT_CHANGES,
    REMOVED_CPF,
    SECOND,
    Flow,
    client_flow,
    layouts,
    write_provider_fixtures,
)

CLOCK = "2026-11-21T10:00:00-03:00"
KEY = b"the team's pseudonym key"


@dataclass
class Recording:
    provider: str  # the provider's base URL
    recorder: TestClient
    out: Path
    map_file: Path
    provider_fixtures: Path


@pytest.fixture
def recording(tmp_path: Path, specs: Specs) -> Iterator[Recording]:
    fixtures = write_provider_fixtures(tmp_path / "provider")
    provider = create_app(Settings(fixtures=fixtures, scenario="sandbox", clock=_instant(CLOCK)), specs)
    out = tmp_path / "recorded" / "sandbox.yaml"
    out.parent.mkdir()
    with serve(provider) as url:
        options = RecordOptions(out, url, KEY, tmp_path / "map.json")
        app = create_app(Settings(shadow=url, recording=options, clock=_instant(CLOCK)), specs)
        with TestClient(app, headers=ADMIN_HEADERS) as client:
            yield Recording(url, client, out, tmp_path / "map.json", fixtures)


def _instant(text: str) -> Any:
    from mock_server.domain.clock import parse_instant

    return parse_instant(text)


def through(client: Any) -> Any:
    def call(method: str, path: str, body: Any) -> tuple[int, bytes]:
        response = client.request(method, path, json=body)
        return response.status_code, response.content

    return call


def recorded_flow(recording: Recording) -> tuple[Flow, dict[str, Any]]:
    flow = client_flow(through(recording.recorder))
    stopped = recording.recorder.post("/__mock/record/stop")
    assert stopped.status_code == 200, stopped.text
    return flow, stopped.json()


def mock_on(out: Path, specs: Specs) -> TestClient:
    """A mock started on the recorded file, as `mock-server --fixtures DIR --scenario NAME` would be."""
    return TestClient(create_app(Settings(fixtures=out.parent, scenario=out.stem), specs), headers=ADMIN_HEADERS)


def test_the_client_gets_the_providers_answers_and_the_stop_says_what_was_written(recording: Recording) -> None:
    flow, stopped = recorded_flow(recording)
    names = json.loads(recording.map_file.read_text())
    assert stopped == {
        "file": str(recording.out),
        "scenario": "sandbox",
        "events": 3,
        "accounts": 3,
        "partial_accounts": [names[EXISTING]],
        "pseudonym_map": str(recording.map_file),
        "unreproduced_events": [],
        "notes": [],
    }
    # Every call got the provider's answer (a recipient's id is the provider's: the removal that named it worked).
    assert [status for _, status, _ in flow.answers] == [201] * 8 + [204, 201]
    again = recording.recorder.post("/__mock/record/stop")
    assert again.json() == stopped


def test_the_recorders_session_is_in_step_and_divergences_are_journaled(recording: Recording) -> None:
    client_flow(through(recording.recorder))
    state = recording.recorder.get("/__mock/state").json()
    assert sorted(e["extraordinary_event_conciliation_key"] for e in state["events"]) == sorted(EVENTS)
    first = recording.recorder.get(f"/__mock/accounts/{FIRST}").json()
    assert first["limit"]["pix"]["withdraw"][0]["amount"] == 900000
    documents = [r["document_number"] for r in first["recipient_list"]["recipients"]]
    assert documents == [CPF, CNPJ]
    divergences = recording.recorder.get("/__mock/divergences").json()["divergences"]
    # The mock started empty: it knew neither the events nor the existing account; it agreed on the rest.
    assert [(d["operation_id"], d["backend"]["status"]) for d in divergences] == [
        ("getExtraordinaryEvent", 200),
        ("getExtraordinaryEvent", 200),
        ("getExtraordinaryEvent", 200),
        ("createLimitUpdateRequest", 201),
    ]


def test_a_mock_on_the_file_answers_like_the_provider(recording: Recording, specs: Specs) -> None:
    flow, _ = recorded_flow(recording)
    names = json.loads(recording.map_file.read_text())
    with mock_on(recording.out, specs) as mock, serve_client(recording.provider) as provider:
        for key in EVENTS:
            assert mock.get(f"/event_conciliation/extraordinary_event/{key}").content == flow.lookups[key]
        first = mock.get(f"/__mock/accounts/{names[FIRST]}").json()
        recipients = [r["document_number"] for r in first["recipient_list"]["recipients"]]
        assert recipients == [names[CPF], names[CNPJ]]
        assert mock.get(f"/__mock/accounts/{names[SECOND]}").status_code == 200
        for account_id, pix in NEXT_CHANGES.items():
            theirs = provider.post(f"/limits/account/{account_id}/limit_update_request", json={"pix": pix})
            ours = mock.post(f"/limits/account/{names[account_id]}/limit_update_request", json={"pix": pix})
            assert (ours.status_code, ours.json()["client_notification_status"]) == (
                theirs.status_code,
                theirs.json()["client_notification_status"],
            ), account_id


def serve_client(url: str) -> Any:
    import httpx

    return httpx.Client(base_url=url, timeout=10)


def test_the_file_holds_no_identifier_of_the_provider_and_every_pseudonym_is_valid(recording: Recording) -> None:
    recorded_flow(recording)
    text = recording.out.read_text()
    for identifier in IDENTIFIERS:
        for written in layouts(identifier):
            assert written not in text, identifier
    names = json.loads(recording.map_file.read_text())
    assert set(names) == {FIRST, SECOND, EXISTING, CPF, CNPJ}  # the removed recipient is not in the file
    for original in (CPF, CNPJ):
        assert is_valid_document(names[original])
        assert len(names[original]) == len(original)
        assert names[original] in text
    assert REMOVED_CPF not in names


def test_keep_identifiers_writes_the_originals(tmp_path: Path, specs: Specs) -> None:
    fixtures = write_provider_fixtures(tmp_path / "provider")
    provider = create_app(Settings(fixtures=fixtures, scenario="sandbox"), specs)
    out = tmp_path / "kept.yaml"
    with serve(provider) as url:
        options = RecordOptions(out, url, keep_identifiers=True)
        with TestClient(create_app(Settings(shadow=url, recording=options), specs), headers=ADMIN_HEADERS) as client:
            client_flow(through(client))
            stopped = client.post("/__mock/record/stop").json()
    assert stopped["partial_accounts"] == [EXISTING]
    assert stopped["pseudonym_map"] is None
    text = out.read_text()
    assert CPF in text and CNPJ in text and FIRST in text


def test_a_call_the_provider_refuses_leaves_nothing_in_the_recording(recording: Recording) -> None:
    client = recording.recorder
    windows = [{"start_time": "06:00:00-03:00", "amount": 1}]
    registration = {"account_id": EXISTING, "registration_date": CLOCK, "limit": {"pix": {"withdraw": windows}}}
    # The provider holds the account (409); the mock, started empty, registers it: the recording undoes that.
    assert client.post("/limits/account", json=registration).status_code == 409
    assert client.get(f"/__mock/accounts/{EXISTING}").status_code == 404
    listing = {"limit": {"pix": {"transaction": windows}}}
    unknown = client.post("/limits/account/9999-000000/recipient_list", json=listing)
    assert unknown.status_code == 404
    stopped = client.post("/__mock/record/stop").json()
    assert (stopped["events"], stopped["accounts"], stopped["partial_accounts"]) == (0, 0, [])


def test_stop_without_record_mode_is_not_recording(client: Any) -> None:
    response = client.post("/__mock/record/stop")
    assert response.status_code == 409
    assert response.json()["code"] == "not_recording"


def test_an_answer_the_mock_would_not_give_byte_for_byte_is_named(tmp_path: Path, specs: Specs) -> None:
    """A provider that writes `1500.00` and spaces: the event is recorded, and the stop says its answer differs."""
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    key = "3f8d6b8b-9e8a-4f0a-94f7-7e3c5c0c7d34"
    body = (
        '{"extraordinary_event_conciliation_key": "KEY", "security_key": "3a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", '
        '"investment_key": "4b2c3d4e-5f6a-4b7c-9d8e-0f1a2b3c4d5e", "amortization_type": "early_amortization", '
        '"total_expected_amount": 1500.00, "total_discount_amount": 0, "total_paid_amount": 0, '
        '"status": "pending_conciliation", "reference_date": "2026-11-01", "due_date": "2026-11-30", "paid_at": null, '
        '"event_conciliation_list": [{"event_conciliation_key": "5c3d4e5f-6a7b-4c8d-8e9f-1a2b3c4d5e6f", '
        '"installment_key": "6d4e5f6a-7b8c-4d9e-9f0a-2b3c4d5e6f7a", "event_conciliation_status": '
        '"pending_conciliation", "event_conciliation_type": "extraordinary_event"}]}'
    ).replace("KEY", key)

    async def lookup(request: Any) -> Response:
        return Response(body, media_type="application/json")

    provider = Starlette(routes=[Route("/event_conciliation/extraordinary_event/{key}", lookup)])
    out = tmp_path / "foreign.yaml"
    with serve(provider) as url:
        options = RecordOptions(out, url, KEY)
        with TestClient(create_app(Settings(shadow=url, recording=options), specs), headers=ADMIN_HEADERS) as client:
            assert client.get(f"/event_conciliation/extraordinary_event/{key}").content == body.encode()
            stopped = client.post("/__mock/record/stop").json()
    assert stopped["events"] == 1
    [unreproduced] = stopped["unreproduced_events"]
    assert unreproduced["key"] == key
    assert "part at byte 40" in unreproduced["why"]  # the space after the first colon
    with mock_on(out, specs) as mock:
        answer = mock.get(f"/event_conciliation/extraordinary_event/{key}").json()
    assert answer["total_expected_amount"] == 1500


def test_calls_in_another_session_are_answered_and_kept_in_step_but_not_written(recording: Recording) -> None:
    client = recording.recorder
    other = {"X-Mock-Session": "other"}
    registration = {
        "account_id": FIRST,
        "registration_date": CLOCK,
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}},
    }
    assert client.post("/limits/account", json=registration, headers=other).status_code == 201
    assert client.get(f"/__mock/accounts/{FIRST}", headers=other).status_code == 200
    stopped = client.post("/__mock/record/stop").json()
    assert (stopped["accounts"], stopped["partial_accounts"]) == (0, [])


def test_a_file_that_cannot_be_written_is_a_409_and_the_recording_goes_on(tmp_path: Path, specs: Specs) -> None:
    fixtures = write_provider_fixtures(tmp_path / "provider")
    provider = create_app(Settings(fixtures=fixtures, scenario="sandbox"), specs)
    gone = tmp_path / "gone"
    gone.mkdir()
    out = gone / "sandbox.yaml"
    with serve(provider) as url:
        options = RecordOptions(out, url, KEY)
        with TestClient(create_app(Settings(shadow=url, recording=options), specs), headers=ADMIN_HEADERS) as client:
            gone.rmdir()  # the directory went away during the recording
            assert client.get(f"/event_conciliation/extraordinary_event/{EVENTS[0]}").status_code == 200
            refused = client.post("/__mock/record/stop")
            assert refused.status_code == 409
            assert refused.json()["code"] == "recording_not_written"
            gone.mkdir()
            stopped = client.post("/__mock/record/stop")
    assert stopped.status_code == 200
    assert stopped.json()["events"] == 1
    assert out.exists()
