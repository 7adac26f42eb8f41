"""Pact's own verifier (pact-python 4.2, offline) on a pact the mock exported: a flow through the seven operations
on one real server, exported with GET /__mock/pact, verified against a fresh server of another run (other ids,
another clock) with the state handler POST /__mock/pact/states."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import planted_defects
from tests.default_scenario import PENDING_EVENT_PATH
from tests.live_server import LiveServer, live_server, run_command
from tests.pact_flow import CONSUMER, PROVIDER, flow_descriptions, pact_recipient_id, run_flow

pact = pytest.importorskip("pact", reason="the [pact] extra (pact-python) is not installed")

EXPORTED_BY = ("--seed", "1")  # what `make run` serves, clock running
VERIFIED_ON = ("--seed", "424242", "--clock", "2031-05-06T07:08:09Z")  # another run: other ids, another time


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    # pact's core reports usage over the network unless told not to: every test here stays on loopback.
    monkeypatch.setenv("PACT_DO_NOT_TRACK", "true")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any], str]]:
    """The pact of the flow, as a file; its document; the recipient id the flow's run generated."""
    with live_server(*EXPORTED_BY) as server, server.client() as client:
        run_flow(client)
        response = client.get("/__mock/pact", params={"consumer": CONSUMER, "provider": PROVIDER})
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    recipient_id = pact_recipient_id(document)
    path = tmp_path_factory.mktemp("pacts") / f"{CONSUMER}-{PROVIDER}.json"
    path.write_text(json.dumps(document, indent=2))
    yield path, document, recipient_id


def verifier(server_url: str, source: Path) -> Any:
    return (
        pact.Verifier(PROVIDER, host="127.0.0.1")
        .add_transport(url=server_url)
        .add_source(str(source))
        .state_handler(f"{server_url}/__mock/pact/states", body=True)
        .set_coloured_output(enabled=False)
    )


def verify(server_url: str, source: Path) -> tuple[bool, str]:
    """Whether the pact verified, and what the verifier said."""
    run = verifier(server_url, source)
    try:
        run.verify()
    except RuntimeError:
        return False, run.output(strip_ansi=True)
    return True, run.output(strip_ansi=True)


@pytest.fixture(scope="module")
def other_run() -> Iterator[LiveServer]:
    with live_server(*VERIFIED_ON) as server:
        yield server


def test_the_flows_pact_verifies_against_a_fresh_mock_of_another_run(exported, other_run) -> None:
    path, document, recipient_id = exported
    assert document["metadata"]["pactSpecification"]["version"].startswith("4.")
    assert [i["description"] for i in document["interactions"]] == sorted(flow_descriptions(recipient_id))
    verified, output = verify(other_run.url, path)
    assert verified, output
    for description in flow_descriptions(recipient_id):
        assert f"  {description} (" in output, description
    assert "Given event 00000000-0000-4000-8000-000000000000 does not exist" in output
    assert output.count("has status code") == 13 and "FAILED" not in output


def test_the_ids_and_instants_of_the_other_run_differ_so_the_matchers_are_what_lets_it_pass(
    exported, other_run, tmp_path
) -> None:
    """The control: the same pact without its matching rules fails against the other run, on what that run made
    up itself (its recipient and proposal ids, its event_date instants)."""
    _, document, _ = exported
    literal = copy.deepcopy(document)
    for interaction in literal["interactions"]:
        for part in ("request", "response"):
            interaction[part].pop("matchingRules", None)
    bare = tmp_path / "literal.json"
    bare.write_text(json.dumps(literal))
    verified, output = verify(other_run.url, bare)
    assert not verified
    assert "$.event_date" in output and "$.recipient_id" in output and "$.limit_update_request_id" in output


def test_the_same_pact_verifies_twice_on_one_server(exported, other_run) -> None:
    """Each interaction starts afresh: a second verification against the server the first one used passes too."""
    path, _, _ = exported
    assert verify(other_run.url, path)[0]
    assert verify(other_run.url, path)[0]


def test_a_state_handler_refusal_fails_the_verification(exported, tmp_path) -> None:
    """A provider that cannot be put in a state fails: a pact naming an account of the scenario as unregistered."""
    _, document, _ = exported
    broken = copy.deepcopy(document)
    (registration,) = [
        i for i in broken["interactions"] if i["description"] == "a registration of account 0003-777777, answered 201"
    ]
    registration["providerStates"] = [
        {"name": "account 0001-123456 is not registered", "params": {"account_id": "0001-123456"}}
    ]
    registration["request"]["body"]["content"]["account_id"] = "0001-123456"
    source = tmp_path / "broken.json"
    source.write_text(json.dumps({**broken, "interactions": [registration]}))
    with live_server(*VERIFIED_ON) as server:
        verified, output = verify(server.url, source)
    assert not verified, output


# --- planted behaviour defects (tests/planted_defects.py, issue 25): the pact fails against each it can see -------

# The schema-valid defects the flow's pact catches: a status, a code or a status word it keeps literal. Left out,
# and why: an amount off (total-paid-off-by-a-cent, event-amounts-in-cents) passes, amounts are matched by type;
# a change not applied (limit-change-not-applied, list-limit-not-applied, limit-amount-in-reais) passes, each
# interaction's states are set up by the handler, not by the calls before it; the flow makes no invalid
# registration nor a list change before the list (invalid-registration-accepted, list-limit-before-list-wrong-code).
CAUGHT = (
    "unknown-key-answers-another-event",
    "canceled-instalments-pending",
    "duplicate-account-accepted",
    "duplicate-account-wrong-code",
    "notification-never-awaited",
    "second-list-accepted",
    "duplicate-document-accepted",
    "bare-layout-not-recognised",
    "recipient-pending-analysis",
    "removal-removes-nothing",
    "unknown-recipient-removed",
)


def test_the_pact_verifies_against_the_planted_providers_clean_twin(exported) -> None:
    """The control of the planted providers: the mock behind the same wrapping, with other ids and instants."""
    path, _, _ = exported
    with planted_defects.serve(planted_defects.clean_twin()) as url:
        verified, output = verify(url, path)
    assert verified, output


@pytest.mark.parametrize("name", CAUGHT)
def test_the_pact_fails_against_a_planted_behaviour_defect(exported, name) -> None:
    path, _, _ = exported
    defect = next(d for d in planted_defects.DEFECTS if d.name == name)
    assert defect.schema_valid  # a behaviour defect: every answer it gives still matches the spec
    with planted_defects.serve(planted_defects.defective(defect)) as url:
        verified, output = verify(url, path)
    assert not verified, f"{name} ({defect.what}) went unnoticed:\n{output}"
    assert "Failures:" in output


def test_amounts_asked_exact_fail_a_provider_answering_them_in_cents(tmp_path) -> None:
    """By default an amount is matched by type, so a provider answering 150000 for 1500.00 passes; the pact with
    `amounts=exact` holds the amounts literally, and the same provider fails it."""
    with live_server(*EXPORTED_BY) as server, server.client() as client:
        assert client.get(PENDING_EVENT_PATH).is_success
        pacts = {}
        for amounts in ("type", "exact"):
            query = {"consumer": CONSUMER, "provider": PROVIDER, "amounts": amounts}
            pacts[amounts] = tmp_path / f"{amounts}.json"
            pacts[amounts].write_text(client.get("/__mock/pact", params=query).text)
    cents = next(d for d in planted_defects.DEFECTS if d.name == "event-amounts-in-cents")
    with planted_defects.serve(planted_defects.defective(cents)) as url:
        by_type, by_type_output = verify(url, pacts["type"])
        exact, exact_output = verify(url, pacts["exact"])
    assert by_type, by_type_output
    assert not exact, exact_output
    assert "total_expected_amount" in exact_output
    with planted_defects.serve(planted_defects.clean_twin()) as url:
        assert verify(url, pacts["exact"])[0]  # the control: a provider answering reais passes the exact pact


# --- mock-server pact: the same document fetched from a running server ------------------------------------------


def test_the_cli_writes_the_sessions_pact_into_a_directory(tmp_path) -> None:
    with live_server(*EXPORTED_BY) as server, server.client(headers={"X-Mock-Session": "job-7"}) as client:
        run_flow(client)
        served = client.get("/__mock/pact", params={"consumer": CONSUMER, "provider": PROVIDER}).json()
        argv = ["pact", "--url", server.url, "--consumer", CONSUMER, "--provider", PROVIDER, "--session", "job-7"]
        done = run_command(*argv, "-o", str(tmp_path))
        refused = run_command(*argv[:-1], "bad session!")
    written = tmp_path / f"{CONSUMER}-{PROVIDER}.json"
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"wrote {written}: 13 interactions between {CONSUMER} and {PROVIDER} (Pact 4.0)\n"
    assert json.loads(written.read_text()) == served
    assert [i["description"] for i in served["interactions"]] == sorted(flow_descriptions(pact_recipient_id(served)))
    assert refused.returncode == 1 and refused.stdout == ""
    assert "answered 400" in refused.stderr and "X-Mock-Session" in refused.stderr


def test_the_cli_says_why_when_no_server_answers(tmp_path) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    argv = ["pact", "--url", f"http://127.0.0.1:{port}", "--consumer", "c", "--provider", "p", "-o", str(tmp_path)]
    done = run_command(*argv)
    assert done.returncode == 1
    assert "connection refused" in done.stderr
    assert list(tmp_path.iterdir()) == []
