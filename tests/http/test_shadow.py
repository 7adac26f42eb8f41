"""Shadow mode: the mock forwards each public call to a real backend (a server on 127.0.0.1), answers with the
backend's answer, and journals exactly the calls where its own answer would have differed."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server import cli
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import CPF_NOT_IN_LIST, PAID_EVENT, PENDING_EVENT, UNKNOWN_EVENT
from tests.helpers import ADMIN_HEADERS
from tests.planted_defects import DEFECTS, clean_twin, defective, serve

ACCOUNT = "shadow-0001"
WINDOWS = [{"start_time": "06:00:00-03:00", "amount": 100000}]
OTHER_CPF = "123.456.789-09"


@pytest.fixture
def shadowing(specs: Specs) -> Iterator[Any]:
    """`shadowing(backend_app)`: a client of the mock in shadow mode in front of `backend_app` served for real."""
    stack: list[Any] = []

    def start(backend: Any, **settings: Any) -> TestClient:
        served = serve(backend)
        url = served.__enter__()
        stack.append(served)
        client = TestClient(
            create_app(Settings(shadow=url, validate_responses=True, **settings), specs), headers=ADMIN_HEADERS
        )
        stack.append(client)
        return client.__enter__()

    yield start
    for item in reversed(stack):
        item.__exit__(None, None, None)


def every_operation(client: TestClient) -> list[tuple[str, int]]:
    """A client's day over the seven operations, errors included: (operation, status answered) per call."""
    calls = []

    def call(operation: str, method: str, path: str, body: Any = None) -> Any:
        response = client.request(method, path, json=body)
        calls.append((operation, response.status_code))
        return response

    lookup = "/event_conciliation/extraordinary_event/"
    call("getExtraordinaryEvent", "GET", lookup + PENDING_EVENT)
    call("getExtraordinaryEvent", "GET", lookup + PAID_EVENT)
    call("getExtraordinaryEvent", "GET", lookup + UNKNOWN_EVENT)
    registration = {
        "account_id": ACCOUNT,
        "registration_date": "2026-11-21T10:00:00-03:00",
        "limit": {"pix": {"withdraw": WINDOWS}},
    }
    call("registerAccountLimit", "POST", "/limits/account", registration)
    call("registerAccountLimit", "POST", "/limits/account", registration)
    base = f"/limits/account/{ACCOUNT}"
    call("createLimitUpdateRequest", "POST", f"{base}/limit_update_request", {"pix": {"withdraw": WINDOWS}})
    call("createRecipientList", "POST", f"{base}/recipient_list", {"limit": {"pix": {"transaction": WINDOWS}}})
    added = call("addRecipient", "POST", f"{base}/recipient_list/recipient", {"document_number": CPF_NOT_IN_LIST})
    call("addRecipient", "POST", f"{base}/recipient_list/recipient", {"document_number": OTHER_CPF})
    call(
        "createRecipientListLimitUpdateRequest",
        "POST",
        f"{base}/recipient_list/limit_update_request",
        {"pix": {"transaction": WINDOWS}},
    )
    call("removeRecipient", "DELETE", f"{base}/recipient_list/recipient/{added.json()['recipient_id']}")
    call("removeRecipient", "DELETE", f"{base}/recipient_list/recipient/{added.json()['recipient_id']}")
    return calls


def divergences(client: TestClient, **query: str) -> list[dict[str, Any]]:
    response = client.get("/__mock/divergences", params=query)
    assert response.status_code == 200
    return list(response.json()["divergences"])


def test_exactly_the_calls_of_the_diverging_operation_are_journaled(shadowing) -> None:
    backend = next(d for d in DEFECTS if d.name == "recipient-pending-analysis")  # diverges on addRecipient only
    client = shadowing(defective(backend))
    calls = every_operation(client)
    found = divergences(client)
    added = [status for operation, status in calls if operation == "addRecipient"]
    assert added == [201, 201]
    assert [d["operation_id"] for d in found] == ["addRecipient", "addRecipient"]
    for divergence in found:
        assert divergence["differences"] == ['/recipient_status: expected "created", got "pending_analysis"']
        assert divergence["mock"]["body"]["recipient_status"] == "created"
        assert divergence["backend"]["body"]["recipient_status"] == "pending_analysis"
        assert divergence["request_body"]["document_number"] in (CPF_NOT_IN_LIST, OTHER_CPF)
    assert len({op for op, _ in calls}) == 7  # every operation was called, only one diverged


def test_the_client_gets_the_backends_answers(shadowing) -> None:
    backend = next(d for d in DEFECTS if d.name == "duplicate-account-accepted")
    client = shadowing(defective(backend))
    statuses = dict(enumerate(status for _, status in every_operation(client)))
    assert statuses[4] == 201  # the backend accepted the duplicate: the client sees it
    [divergence] = divergences(client)
    assert divergence["operation_id"] == "registerAccountLimit"
    assert divergence["mock"]["status"] == 409 and divergence["backend"]["status"] == 201
    assert divergence["differences"] == ["status: expected 409, got 201"]
    journal = client.get("/__mock/requests").json()["requests"]
    assert journal[4]["status"] == 201  # the journal shows what the client got


def test_a_backend_that_agrees_leaves_nothing_and_its_ids_are_mapped(shadowing) -> None:
    """The clean twin generates other ids: the removal names the backend's recipient id, read as the mock's."""
    client = shadowing(clean_twin())
    calls = every_operation(client)
    assert divergences(client) == []
    assert calls[-2:] == [("removeRecipient", 204), ("removeRecipient", 404)]


def test_a_defect_only_a_later_call_shows_is_journaled_on_that_call(shadowing) -> None:
    backend = next(d for d in DEFECTS if d.name == "removal-removes-nothing")
    client = shadowing(defective(backend))
    every_operation(client)
    [divergence] = divergences(client)
    assert divergence["operation_id"] == "removeRecipient"
    assert divergence["differences"] == ["status: expected 404, got 204"]  # the second removal


def test_an_unreachable_backend_is_a_502_and_a_divergence(specs: Specs) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app(Settings(shadow=f"http://127.0.0.1:{port}", shadow_timeout=2.0), specs)
    with TestClient(app) as client:
        response = client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}")
        assert response.status_code == 502
        assert response.json()["code"] == "backend_unreachable"
        [divergence] = divergences(client)
    assert divergence["backend"] == {"status": None, "body": None, "error": "connection refused (nothing listens there)"}
    assert divergence["mock"]["status"] == 200


def test_an_injected_fault_answers_before_the_backend_is_asked(shadowing) -> None:
    backend = next(d for d in DEFECTS if d.name == "event-without-paid-at")
    client = shadowing(defective(backend))
    client.post("/__mock/faults", json={"operation_id": "getExtraordinaryEvent", "status": 503}).raise_for_status()
    assert client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}").status_code == 503
    assert divergences(client) == []
    assert client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}").status_code == 200
    assert [d["operation_id"] for d in divergences(client)] == ["getExtraordinaryEvent"]


def test_divergences_are_per_session_filtered_cleared_and_reset(shadowing) -> None:
    backend = next(d for d in DEFECTS if d.name == "total-paid-off-by-a-cent")
    client = shadowing(defective(backend))
    lookup = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
    client.get(lookup, headers={"X-Mock-Session": "a"})
    client.get(lookup)
    assert len(divergences(client)) == 1
    assert divergences(client, operation_id="addRecipient") == []
    assert len(client.get("/__mock/divergences", headers={"X-Mock-Session": "a"}).json()["divergences"]) == 1
    assert client.delete("/__mock/divergences").status_code == 204
    assert divergences(client) == []
    client.get(lookup)
    client.post("/__mock/reset").raise_for_status()
    assert divergences(client) == []


def test_without_shadow_mode_there_is_no_backend_and_no_divergence(client) -> None:
    response = client.get("/__mock/divergences")
    assert response.status_code == 200
    assert response.json() == {"backend": None, "divergences": []}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shadow", "ftp://backend"], "is not an http:// or https:// base URL"),
        (["--shadow", "http://127.0.0.1:1", "--shadow-header", "nocolon"], "is not a header"),
        (["--shadow", "http://127.0.0.1:1", "--shadow-key", "k.pem"], "--shadow-key goes with --shadow-cert"),
        (["--shadow", "https://127.0.0.1:1", "--shadow-cacert", "/nonexistent.pem"], "TLS files cannot be used"),
    ],
)
def test_wrong_shadow_options_are_usage_errors(capsys, monkeypatch, args: list[str], message: str) -> None:
    monkeypatch.setattr(cli, "serve", lambda settings: pytest.fail("served with wrong shadow options"))
    with pytest.raises(SystemExit) as exited:
        cli.main(args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_shadow_headers_reach_the_backend(shadowing) -> None:
    from tests.provider.test_verify_provider import NeedsToken

    client = shadowing(NeedsToken(clean_twin()), shadow_headers=(("Authorization", "Bearer sandbox"),))
    assert client.get(f"/event_conciliation/extraordinary_event/{PENDING_EVENT}").status_code == 200
    assert divergences(client) == []


def test_shadow_headers_come_from_the_variable_one_a_line_then_the_flags(monkeypatch) -> None:
    monkeypatch.setenv("MOCK_SERVER_SHADOW_HEADER", "Authorization: Bearer t\nX-Tenant: 7\n")
    parser = cli._parser()
    args = parser.parse_args(["--shadow", "http://127.0.0.1:1", "--shadow-header", "X-Trace: on"])
    cli._check_shadow(parser, args)
    assert cli.settings_from(args).shadow_headers == (
        ("Authorization", "Bearer t"),
        ("X-Tenant", "7"),
        ("X-Trace", "on"),
    )
