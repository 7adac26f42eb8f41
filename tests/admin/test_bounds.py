"""Issue 16 items 3 and 7 through HTTP: what a session may hold is capped (409 capacity_exceeded), the journal
is bounded in bytes and can be off, big bodies are kept cut, and the admin token's rules."""

from __future__ import annotations

import os

import pytest

from mock_server import cli
from mock_server.state.bounds import Bounds
from mock_server.state.journal import JOURNAL_BODY_BYTES
from tests.helpers import assert_error

WINDOWS = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 500000}]}}
EVENT = {
    "security_key": "3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
    "investment_key": "6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
    "amortization_type": "early_amortization",
    "total_expected_amount": 500.00,
    "reference_date": "2026-11-01",
    "due_date": "2026-11-30",
}
EVENT_KEY = "7d3c2b1a-0f9e-4d8c-8b7a-6f5e4d3c2b1a"
CPFS = ["123.456.789-09", "111.444.777-35", "529.982.247-25"]


def _register(http, account_id: str):
    return http.post(
        "/limits/account",
        json={"account_id": account_id, "registration_date": "2026-11-21T09:00:00-03:00", "limit": WINDOWS},
    )


def _event(index: int) -> dict[str, object]:
    key = f"0c7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d{index:02d}"
    return {**EVENT, "event_conciliation_list": [{"event_conciliation_key": key, "installment_key": key}]}


def test_accounts_a_session_registers_are_capped(make_client):
    with make_client(bounds=Bounds(max_accounts=2)) as http:
        assert _register(http, "a-1").status_code == 201
        assert _register(http, "a-2").status_code == 201
        body = assert_error(_register(http, "a-3"), 409, "capacity_exceeded")
        assert "--max-accounts" in body["message"]
        assert http.get("/__mock/accounts/a-3").status_code == 404
        # another session has its own room; a reset gives the room back
        assert _register(http, "a-3").status_code != 201
        assert _register_in(http, "other", "a-3").status_code == 201
        http.post("/__mock/reset")
        assert _register(http, "a-3").status_code == 201


def _register_in(http, session: str, account_id: str):
    return http.post(
        "/limits/account",
        json={"account_id": account_id, "registration_date": "2026-11-21T09:00:00-03:00", "limit": WINDOWS},
        headers={"X-Mock-Session": session},
    )


def test_the_scenarios_own_accounts_do_not_count(make_client):
    with make_client(bounds=Bounds(max_accounts=1)) as http:
        assert http.get("/__mock/accounts/0001-123456").status_code == 200  # the seed holds two
        assert _register(http, "a-1").status_code == 201


def test_events_a_session_creates_are_capped(make_client):
    with make_client(bounds=Bounds(max_events=1)) as http:
        assert http.post("/__mock/events", json=_event(1)).status_code == 201
        assert_error(http.post("/__mock/events", json=_event(2)), 409, "capacity_exceeded")


def test_recipients_a_session_adds_are_capped_and_removal_gives_room_back(make_client):
    with make_client(bounds=Bounds(max_recipients=2)) as http:
        assert _register(http, "a-1").status_code == 201
        recipients = "/limits/account/a-1/recipient_list"
        assert (
            http.post(recipients, json={"limit": {"pix": {"transaction": WINDOWS["pix"]["withdraw"]}}}).status_code
            == 201
        )
        first = http.post(f"{recipients}/recipient", json={"document_number": CPFS[0]})
        assert first.status_code == 201
        assert http.post(f"{recipients}/recipient", json={"document_number": CPFS[1]}).status_code == 201
        assert_error(http.post(f"{recipients}/recipient", json={"document_number": CPFS[2]}), 409, "capacity_exceeded")
        assert http.delete(f"{recipients}/recipient/{first.json()['recipient_id']}").status_code == 204
        assert http.post(f"{recipients}/recipient", json={"document_number": CPFS[2]}).status_code == 201


def test_armed_faults_are_capped_in_number_and_in_body_bytes(make_client):
    with make_client(bounds=Bounds(max_faults=2)) as http:
        fault = {"operation_id": "getExtraordinaryEvent", "status": 503, "times": None}
        assert http.post("/__mock/faults", json=fault).status_code == 201
        assert http.post("/__mock/faults", json=fault).status_code == 201
        assert_error(http.post("/__mock/faults", json=fault), 409, "capacity_exceeded")
        assert http.delete("/__mock/faults").status_code == 204
        big = {**fault, "body": {"pad": "x" * 600_000}}
        assert http.post("/__mock/faults", json=big).status_code == 201
        assert_error(http.post("/__mock/faults", json=big), 409, "capacity_exceeded")


def test_the_journal_keeps_a_big_body_cut_with_the_marker(make_client):
    with make_client() as http:
        big = '{"account_id": "' + "x" * (3 * JOURNAL_BODY_BYTES) + '"}'
        answer = http.post("/limits/account", content=big, headers={"Content-Type": "application/json"})
        assert answer.status_code == 400
        (entry,) = http.get("/__mock/requests").json()["requests"]
        assert entry["truncated"] == ["request_body"]
        assert entry["request_body"].endswith(f"[truncated: {len(big)} bytes in all]")
        assert len(entry["request_body"]) < JOURNAL_BODY_BYTES + 100


def test_the_journal_is_bounded_in_bytes_per_session(make_client):
    with make_client(bounds=Bounds(journal_bytes=64 * 1024)) as http:
        pad = "x" * 4000
        for index in range(100):
            http.post("/limits/account", json={"account_id": f"a-{index}", "pad": pad})
        kept = http.get("/__mock/requests").json()["requests"]
        assert 0 < len(kept) < 100
        assert sum(len(str(e["request_body"])) for e in kept) <= 64 * 1024
        assert kept[-1]["request_body"]["account_id"] == "a-99"


def test_the_journal_off_answers_409_and_the_api_works_on(make_client):
    with make_client(bounds=Bounds(journal_bytes=0)) as http:
        assert _register(http, "a-1").status_code == 201
        assert_error(http.get("/__mock/requests"), 409, "journal_off")
        assert http.delete("/__mock/requests").status_code == 204


def test_a_non_ascii_admin_token_matches_a_utf8_client(make_client):
    with make_client(admin_token="sésamo") as http:
        assert http.get("/__mock/clock").status_code == 401
        assert http.get("/__mock/clock", headers={"Authorization": "Bearer sésamo".encode()}).status_code == 200
        assert http.get("/__mock/clock", headers={"Authorization": "Bearer sesamo"}).status_code == 401


def test_an_empty_authorization_never_passes(make_client):
    with make_client(admin_token="s3cret") as http:
        assert http.get("/__mock/clock", headers={"Authorization": "Bearer"}).status_code == 401
        assert http.get("/__mock/clock", headers={"Authorization": "Bearer "}).status_code == 401


@pytest.mark.parametrize("how", ["flag", "environment", "blank"])
def test_an_empty_admin_token_is_refused_at_start(how, monkeypatch, capsys):
    """The command's own argument handling, in process: it stops before anything is served."""
    for name in [name for name in os.environ if name.startswith("MOCK_SERVER_")]:
        monkeypatch.delenv(name)
    args = ["--port", "0"]
    if how == "flag":
        args += ["--admin-token", ""]
    elif how == "environment":
        monkeypatch.setenv("MOCK_SERVER_ADMIN_TOKEN", "")
    else:
        args += ["--admin-token", "   "]
    monkeypatch.setattr(cli, "serve", lambda settings: pytest.fail("served with an empty admin token"))
    with pytest.raises(SystemExit) as exited:
        cli.main(args)
    assert exited.value.code == 2
    printed = capsys.readouterr()
    assert "admin-token" in printed.err
    assert "is empty" in printed.err
    assert printed.out == ""


def test_an_error_echoes_a_bounded_part_of_a_huge_request(make_client):
    unknown = {f"key{index}_{'x' * 80}": 1 for index in range(10_000)}  # about 0.9 MB of unknown keys
    body = {"account_id": "a-1", "registration_date": "2026-11-21T09:00:00-03:00", "limit": WINDOWS, **unknown}
    with make_client() as http:
        answer = http.post("/limits/account", json=body)
        assert_error(answer, 400, "invalid_request")
        assert len(answer.content) < 40 * 1024, len(answer.content)
        assert "more problems not listed" in answer.text
        huge_id = http.post("/limits/account", json={**body, "account_id": "y" * 500_000})
        assert len(huge_id.content) < 40 * 1024


# --- issue 24: instalments per event (the spec's maxItems) ------------------------------------------------


def _event_with_instalments(count: int) -> dict[str, object]:
    keys = [
        {
            "event_conciliation_key": f"00000000-0000-4000-8000-{i:012d}",
            "installment_key": f"10000000-0000-4000-8000-{i:012d}",
        }
        for i in range(count)
    ]
    return {**EVENT, "event_conciliation_list": keys}


def test_an_event_with_more_instalments_than_the_spec_allows_is_a_400_naming_the_bound(client):
    body = assert_error(client.post("/__mock/events", json=_event_with_instalments(6500)), 400, "invalid_request")
    assert body["details"][0] == {
        "field": "event_conciliation_list",
        "message": "must have at most 1000 items (it has 6500)",
    }
    assert client.post("/__mock/events", json=_event_with_instalments(1000)).status_code == 201


def test_a_state_document_with_an_event_of_too_many_instalments_is_a_400(client):
    event = {**_event_with_instalments(1001), "extraordinary_event_conciliation_key": EVENT_KEY}
    body = assert_error(client.put("/__mock/state", json={"events": [event]}), 400, "invalid_request")
    assert [d["field"] for d in body["details"]] == ["events[0].event_conciliation_list"]
