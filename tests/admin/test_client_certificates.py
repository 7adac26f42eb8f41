"""The client certificate in the journal and in `POST /__mock/verify` (`client_cnpj`), through HTTP, in process.

A certificate reaches the app in the ASGI TLS extension (what http/connection.py adds for a real TLS server, and
what any ASGI server implementing the extension gives; here a wrapper stands in for the server), or in the header
a TLS-terminating proxy on the same machine forwards it in (`--client-cert-header`). Every answer is checked
against the admin spec (validate_responses). The real handshake is tests/e2e/test_tls.py's.
"""

from __future__ import annotations

import hashlib
import ssl
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from mock_server.app import create_app
from mock_server.pki import TestPki
from mock_server.settings import Settings
from tests.default_scenario import PENDING_EVENT_PATH
from tests.helpers import assert_error

EVENT = PENDING_EVENT_PATH
HEADER = "X-Client-Cert"
LOOPBACK = ("127.0.0.1", 51000)


class WithTlsExtension:
    """An ASGI server's part, played in process: each request's scope carries the TLS extension with `pem`."""

    def __init__(self, app: ASGIApp, pem: str | None) -> None:
        self.app, self.pem = app, pem

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            chain = [self.pem] if self.pem else []
            scope["extensions"] = {"tls": {"client_cert_chain": chain, "client_cert_name": None, "tls_version": 0x0304}}
        await self.app(scope, receive, send)


def pem(pki: TestPki, variant: str = "") -> str:
    return pki.client(variant)[0].read_text()


@pytest.fixture
def behind_proxy(specs):
    """The app with --client-cert-header, called from loopback (where a local proxy calls from)."""
    app = create_app(Settings(validate_responses=True, client_cert_header=HEADER.lower()), specs)
    with TestClient(app, client=LOOPBACK) as client:
        yield client


def journal(client) -> list[dict[str, Any]]:
    response = client.get("/__mock/requests")
    assert response.status_code == 200
    entries: list[dict[str, Any]] = response.json()["requests"]
    return entries


def test_the_tls_extensions_client_certificate_is_journaled_with_its_cnpj(specs, test_pki):
    app = create_app(Settings(validate_responses=True), specs)
    with TestClient(WithTlsExtension(app, pem(test_pki))) as client:
        assert client.get(EVENT).status_code == 200
        [entry] = journal(client)
    certificate = entry["client_certificate"]
    assert certificate["cnpj"] == test_pki.cnpj
    assert certificate["organization"] == "Banco Exemplo S.A."
    assert certificate["subject"].startswith("CN=Banco Exemplo S.A.,serialNumber=12345678000195,")
    der = ssl.PEM_cert_to_DER_cert(pem(test_pki))
    assert certificate["fingerprint_sha256"] == hashlib.sha256(der).hexdigest()


def test_a_call_without_a_certificate_has_none_in_its_journal_entry(client):
    assert client.get(EVENT).status_code == 200
    assert "client_certificate" not in journal(client)[0]


def test_a_tls_connection_without_a_client_certificate_journals_none(specs):
    app = create_app(Settings(validate_responses=True), specs)
    with TestClient(WithTlsExtension(app, None)) as client:
        assert client.get(EVENT).status_code == 200
        assert "client_certificate" not in journal(client)[0]


def test_verify_counts_calls_by_client_cnpj(specs, test_pki):
    app = create_app(Settings(validate_responses=True), specs)
    good = TestClient(WithTlsExtension(app, pem(test_pki)))
    other = TestClient(WithTlsExtension(app, pem(test_pki, "other-cnpj")))
    plain = TestClient(app)
    for caller in (good, good, other, plain):
        assert caller.get(EVENT).status_code == 200
    for cnpj, matched in (
        (test_pki.cnpj, 2),
        ("12.345.678/0001-95", 2),  # punctuated: compared bare
        (test_pki.other_cnpj, 1),
        (None, 1),  # the call with no certificate
        ("11444777000161", 0),
    ):
        answer = plain.post("/__mock/verify", json={"operation_id": "getExtraordinaryEvent", "client_cnpj": cnpj})
        body = answer.json()
        assert body["matched"] == matched, (cnpj, body)
        assert answer.status_code == (200 if matched else 409)
    holds = plain.post(
        "/__mock/verify", json={"operation_id": "getExtraordinaryEvent", "client_cnpj": test_pki.cnpj, "times": 2}
    ).json()
    assert holds["message"] == (
        "Verification holds: expected getExtraordinaryEvent with client CNPJ 12345678000195, exactly 2 times; "
        "2 matched (4 calls of getExtraordinaryEvent journaled)."
    )


def test_a_failed_verification_lists_the_calls_with_their_certificates(specs, test_pki):
    app = create_app(Settings(validate_responses=True), specs)
    with TestClient(WithTlsExtension(app, pem(test_pki, "other-cnpj"))) as client:
        assert client.get(EVENT).status_code == 200
        answer = client.post(
            "/__mock/verify", json={"operation_id": "getExtraordinaryEvent", "client_cnpj": test_pki.cnpj}
        )
    assert answer.status_code == 409
    failure = answer.json()
    assert failure["message"].startswith("Verification failed: expected getExtraordinaryEvent with client CNPJ ")
    assert failure["calls"][0]["client_certificate"]["cnpj"] == test_pki.other_cnpj


@pytest.mark.parametrize(
    ("cnpj", "message"),
    [
        ("12345678000194", "is not a valid CNPJ: wrong check digits (got '12345678000194')"),
        ("1234", "must match the pattern"),
        (12345678000195, "must be a string or null"),
    ],
)
def test_a_client_cnpj_that_is_no_cnpj_is_a_400_naming_the_field(client, cnpj, message):
    answer = client.post("/__mock/verify", json={"operation_id": "getExtraordinaryEvent", "client_cnpj": cnpj})
    assert_error(answer, 400, "invalid_request")
    [detail] = answer.json()["details"]
    assert detail["field"] == "client_cnpj" and message in detail["message"]


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(quote, id="url-escaped PEM (nginx $ssl_client_escaped_cert)"),
        pytest.param(lambda text: text.replace("\n", " ").strip(), id="PEM folded onto one line"),
        pytest.param(lambda text: "".join(text.splitlines()[1:-1]), id="bare base64"),
    ],
)
def test_a_loopback_proxys_header_brings_the_certificate(behind_proxy, test_pki, encode):
    assert behind_proxy.get(EVENT, headers={HEADER: encode(pem(test_pki))}).status_code == 200
    assert journal(behind_proxy)[0]["client_certificate"]["cnpj"] == test_pki.cnpj


def test_the_header_is_ignored_from_a_peer_that_is_not_loopback(specs, test_pki):
    app = create_app(Settings(validate_responses=True, client_cert_header=HEADER.lower()), specs)
    with TestClient(app, client=("192.0.2.7", 51000)) as client:
        assert client.get(EVENT, headers={HEADER: quote(pem(test_pki))}).status_code == 200
        [entry] = journal(client)
    assert "client_certificate" not in entry  # anyone could have written it
    assert HEADER.lower() in entry["request_headers"]  # still journaled as sent


def test_the_header_is_ignored_unless_the_server_was_told_its_name(specs, test_pki):
    app = create_app(Settings(validate_responses=True), specs)
    with TestClient(app, client=LOOPBACK) as client:
        assert client.get(EVENT, headers={HEADER: quote(pem(test_pki))}).status_code == 200
        assert "client_certificate" not in journal(client)[0]


@pytest.mark.parametrize("value", ["", "not a certificate", "-----BEGIN CERTIFICATE-----%0AAAAA%0A"])
def test_an_empty_or_unreadable_header_is_a_call_without_a_certificate(behind_proxy, value, caplog):
    assert behind_proxy.get(EVENT, headers={HEADER: value}).status_code == 200
    assert "client_certificate" not in journal(behind_proxy)[0]
    if value:
        assert "does not hold a certificate" in caplog.text


def test_the_connections_own_certificate_wins_over_a_header(specs, test_pki):
    app = create_app(Settings(validate_responses=True, client_cert_header=HEADER.lower()), specs)
    with TestClient(WithTlsExtension(app, pem(test_pki)), client=LOOPBACK) as client:
        headers = {HEADER: quote(pem(test_pki, "other-cnpj"))}
        assert client.get(EVENT, headers=headers).status_code == 200
        assert journal(client)[0]["client_certificate"]["cnpj"] == test_pki.cnpj


def test_an_ipv6_loopback_and_an_ipv4_mapped_loopback_are_loopback(specs, test_pki):
    app = create_app(Settings(validate_responses=True, client_cert_header=HEADER.lower()), specs)
    for address in ("::1", "::ffff:127.0.0.1"):
        with TestClient(app, client=(address, 51000)) as client:
            client.post("/__mock/reset")
            assert client.get(EVENT, headers={HEADER: quote(pem(test_pki))}).status_code == 200
            assert journal(client)[0]["client_certificate"]["cnpj"] == test_pki.cnpj, address
