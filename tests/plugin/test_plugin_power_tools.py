"""The `pix_mock` helpers for issue 13's power tools (verify, coverage, snapshots, state restore, schedules, the
clock's advance), used as an integrator uses them: the fixture comes from the installed package's `pytest11` entry
point, on the plugin's in-process server. What pytest prints for a failing verification is checked on a test
project run by pytester in a subprocess, as tests/e2e/test_pytest_plugin.py does."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from mock_server.pytest_plugin import MockServerError, PixMock, VerificationFailed
from tests.default_scenario import PENDING_EVENT

pytest_plugins = ["pytester"]

RECIPES = Path(__file__).resolve().parents[2] / "docs" / "from-tests.md"
PENDING = PENDING_EVENT  # default scenario: pending, 1500 expected, nothing paid
ACCOUNT = "0001-123456"  # default scenario: registered
LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING}"
PROPOSAL = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 400000}]}}
ONE_ACCOUNT = {
    "accounts": [
        {
            "account_id": "0009-000001",
            "registration_date": "2026-01-10T09:00:00-03:00",
            "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 500000}]}},
        }
    ]
}


def propose(pix_mock: PixMock, amount: int = 400000) -> int:
    body = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": amount}]}}
    return pix_mock.client.post(f"/limits/account/{ACCOUNT}/limit_update_request", json=body).status_code


def test_the_plugins_server_answers_with_the_headers_the_cli_answers_with(pix_mock: PixMock):
    """The in-process server runs with `mock-server`'s uvicorn options: no `date` or `server` header (uvicorn's
    defaults), and no access log under pytest's capture handlers, so a JSON answer leaves in one write."""
    answer = pix_mock.client.get(LOOKUP)
    assert answer.status_code == 200
    assert sorted(answer.headers) == ["content-length", "content-type"]


def test_verify_answers_the_verdict_when_it_holds(pix_mock: PixMock):
    assert propose(pix_mock, 400000) == 201
    assert propose(pix_mock, 300000) == 201
    verdict = pix_mock.verify("createLimitUpdateRequest", status=201, times=2)
    assert verdict["verified"] is True and verdict["matched"] == 2
    wanted = {"pix": {"withdraw": [{"amount": 300000}]}}
    assert pix_mock.verify("createLimitUpdateRequest", body_contains=wanted, times=1)["matched"] == 1
    assert pix_mock.verify("createLimitUpdateRequest", at_least=1, at_most=2)["matched"] == 2
    assert pix_mock.verify("createLimitUpdateRequest")["matched"] == 2  # no count: at least once
    assert pix_mock.verify("removeRecipient", times=0)["matched"] == 0


def test_a_verification_that_does_not_hold_raises_an_assertion_listing_the_calls(pix_mock: PixMock):
    assert propose(pix_mock, 400000) == 201
    assert pix_mock.client.post(f"/limits/account/{ACCOUNT}/limit_update_request", json={"pix": {}}).status_code == 400
    with pytest.raises(VerificationFailed) as failed:
        pix_mock.verify("createLimitUpdateRequest", status=201, times=2)
    assert isinstance(failed.value, AssertionError)
    assert failed.value.matched == 1
    assert [call["status"] for call in failed.value.calls] == [201, 400]  # every call of the operation
    lines = str(failed.value).splitlines()
    assert lines[0] == (
        "Verification failed: expected createLimitUpdateRequest with status 201, exactly 2 times; 1 matched "
        "(2 calls of createLimitUpdateRequest journaled)."
    )
    assert lines[1] == f"The calls of the operation the mock journaled in session {pix_mock.name}, oldest first:"
    path = f"/__session/{pix_mock.name}/limits/account/{ACCOUNT}/limit_update_request"
    assert re.fullmatch(rf"  \S+ POST {path} -> 201", lines[2])
    assert lines[3] == '      request:  {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 400000}]}}'
    assert lines[4].startswith('      response: {"limit_update_request_id": ')
    assert re.fullmatch(rf"  \S+ POST {path} -> 400", lines[5])


def test_a_verification_of_an_operation_never_called_says_none_were_seen(pix_mock: PixMock):
    with pytest.raises(VerificationFailed) as failed:
        pix_mock.verify("removeRecipient", at_least=1)
    assert failed.value.calls == []
    assert str(failed.value).splitlines()[1:] == [
        f"The calls of the operation the mock journaled in session {pix_mock.name}: none."
    ]


@pytest.mark.own_protocol  # uvicorn's own protocol answers a 500 where a `reset` fault drops the connection
def test_a_call_a_reset_fault_dropped_is_listed_as_no_answer(pix_mock: PixMock):
    pix_mock.fault("getExtraordinaryEvent", kind="reset")
    with pytest.raises(httpx.TransportError):
        pix_mock.client.get(LOOKUP)
    with pytest.raises(VerificationFailed) as failed:
        pix_mock.verify("getExtraordinaryEvent", status=200)
    assert [call["status"] for call in failed.value.calls] == [None]
    assert (
        str(failed.value)
        .splitlines()[2]
        .endswith(f"GET /__session/{pix_mock.name}{LOOKUP} -> no answer (an injected reset)")
    )


def test_verify_refuses_an_unknown_operation_and_names_the_field(pix_mock: PixMock):
    with pytest.raises(MockServerError) as refused:
        pix_mock.verify("createLimitUpdate", times=1)
    assert not isinstance(refused.value, VerificationFailed)
    assert refused.value.status == 400
    lines = str(refused.value).splitlines()
    assert lines[0] == f"POST {pix_mock.url}/__mock/verify answered 400 invalid_request: The request is invalid."
    assert lines[1].startswith("    operation_id: 'createLimitUpdate' is not one of getExtraordinaryEvent, ")


def test_verify_refuses_a_count_given_two_ways(pix_mock: PixMock):
    with pytest.raises(MockServerError) as refused:
        pix_mock.verify("addRecipient", times=1, at_least=1)
    assert (
        str(refused.value).splitlines()[1] == "    at_least: cannot be given with times (times is exactly that count)"
    )


def test_coverage_counts_this_sessions_answers_server_wide(pix_mock: PixMock):
    def answered_404() -> int:
        report = pix_mock.coverage()
        (lookup,) = [op for op in report["operations"] if op["operation_id"] == "getExtraordinaryEvent"]
        count: int = lookup["answered"].get("404", 0)
        return count

    before = answered_404()
    assert (
        pix_mock.client.get("/event_conciliation/extraordinary_event/00000000-0000-4000-8000-000000000000").status_code
        == 404
    )
    assert answered_404() == before + 1
    markdown = pix_mock.coverage_markdown()
    assert markdown.startswith("# API coverage\n")
    assert "| `getExtraordinaryEvent` GET " in markdown


def test_snapshot_restore_list_and_forget(pix_mock: PixMock):
    name = "before-cancel_1.v2"  # every character a snapshot name may hold (A-Za-z0-9._-)
    taken = pix_mock.snapshot(name)
    assert (taken["name"], taken["schedules"]) == (name, 0) and taken["events"] >= 1
    assert pix_mock.cancel(PENDING)["status"] == "canceled"
    assert pix_mock.restore(name) == taken
    assert pix_mock.client.get(LOOKUP).json()["status"] == "pending_conciliation"
    assert pix_mock.snapshots() == [taken]
    pix_mock.forget_snapshot(name)
    assert pix_mock.snapshots() == []
    with pytest.raises(MockServerError) as refused:
        pix_mock.restore(name)
    assert refused.value.status == 404
    assert str(refused.value).endswith(f"answered 404 snapshot_not_found: No snapshot named '{name}' in this session.")


def test_a_snapshot_name_outside_the_session_name_rule_is_refused_naming_it(pix_mock: PixMock):
    with pytest.raises(MockServerError) as refused:
        pix_mock.snapshot("before cancel? #1")  # spaces, ? and #: sent as one path segment, and refused
    assert refused.value.status == 400
    assert "name: must match the pattern" in str(refused.value)
    assert pix_mock.snapshots() == []


def test_load_state_takes_a_mapping_as_json_and_a_string_as_yaml(pix_mock: PixMock):
    assert pix_mock.load_state(ONE_ACCOUNT) == {"events": 0, "accounts": 1, "schedules": 0}
    state = pix_mock.state()
    assert (state["events"], state["accounts"]) == ([], ONE_ACCOUNT["accounts"])
    yaml_text = pix_mock.client.get("/__mock/state", params={"format": "yaml"}).text
    pix_mock.reset()
    assert pix_mock.state()["events"] != []
    assert pix_mock.load_state(yaml_text) == {"events": 0, "accounts": 1, "schedules": 0}
    assert pix_mock.state()["accounts"] == ONE_ACCOUNT["accounts"]


def test_load_state_of_a_bad_document_names_every_field_and_changes_nothing(pix_mock: PixMock):
    before = pix_mock.state()
    document = {"events": [{**before["events"][0], "due_date": None}], "accounts": [{"account_id": "x"}]}
    with pytest.raises(MockServerError) as refused:
        pix_mock.load_state(document)
    assert refused.value.status == 400
    fields = [line.split(":")[0].strip() for line in str(refused.value).splitlines()[1:]]
    assert "events[0].due_date" in fields and "accounts[0].registration_date" in fields
    assert pix_mock.state() == before


def test_a_schedule_after_three_lookups_pays_on_the_third(pix_mock: PixMock):
    schedule = pix_mock.schedule(PENDING, "pay", after_lookups=3)
    assert (schedule["action"], schedule["after_lookups"], schedule["state"]) == ("pay", 3, "pending")
    statuses = [pix_mock.client.get(LOOKUP).json()["status"] for _ in range(3)]
    assert statuses == ["pending_conciliation", "pending_conciliation", "paid"]
    assert [s["state"] for s in pix_mock.schedules()] == ["applied"]


@pytest.mark.mock_server(clock="2026-11-21T10:00:00-03:00")
def test_a_schedule_at_an_instant_applies_when_advance_reaches_it(pix_mock: PixMock):
    schedule = pix_mock.schedule(PENDING, "pay", amount="500.00", at="2026-11-21T11:00:00-03:00")
    assert (schedule["amount"], schedule["state"]) == (500, "pending")
    assert pix_mock.advance(1800) == {"now": "2026-11-21T10:30:00.000-03:00", "frozen": True}
    assert pix_mock.client.get(LOOKUP).json()["total_paid_amount"] == 0
    assert pix_mock.advance(timedelta(minutes=30))["now"] == "2026-11-21T11:00:00.000-03:00"
    assert pix_mock.client.get(LOOKUP).json()["total_paid_amount"] == 500


def test_a_bad_schedule_names_its_fields(pix_mock: PixMock):
    with pytest.raises(MockServerError) as refused:
        pix_mock.schedule(PENDING, "refund", after_lookups=0)
    assert str(refused.value).splitlines()[1:] == [
        "    action: 'refund' is not one of pay, cancel",
        "    after_lookups: must be at least 1 (got 0)",
    ]
    with pytest.raises(MockServerError) as refused:
        pix_mock.schedule(PENDING, "pay")
    assert str(refused.value).splitlines()[1:] == [
        "    after_lookups: give after_lookups or at: when the transition applies"
    ]
    assert pix_mock.schedules() == []


def test_advance_needs_a_frozen_clock(pix_mock: PixMock):
    with pytest.raises(MockServerError) as refused:
        pix_mock.advance(60)
    assert refused.value.status == 409
    assert str(refused.value).endswith(
        "answered 409 clock_not_frozen: The session clock runs at real time: freeze it (PUT /__mock/clock) to move it."
    )


def readme_verify_example() -> tuple[str, list[str]]:
    """The docs' pytest example of a failing verify (docs/from-tests.md): the test (a ```python block) and what it
    prints (the ```text block after it)."""
    text = RECIPES.read_text(encoding="utf-8")
    found = re.search(
        r"```python\n(?P<test>[^`]*def test_the_client_proposes_once[^`]*)```\n[^`]*```text\n(?P<shown>[^`]*)```", text
    )
    assert found, "docs/from-tests.md: the pix_mock.verify example (```python, then the ```text it prints) is gone"
    return found["test"], found["shown"].splitlines()


@pytest.mark.e2e  # starts the server or pytest in a child process
def test_the_readmes_failing_verify_prints_the_calls_it_shows(pytester: pytest.Pytester, monkeypatch):
    """The docs' example, run as written in a test project of its own: it fails, and pytest's output holds
    the lines the page shows, in order (the session name's random token written as the page writes it)."""
    for name in ("URL", "SCENARIO", "FIXTURES", "SEED", "CLOCK", "ADMIN_TOKEN", "KEEP_FAILED"):
        monkeypatch.delenv(f"MOCK_SERVER_{name}", raising=False)
    test, shown = readme_verify_example()
    pytester.makeini("[pytest]\nfilterwarnings = error\naddopts = -p no:cacheprovider\n")
    pytester.makepyfile(test_verify=test)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)
    output = re.sub(r"pytest-main-[0-9a-f]{8}-", "pytest-main-1a2b3c4d-", result.stdout.str())
    assert shown[0].startswith("E       mock_server.client.VerificationFailed: Verification failed: ")
    failure = output.splitlines()
    first = failure.index(shown[0])
    assert failure[first : first + len(shown)] == shown
    assert failure[first - 1] == '>       pix_mock.verify("createLimitUpdateRequest", status=201, times=1)'
    assert "def verify(" not in output  # the traceback stops at the test's line, not inside the plugin


def test_account_answers_one_accounts_state_and_a_missing_one_raises_clearly(pix_mock: PixMock):
    """Issue 43: a newcomer had no helper for an account's state (GET /__mock/accounts/{id})."""
    account = pix_mock.account(ACCOUNT)
    assert account == pix_mock.client.get(f"/__mock/accounts/{ACCOUNT}").json()
    assert account["account_id"] == ACCOUNT
    assert account["limit"]["pix"]["withdraw"][0] == {"start_time": "06:00:00-03:00", "amount": 500000}
    assert propose(pix_mock, 400000) == 201  # what the session did shows in the account it answers
    assert pix_mock.account(ACCOUNT) != account
    with pytest.raises(MockServerError) as missing:
        pix_mock.account("0009-999999")
    assert missing.value.status == 404 and missing.value.body["code"] == "account_not_found"
    assert str(missing.value).startswith(f"GET {pix_mock.url}/__mock/accounts/0009-999999 answered 404")
    assert "0009-999999" in str(missing.value)
