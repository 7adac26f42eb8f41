"""--mock-server-pact DIR (issue 26): the pytest plugin writes the pact of a run, one file a consumer, merged over
the sessions of the tests that passed, each distinct call once. Run the way an integrator runs it (pytester, pytest
in a subprocess, the plugin from the installed package), in process, under pytest-xdist and against a server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.default_scenario import PENDING_EVENT
from tests.live_server import LiveServer, live_server
from tests.pact_flow import pact_schema

pytest_plugins = ["pytester"]

INI = """
[pytest]
filterwarnings = error
addopts = -p no:cacheprovider
{extra}
"""
PENDING = PENDING_EVENT
PAID = "4b8e5d2f-9c1a-4f7b-8d6e-1a3c5e7f9b55"
UNKNOWN = "00000000-0000-4000-8000-000000000000"

# Three files of tests: the same lookups in several tests and files (one interaction each in the end), a consumer
# named by the marker, and a failed test whose call must stay out of the pact.
LOOKUPS = f"""
import httpx
import pytest

def lookup(pix_mock, key):
    return httpx.get(f"{{pix_mock.url}}/event_conciliation/extraordinary_event/{{key}}")

@pytest.mark.parametrize("n", range(4))
def test_pending(pix_mock, n):
    assert lookup(pix_mock, "{PENDING}").status_code == 200

def test_unknown(pix_mock):
    assert lookup(pix_mock, "{UNKNOWN}").status_code == 404

def test_no_call(pix_mock):
    pass
"""
MORE_LOOKUPS = f"""
import httpx
import pytest

def lookup(pix_mock, key):
    return httpx.get(f"{{pix_mock.url}}/event_conciliation/extraordinary_event/{{key}}")

@pytest.mark.parametrize("n", range(4))
def test_pending_again(pix_mock, n):
    assert lookup(pix_mock, "{PENDING}").status_code == 200

def test_failed(pix_mock):
    assert lookup(pix_mock, "{PAID}").status_code == 200
    assert False, "this test's calls are no contract"

@pytest.mark.mock_server(consumer="back-office")
def test_another_consumer(pix_mock):
    account = {{
        "account_id": "0003-777777",
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {{"pix": {{"withdraw": [{{"start_time": "06:00:00-03:00", "amount": 1000}}]}}}},
    }}
    assert httpx.post(f"{{pix_mock.url}}/limits/account", json=account).status_code == 201
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("URL", "SCENARIO", "FIXTURES", "SEED", "CLOCK", "ADMIN_TOKEN", "KEEP_FAILED", "PACT"):
        monkeypatch.delenv(f"MOCK_SERVER_{name}", raising=False)
    monkeypatch.delenv("MOCK_SERVER_PACT_CONSUMER", raising=False)
    monkeypatch.delenv("MOCK_SERVER_PACT_PROVIDER", raising=False)
    pytester.makeini(INI.format(extra=""))
    pytester.makepyfile(test_lookups=LOOKUPS, test_more_lookups=MORE_LOOKUPS)
    return pytester


def read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    jsonschema.validate(document, pact_schema())
    return document


def check_the_runs_pacts(directory: Path, consumer: str = "ci-consumer", provider: str = "pix-limits") -> None:
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        [f"{consumer}-{provider}.json", f"back-office-{provider}.json"]
    )
    lookups = read(directory / f"{consumer}-{provider}.json")
    assert (lookups["consumer"], lookups["provider"]) == ({"name": consumer}, {"name": provider})
    assert [i["description"] for i in lookups["interactions"]] == [  # sorted
        f"a lookup of event {UNKNOWN}, answered 404 EVC100011",
        f"a lookup of event {PENDING} (pending_conciliation), answered 200",
    ]
    assert PAID not in json.dumps(lookups)  # the failed test's call
    assert lookups["metadata"]["mockServer"]["calls"] == 9  # the passed tests' calls, each journaled once
    back_office = read(directory / f"back-office-{provider}.json")
    assert [i["description"] for i in back_office["interactions"]] == [
        "a registration of account 0003-777777, answered 201"
    ]


def test_the_runs_pact_in_process(project) -> None:
    result = project.runpytest_subprocess("--mock-server-pact", "pacts", "--mock-server-pact-consumer", "ci-consumer")
    result.assert_outcomes(passed=11, failed=1)
    check_the_runs_pacts(project.path / "pacts")
    result.stdout.fnmatch_lines(
        [
            "mock-server: in-process*; the pact of the run's calls into pacts",
            "mock-server: wrote pacts/back-office-pix-limits.json (1 interactions)",
            "mock-server: wrote pacts/ci-consumer-pix-limits.json (2 interactions)",
        ]
    )


def test_the_runs_pact_under_xdist_is_one_file_a_consumer(project, monkeypatch) -> None:
    monkeypatch.setenv("MOCK_SERVER_PACT", "out/pacts")  # the environment twin; the directory is made
    monkeypatch.setenv("MOCK_SERVER_PACT_CONSUMER", "ci-consumer")
    result = project.runpytest_subprocess("-n", "2")
    result.assert_outcomes(passed=11, failed=1)
    check_the_runs_pacts(project.path / "out" / "pacts")


@pytest.fixture
def server() -> Iterator[LiveServer]:
    with live_server() as running:
        yield running


def test_the_runs_pact_from_an_external_server_with_the_ini_twins(project, server) -> None:
    extra = "mock_server_pact = contracts\nmock_server_pact_consumer = web\nmock_server_pact_provider = bank"
    project.makeini(INI.format(extra=extra))
    result = project.runpytest_subprocess("--mock-server-url", server.url, "-n", "2")
    result.assert_outcomes(passed=11, failed=1)
    check_the_runs_pacts(project.path / "contracts", consumer="web", provider="bank")


# Turned on by the determinism test: the run's tests in the opposite order.
REVERSED = """
import os

def pytest_collection_modifyitems(items):
    if os.environ.get("REVERSE_TESTS"):
        items.reverse()
"""
# A flow whose pact holds what the provider made up: ids reused in a later path and state, instants, the date of a
# payment taken from the real clock.
FLOW = """
import httpx

ACCOUNT = "0003-888888"

def test_recipients(pix_mock):
    account = {
        "account_id": ACCOUNT,
        "registration_date": "2026-11-21T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1000}]}},
    }
    base = f"{pix_mock.url}/limits/account"
    assert httpx.post(base, json=account).status_code == 201
    on = f"{base}/{ACCOUNT}/recipient_list"
    listed = {"limit": {"pix": {"transaction": [{"start_time": "06:00:00-03:00", "amount": 500}]}}}
    assert httpx.post(on, json=listed).status_code == 201
    added = httpx.post(on + "/recipient", json={"document_number": "52998224725"}).json()
    assert httpx.delete(f"{on}/recipient/{added['recipient_id']}").status_code == 204
    assert httpx.post(f"{base}/{ACCOUNT}/limit_update_request", json={"pix": listed["limit"]["pix"]}).status_code == 201

KEY = "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"

def test_paid_today(pix_mock):
    pix_mock.pay(KEY)
    assert httpx.get(f"{pix_mock.url}/event_conciliation/extraordinary_event/{KEY}").status_code == 200
"""


def test_the_same_suite_writes_the_same_bytes_serially_and_under_xdist_in_any_order(project, monkeypatch) -> None:
    """No seed and no clock: ids, instants and the payment's date differ between the runs, the sessions' names
    and the tests' order too; the pact does not."""
    project.makeconftest(REVERSED)
    project.makepyfile(test_flow=FLOW)
    written = []
    for run, (workers, reverse) in enumerate([(None, ""), ("2", "1"), ("2", ""), (None, "1")]):
        monkeypatch.setenv("REVERSE_TESTS", reverse)
        options = ["--mock-server-pact", f"pacts{run}", "--mock-server-pact-consumer", "ci-consumer"]
        result = project.runpytest_subprocess(*options, *(["-n", workers] if workers else []))
        result.assert_outcomes(passed=13, failed=1)
        written.append((project.path / f"pacts{run}" / "ci-consumer-pix-limits.json").read_bytes())
    assert len(set(written)) == 1, "the pacts differ"
    assert b"__session" not in written[0] and b"pytest-" not in written[0]
    document = json.loads(written[0])
    (paid,) = [i for i in document["interactions"] if "(paid)" in i["description"]]
    assert paid["response"]["body"]["content"]["paid_at"] == "2026-01-01"  # the real clock's date: an example


def test_without_the_option_nothing_is_written_and_a_run_without_calls_says_so(project) -> None:
    result = project.runpytest_subprocess()
    result.assert_outcomes(passed=11, failed=1)
    assert "the pact of the run's calls" not in result.stdout.str() and "mock-server: wrote" not in result.stdout.str()
    result = project.runpytest_subprocess("--mock-server-pact", "pacts", "-k", "no_call")
    result.assert_outcomes(passed=1, deselected=11)
    result.stdout.fnmatch_lines(["mock-server: no pact written to pacts: no passed test made a call"])
    assert not (project.path / "pacts").exists()
