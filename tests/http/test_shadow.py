"""Shadow mode: the mock forwards each public call to a real backend (a server on 127.0.0.1), answers with the
backend's answer, and journals exactly the calls where its own answer would have differed."""

from __future__ import annotations

import gzip
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server import cli, cli_options
from mock_server.app import create_app
from mock_server.domain.answers import Answer
from mock_server.domain.operations import OPERATIONS
from mock_server.http.tls import server_context
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.divergences import Divergence, Divergences
from tests.default_scenario import CPF_NOT_IN_LIST, PAID_EVENT, PENDING_EVENT, UNKNOWN_EVENT
from tests.helpers import ADMIN_HEADERS
from tests.planted_defects import DEFECTS, clean_twin, defective, serve
from tests.provider.hostile import (
    body,
    dripping,
    endless,
    gzip_bomb,
    hostile,
    large,
    mock_over_mutual_tls,
    reset_mid_answer,
)

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
    """A client's day over the operations of the interface, errors included: (operation, status answered) per call."""
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
    called = {op for op, _ in calls}
    assert called > {"addRecipient"} and called <= set(OPERATIONS)  # others were called too: only one diverged


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
    assert divergence["backend"] == {
        "status": None,
        "body": None,
        "error": "connection refused (nothing listens there)",
    }
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
        (["--shadow", "http://127.0.0.1:1", "--shadow-header", "X-Team: 東京"], "its value Latin-1"),
        (["--shadow", "http://127.0.0.1:1", "--shadow-header", "X-Équipe: a"], "its name must be ASCII"),
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
    cli_options._check_shadow(parser, args)
    assert cli.settings_from(args).shadow_headers == (
        ("Authorization", "Bearer t"),
        ("X-Tenant", "7"),
        ("X-Trace", "on"),
    )


# --- a backend that refuses, breaks or overwhelms the call ------------------------------------------------------

LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"
SMALL_BOUND = 2 * 1024 * 1024  # --shadow-max-body 2MiB: answers of a few MB show the bound without slowing tests


def shadow_client(specs: Specs, url: str, **settings: Any) -> TestClient:
    """A client (not entered yet) of the mock in shadow mode in front of the backend at `url`."""
    settings = {"shadow_max_body": SMALL_BOUND, "shadow_timeout": 5.0, **settings}
    return TestClient(create_app(Settings(shadow=url, **settings), specs), headers=ADMIN_HEADERS)


@pytest.fixture
def shadow_of(specs: Specs) -> Iterator[Any]:
    """`shadow_of(url, **settings)`: a client of the mock in shadow mode in front of the backend at `url`."""
    stack: list[TestClient] = []

    def start(url: str, **settings: Any) -> TestClient:
        client = shadow_client(specs, url, **settings)
        stack.append(client)
        return client.__enter__()

    yield start
    for client in reversed(stack):
        client.__exit__(None, None, None)


def unreachable(client: TestClient, path: str = LOOKUP) -> str:
    """The call answered 502 backend_unreachable, journaled as a divergence: the reason the divergence gives."""
    response = client.get(path)
    assert response.status_code == 502, response.text
    assert response.json()["code"] == "backend_unreachable"
    [divergence] = divergences(client)
    assert divergence["backend"]["status"] is None and divergence["mock"]["status"] == 200
    assert divergence["differences"][0].startswith("status: expected 200, got no answer")
    reason = divergence["backend"]["error"]
    assert reason in response.json()["message"]
    return str(reason)


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        (None, "TLSV13_ALERT_CERTIFICATE_REQUIRED: the server requires a client certificate (--shadow-cert and "
               "--shadow-key)"),
        ("expired", "SSLV3_ALERT_CERTIFICATE_EXPIRED: the server refused the client certificate (--shadow-cert): "
                    "it has expired"),
        ("unknown-ca", "TLSV1_ALERT_UNKNOWN_CA: the server does not trust the CA that signed the client "
                       "certificate (--shadow-cert)"),
        ("wrong-eku", "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE: the server refused the client certificate "
                      "(--shadow-cert): it is not for client authentication (its extended key usage)"),
    ],
)  # fmt: skip
def test_a_backend_refusing_the_client_certificate_is_a_502_journaled(specs, test_pki, variant, reason) -> None:
    """A TLS alert arrives after the client's handshake, at the first read: an ssl.SSLError httpx does not wrap
    (it was a 500 internal_error)."""
    cert, key = test_pki.client(variant) if variant is not None else (None, None)
    with mock_over_mutual_tls(test_pki.server_cert, test_pki.server_key, test_pki.ca) as url:
        with shadow_client(specs, url, shadow_cacert=test_pki.ca, shadow_cert=cert, shadow_key=key) as refused:
            assert unreachable(refused) == reason
        # Each client closed before the backend stops: the good one's kept-alive TLS connection, still open, held
        # the backend's stop for its whole graceful-shutdown bound (10 s a test).
        good_cert, good_key = test_pki.client()
        with shadow_client(specs, url, shadow_cacert=test_pki.ca, shadow_cert=good_cert, shadow_key=good_key) as good:
            assert good.get(LOOKUP).status_code == 200


def test_a_backend_whose_certificate_is_not_trusted_is_a_502_naming_the_flag(shadow_of, test_pki) -> None:
    with mock_over_mutual_tls(test_pki.server_cert, test_pki.server_key, test_pki.ca) as url:
        reason = unreachable(shadow_of(url))
    assert reason.startswith("CERTIFICATE_VERIFY_FAILED: the server's certificate is not trusted: ")
    assert reason.endswith("(--shadow-cacert)")


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_a_backend_resetting_the_connection_mid_answer_is_a_502(shadow_of, test_pki, tls: bool) -> None:
    context = server_context(test_pki.server_cert, test_pki.server_key) if tls else None
    with hostile(reset_mid_answer, tls=context) as url:
        reason = unreachable(shadow_of(url, shadow_cacert=test_pki.ca))
    assert "reset" in reason or "closed" in reason or "incomplete" in reason.lower(), reason


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(large(3_000_000), id="3MB-declared"),
        pytest.param(large(3_000_000, declared=False), id="3MB-chunked"),
        pytest.param(endless, id="endless-chunked"),
        pytest.param(body(gzip_bomb(64 * 1024 * 1024), Content_Encoding="gzip"), id="64KB-gzip-bomb-of-64MB"),
    ],
)
def test_an_answer_over_the_bound_is_a_502_journaled(shadow_of, answer) -> None:
    """Read as it arrives and decompressed in steps: what a backend sends past --shadow-max-body is never held
    (the whole answer was read into memory, a gzip bomb decompressed whole, an endless answer until MemoryError)."""
    with hostile(answer) as url:
        reason = unreachable(shadow_of(url))
    assert reason.startswith("an answer that cannot be used: its body is larger than --shadow-max-body 2 MiB")


def test_a_body_that_does_not_decompress_is_a_502(shadow_of) -> None:
    with hostile(body(b"this is no gzip", Content_Encoding="gzip")) as url:
        reason = unreachable(shadow_of(url))
    assert reason.startswith("an answer that cannot be used: its gzip body does not decompress")


def test_the_deadline_is_for_the_whole_call_not_each_read(shadow_of) -> None:
    """A byte every 0.1 s never lets one read wait 0.4 s: a per-read timeout let it run for as long as it dripped
    (its 72 bytes: 7 s)."""
    with hostile(dripping(0.1)) as url:
        reason = unreachable(shadow_of(url, shadow_timeout=0.4))
    assert reason == "no whole answer within --shadow-timeout 0.4 s"


def test_a_100000_deep_answer_is_a_divergence_never_a_500(shadow_of) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with hostile(body(deep)) as url:
        client = shadow_of(url)
        response = client.get(LOOKUP)
        [divergence] = divergences(client)
    assert response.status_code == 200 and response.content == deep  # the backend's answer, as it came
    assert divergence["backend"]["status"] == 200
    assert isinstance(divergence["backend"]["body"], str)  # not JSON the mock reads: its text, cut
    assert divergence["backend"]["body"].endswith("[truncated: 200000 bytes in all]")


def test_the_backends_html_is_served_as_sandboxed_text(shadow_of) -> None:
    """A page navigated to a shadowed call must not run the backend's script on the mock's origin."""
    page = b"<html><script>fetch('/__mock/events/x/cancel', {method: 'POST'})</script></html>"
    with hostile(body(page, "text/html; charset=utf-8")) as url:
        response = shadow_of(url).get(LOOKUP)
    assert response.status_code == 200 and response.content == page
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["content-security-policy"] == "sandbox"
    assert response.headers["x-content-type-options"] == "nosniff"


def test_the_backends_json_keeps_its_type_and_is_sandboxed_too(shadowing) -> None:
    response = shadowing(clean_twin()).get(LOOKUP)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    assert response.headers["content-security-policy"] == "sandbox"


def test_what_divergences_keep_is_cut_per_body_and_per_session(shadow_of) -> None:
    """Each body kept as an excerpt of its text, and the session's divergences within a bound of bytes (four
    20 MB answers were held whole: 306 MB)."""
    with hostile(large(1_500_000)) as url:
        client = shadow_of(url)
        for _ in range(4):
            assert client.get(LOOKUP).status_code == 200  # the client gets the whole answer
        found = divergences(client)
    assert len(found) == 4
    kept = found[0]["backend"]["body"]
    assert kept.startswith('{"pad": "aaa') and kept.endswith("[truncated: 1500000 bytes in all]")
    assert len(kept) < 64 * 1024
    assert all(len(line) <= 1100 for d in found for line in d["differences"])


def test_the_divergences_of_a_session_stay_within_their_bytes() -> None:
    journal = Divergences(max_bytes=1024 * 1024)
    answer = Answer(200, {"pad": "a" * 1_000_000})
    for _ in range(100):
        journal.record(Divergence(datetime.now(UTC), "GET", "/x", "getExtraordinaryEvent", None, answer, answer,
                                  ("x" * 100_000,) * 100))  # fmt: skip
    assert journal.size_bytes <= 1024 * 1024 and 1 <= len(journal) < 100
    [entry, *_] = journal.entries()
    assert len(entry["differences"]) == 50 and entry["differences"][-1] == "... and 51 more"


def test_a_missing_shadow_tls_file_names_the_flag_and_the_path(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(cli, "serve", lambda settings: pytest.fail("served with a missing file"))
    missing = tmp_path / "client.pem"
    with pytest.raises(SystemExit) as exited:
        cli.main(["--shadow", "https://127.0.0.1:1", "--shadow-cert", str(missing)])
    assert exited.value.code == 2
    assert f"--shadow-cert {missing}: no such file" in capsys.readouterr().err


def test_a_compressed_answer_reaches_the_client_decompressed_and_compares(shadow_of, client) -> None:
    """The mock asks for gzip or deflate itself (never the client's Accept-Encoding): it reads what it passes on."""
    own = client.get(LOOKUP).content
    with hostile(body(gzip.compress(own), Content_Encoding="gzip")) as url:
        shadowed = shadow_of(url)
        response = shadowed.get(LOOKUP, headers={"Accept-Encoding": "br"})
        assert divergences(shadowed) == []
    assert response.status_code == 200 and response.content == own
    assert "content-encoding" not in response.headers
