"""https and mutual TLS over real connections (issue 27): `mock-server pki init`'s certificates against a real
`mock-server --tls-cert ... --client-ca ... --client-cert required`, with real TLS clients (curl, httpx,
`openssl s_client`, schemathesis).

Each bad client certificate must fail the way a real server fails it: the same TLS alert `openssl s_server`
(OpenSSL's own server, run beside it with the same certificates) sends, as curl reports it. The good one reaches
the journal with its CNPJ and `verify` with `client_cnpj` holds. Plain HTTP to the TLS port is refused at once with a
readable answer, and a client that never starts its handshake is closed at the head's deadline.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from mock_server.domain.operations import OPERATIONS
from mock_server.pki import BAD_VARIANTS, TestPki
from mock_server.pki import init as init_pki
from tests.default_scenario import PENDING_EVENT_PATH
from tests.live_server import LiveServer, closed_within, live_server, read_response, server_env

REPOSITORY = Path(__file__).resolve().parents[2]
EVENT = PENDING_EVENT_PATH
TIMEOUT = 60.0
# What curl prints for each refusal (OpenSSL's alert names): a bare "Empty reply from server" says nothing.
ALERTS = {
    "expired": "alert certificate expired",
    "not-yet-valid": "alert bad certificate",
    "unknown-ca": "alert unknown ca",
    "wrong-eku": "alert unsupported certificate",
    None: "alert certificate required",  # no certificate at all
}
REFUSED = [name for name in ALERTS if name is not None]
assert {v.name for v in BAD_VARIANTS} == {*REFUSED, "other-cnpj"}  # every bad variant but the good chain is here


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> TestPki:
    return init_pki(tmp_path_factory.mktemp("pki"))  # RSA 2048, as the command makes it by default


def tls_args(pki: TestPki, client_cert: str | None = "required") -> tuple[str, ...]:
    args: tuple[str, ...] = ("--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key))
    if client_cert is not None:
        args += ("--client-ca", str(pki.ca), "--client-cert", client_cert)
    return args


@pytest.fixture(scope="module")
def mtls(pki) -> Iterator[LiveServer]:
    with live_server(*tls_args(pki), "--header-timeout", "2") as server:
        yield server


def https_url(server: LiveServer, path: str = "") -> str:
    return f"https://localhost:{server.port}{path}"  # the name the server certificate carries


def context(pki: TestPki, variant: str | None = "") -> ssl.SSLContext:
    """httpx's TLS set-up (0.28: `verify=` an SSLContext, the client certificate loaded into it)."""
    tls = ssl.create_default_context(cafile=pki.ca)
    if variant is not None:
        tls.load_cert_chain(*pki.client(variant))
    return tls


def client(server: LiveServer, pki: TestPki, variant: str | None = "") -> httpx.Client:
    return httpx.Client(base_url=https_url(server), verify=context(pki, variant), timeout=10.0)


def curl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args], capture_output=True, text=True, timeout=TIMEOUT)


def curl_client(pki: TestPki, variant: str | None, url: str, *more: str) -> subprocess.CompletedProcess[str]:
    cert = () if variant is None else ("--cert", str(pki.client(variant)[0]), "--key", str(pki.client(variant)[1]))
    return curl("--cacert", str(pki.ca), *cert, *more, url)


@contextmanager
def openssl_s_server(pki: TestPki) -> Iterator[int]:
    """OpenSSL's own test server with the same certificates, asking for a client certificate as the mock does."""
    command = [
        "openssl", "s_server", "-www", "-accept", "127.0.0.1:0", "-cert", str(pki.server_cert), "-key",
        str(pki.server_key), "-CAfile", str(pki.ca), "-Verify", "1", "-verify_return_error",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert process.stdout is not None
        port = None
        deadline = time.monotonic() + 10
        while port is None and time.monotonic() < deadline:
            line = process.stdout.readline().decode()
            match = re.match(r"ACCEPT 127\.0\.0\.1:(\d+)", line)
            port = int(match[1]) if match else None
            if not line:
                break
        assert port is not None, "openssl s_server did not start"
        yield port
    finally:
        process.kill()
        process.communicate(timeout=10)  # reads and closes its stdout


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """curl's error line without what differs between two servers (nothing but the port, when any)."""
    assert result.returncode != 0, result.stdout
    return re.sub(r":\d{2,5}\b", ":PORT", result.stderr.strip())


# --- the handshake ------------------------------------------------------------------------------------------


def test_each_bad_client_certificate_is_refused_with_the_alert_openssl_s_server_sends(mtls, pki):
    with openssl_s_server(pki) as reference_port:
        for variant in REFUSED:
            mock = refusal(curl_client(pki, variant, https_url(mtls, "/__mock/health")))
            reference = refusal(curl_client(pki, variant, f"https://localhost:{reference_port}/"))
            assert ALERTS[variant] in mock, (variant, mock)
            assert mock == reference, variant


@pytest.mark.parametrize("variant", REFUSED)
def test_httpx_reads_the_alert_of_each_refusal(mtls, pki, variant):
    with client(mtls, pki, variant) as refused, pytest.raises(httpx.TransportError) as error:
        refused.get("/__mock/health")
    reason = ALERTS[None if variant is None else variant].removeprefix("alert ").replace(" ", "_").upper()
    assert reason in str(error.value), str(error.value)


@pytest.mark.parametrize("variant", REFUSED)
def test_openssl_s_client_reads_the_alert_of_each_refusal(mtls, pki, variant):
    cert = [] if variant is None else ["-cert", str(pki.client(variant)[0]), "-key", str(pki.client(variant)[1])]
    result = subprocess.run(
        # -ign_eof: wait for the server's answer (here its alert) after the request, not only for stdin's end
        ["openssl", "s_client", "-ign_eof", "-connect", f"127.0.0.1:{mtls.port}", "-CAfile", str(pki.ca), *cert],
        input="GET /__mock/health HTTP/1.1\r\nHost: localhost\r\n\r\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert ALERTS[variant] in result.stderr.replace("_", " ").lower(), result.stderr
    assert "HTTP/1.1 200" not in result.stdout


def test_openssl_s_client_with_the_good_certificate_talks_http_over_it(mtls, pki):
    cert, key = pki.client()
    result = subprocess.run(
        ["openssl", "s_client", "-quiet", "-connect", f"127.0.0.1:{mtls.port}", "-CAfile", str(pki.ca),
         "-cert", str(cert), "-key", str(key)],
        input="GET /__mock/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )  # fmt: skip
    assert result.stdout.startswith("HTTP/1.1 200 OK"), result.stdout + result.stderr
    assert result.stdout.rstrip().endswith('{"status":"ok","scenario":"default"}')


def test_a_client_that_does_not_trust_the_test_ca_refuses_the_server(mtls):
    result = curl(https_url(mtls, "/__mock/health"))
    assert result.returncode == 60 and "certificate" in result.stderr  # curl: peer verification failed


# --- the good certificate: the journal, verify, the whole API -------------------------------------------------


@pytest.mark.own_protocol  # the client certificate reaching the journal is the protocol's
def test_the_good_client_reaches_the_journal_with_its_cnpj_and_verify_holds(mtls, pki):
    with client(mtls, pki) as good, client(mtls, pki, "other-cnpj") as other:
        session = {"X-Mock-Session": "tls-journal"}
        assert good.post("/__mock/reset", headers=session).status_code == 200
        assert good.get(EVENT, headers=session).status_code == 200
        assert other.get(EVENT, headers=session).status_code == 200
        [first, second] = good.get("/__mock/requests", headers=session).json()["requests"]
        assert first["client_certificate"]["cnpj"] == pki.cnpj
        assert first["client_certificate"]["organization"] == "Banco Exemplo S.A."
        assert second["client_certificate"]["cnpj"] == pki.other_cnpj  # a good chain: refused by no handshake
        der = ssl.PEM_cert_to_DER_cert(pki.client()[0].read_text())
        assert first["client_certificate"]["fingerprint_sha256"] == hashlib.sha256(der).hexdigest()
        holds = good.post(
            "/__mock/verify",
            headers=session,
            json={"operation_id": "getExtraordinaryEvent", "client_cnpj": pki.cnpj, "times": 1},
        )
        assert holds.status_code == 200, holds.text
        fails = good.post(
            "/__mock/verify",
            headers=session,
            json={"operation_id": "getExtraordinaryEvent", "client_cnpj": pki.cnpj, "times": 2},
        )
        assert fails.status_code == 409


@pytest.mark.own_protocol  # the client certificate reaching the journal is the protocol's
def test_curl_with_the_good_certificate_gets_answers_and_is_journaled(mtls, pki):
    session = ("-H", "X-Mock-Session: tls-curl")
    assert curl_client(pki, "", https_url(mtls, "/__mock/reset"), "-X", "POST", *session).returncode == 0
    answer = curl_client(pki, "", https_url(mtls, EVENT), *session)
    assert answer.returncode == 0 and json.loads(answer.stdout)["status"] == "pending_conciliation"
    journal = json.loads(curl_client(pki, "", https_url(mtls, "/__mock/requests"), *session).stdout)
    assert journal["requests"][0]["client_certificate"]["cnpj"] == pki.cnpj


@pytest.mark.own_protocol  # the client certificate reaching the journal is the protocol's
def test_schemathesis_over_mutual_tls_replays_every_example_of_both_specs(mtls, pki):
    """The whole API over mutual TLS: every operation of both specs, with their examples, by another client."""
    cert, key = pki.client()
    session = "tls-schemathesis"
    # the admin spec's examples reset and clear their session: they get one of their own
    for spec, in_session in (("admin/openapi.yaml", "tls-schemathesis-admin"), ("openapi.yaml", session)):
        result = subprocess.run(
            [str(Path(sys.executable).parent / "st"), "run", spec, "--url", https_url(mtls), "--tls-verify",
             str(pki.ca), "--request-cert", str(cert), "--request-cert-key", str(key), "--phases", "examples",
             "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,"
             "response_schema_conformance", "--header", f"X-Mock-Session: {in_session}", "--max-redirects", "0"],
            cwd=REPOSITORY,
            env={**os.environ, "SCHEMATHESIS_HOOKS": "mock_server.schemathesis_hooks", "PYTHONPATH": str(REPOSITORY)},
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    with client(mtls, pki) as good:
        journal = good.get("/__mock/requests", headers={"X-Mock-Session": session}).json()["requests"]
    operations = {entry["operation_id"] for entry in journal}
    assert operations == set(OPERATIONS), operations  # every public operation was called over mutual TLS...
    assert {entry["client_certificate"]["cnpj"] for entry in journal} == {pki.cnpj}  # ...with the good certificate


@pytest.mark.own_protocol  # the client certificate reaching the journal is the protocol's
def test_an_injected_reset_drops_the_tls_connection_and_is_journaled_with_the_certificate(mtls, pki):
    session = {"X-Mock-Session": "tls-reset"}
    with client(mtls, pki) as good:
        assert good.post("/__mock/reset", headers=session).status_code == 200
        fault = {"operation_id": "getExtraordinaryEvent", "kind": "reset"}
        assert good.post("/__mock/faults", headers=session, json=fault).status_code == 201
        with pytest.raises(httpx.TransportError):
            good.get(EVENT, headers=session)
        [entry] = good.get("/__mock/requests", headers=session).json()["requests"]
    assert entry["status"] is None and entry["client_certificate"]["cnpj"] == pki.cnpj


# --- plain HTTP, silence, options -----------------------------------------------------------------------------


def test_plain_http_to_the_tls_port_gets_a_400_in_plain_http_at_once(mtls):
    started = time.monotonic()
    with mtls.connect(timeout=5) as sock:
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        status, headers, body = read_response(sock, timeout=5)
        assert closed_within(sock, 5)
    assert time.monotonic() - started < 5
    assert status == 400 and headers["connection"] == "close"
    assert json.loads(body) == {
        "code": "https_required",
        "message": "This port speaks HTTPS: the request was sent as plain HTTP.",
    }
    answer = curl(f"http://localhost:{mtls.port}/__mock/health", "-i")
    assert answer.returncode == 0 and answer.stdout.startswith("HTTP/1.1 400 Bad Request")


def test_a_client_that_never_starts_its_handshake_is_closed_at_the_head_deadline(mtls):
    with mtls.connect(timeout=10) as sock:
        started = time.monotonic()
        assert closed_within(sock, 8)  # --header-timeout 2 (asyncio's own handshake deadline is 60 s)
        assert 1.5 < time.monotonic() - started < 8


def test_optional_client_certificates_admit_a_client_without_one_but_no_untrusted_one(pki):
    env = server_env(
        MOCK_SERVER_TLS_CERT=str(pki.server_cert),  # the options' environment twins
        MOCK_SERVER_TLS_KEY=str(pki.server_key),
        MOCK_SERVER_CLIENT_CA=str(pki.ca),
        MOCK_SERVER_CLIENT_CERT="optional",
    )
    with live_server(env=env) as server:
        assert server.url.startswith("https://")
        with client(server, pki, None) as anonymous:
            assert anonymous.get(EVENT).status_code == 200
            assert "client_certificate" not in anonymous.get("/__mock/requests").json()["requests"][0]
            verified = anonymous.post(
                "/__mock/verify", json={"operation_id": "getExtraordinaryEvent", "client_cnpj": None}
            )
            assert verified.status_code == 200
        assert ALERTS["unknown-ca"] in refusal(curl_client(pki, "unknown-ca", https_url(server, "/__mock/health")))
        assert ALERTS["expired"] in refusal(curl_client(pki, "expired", https_url(server, "/__mock/health")))


@pytest.mark.own_protocol  # the client certificate reaching the journal is the protocol's
def test_client_cnpj_serves_its_institutions_and_closes_on_another_right_after_the_handshake(pki):
    """--client-cnpj: the other institution's certificate, well chained, gets no answer: the connection ends before
    any request is read (Python's ssl can fail no handshake it verified, nor send an alert after it). The good
    client, named punctuated, is served and journaled; MOCK_SERVER_CLIENT_CNPJ is its environment twin."""
    punctuated = f"{pki.cnpj[:2]}.{pki.cnpj[2:5]}.{pki.cnpj[5:8]}/{pki.cnpj[8:12]}-{pki.cnpj[12:]}"
    for server_args, env in (
        ((*tls_args(pki), "--client-cnpj", punctuated), server_env()),
        (tls_args(pki), server_env(MOCK_SERVER_CLIENT_CNPJ=pki.cnpj)),
    ):
        with live_server(*server_args, env=env) as server:
            with client(server, pki, "other-cnpj") as other, pytest.raises(httpx.TransportError):
                other.get(EVENT)
            refused = curl_client(pki, "other-cnpj", https_url(server, EVENT))
            assert refused.returncode != 0 and not refused.stdout, refused
            with client(server, pki) as good:
                assert good.get(EVENT).status_code == 200
                journal = good.get("/__mock/requests").json()["requests"]
            assert [entry["client_certificate"]["cnpj"] for entry in journal] == [pki.cnpj]


def test_https_without_client_ca_asks_for_no_certificate(pki):
    with live_server(*tls_args(pki, client_cert=None)) as server:
        answer = curl_client(pki, None, https_url(server, "/__mock/health"))
        assert answer.returncode == 0 and json.loads(answer.stdout)["status"] == "ok"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--client-ca", "ca.pem"), "argument --client-ca needs --tls-cert"),
        (("--tls-cert", "server.pem", "--client-cert", "required"), "argument --client-cert needs --client-ca"),
        (("--tls-cert", "server.pem", "--tls-key", "client-key.pem"), "the key must match the certificate"),
        (("--tls-cert", "nowhere.pem"), "--tls-cert nowhere.pem: no such file"),
        (("--client-cert-header", "X Client"), "is not a header name"),
        (("--tls-cert", "server.pem", "--client-cnpj", "12345678000195"), "argument --client-cnpj needs --client-ca"),
        (("--tls-cert", "server.pem", "--client-ca", "ca.pem", "--client-cnpj", "12345678000199"), "is not a CNPJ"),
    ],
)
def test_options_that_cannot_serve_are_usage_errors_naming_the_problem(pki, args, message):
    result = subprocess.run(
        [sys.executable, "-m", "mock_server", "--port", "0", *args],
        cwd=pki.directory,
        env=server_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_client_cert_mode_from_the_environment_is_a_usage_error(pki):
    result = probe("--port", "0", *tls_args(pki, None), env=server_env(MOCK_SERVER_CLIENT_CERT="sometimes"))
    assert result.returncode == 2
    assert (
        "variable MOCK_SERVER_CLIENT_CERT (read as --client-cert): 'sometimes' is not one of required, optional"
        in result.stderr
    )


# --- probes -----------------------------------------------------------------------------------------------------


def probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mock_server", *args],
        env=env or server_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_wait_reaches_a_mutual_tls_server_with_its_ca_and_a_client_certificate(mtls, pki):
    cert, key = pki.client()
    url = https_url(mtls)
    done = probe("wait", url, "--cacert", str(pki.ca), "--cert", str(cert), "--key", str(key), "--timeout", "10")
    assert done.returncode == 0 and done.stdout.strip() == url
    refused = probe("wait", url, "--cacert", str(pki.ca), "--timeout", "1")
    assert refused.returncode == 1 and "requires a client certificate" in refused.stderr


def test_healthcheck_reads_the_servers_tls_variables_and_its_own_client_certificate(mtls, pki):
    cert, key = pki.client()
    env = server_env(MOCK_SERVER_PORT=str(mtls.port), MOCK_SERVER_TLS_CERT=str(pki.server_cert))
    without = probe("healthcheck", env=env)
    assert without.returncode == 1 and "requires a client certificate" in without.stderr
    env.update(MOCK_SERVER_HEALTHCHECK_CERT=str(cert), MOCK_SERVER_HEALTHCHECK_KEY=str(key))
    assert probe("healthcheck", env=env).returncode == 0


def test_the_ready_line_says_https(mtls):
    assert mtls.ready.group(0).startswith(f"mock-server ready on https://127.0.0.1:{mtls.port} ")


def test_a_raw_tls_connection_sees_http_1_1_offered_by_alpn(mtls, pki):
    tls = context(pki)
    tls.set_alpn_protocols(["h2", "http/1.1"])
    with (
        socket.create_connection(("127.0.0.1", mtls.port), timeout=10) as raw,
        tls.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        assert sock.selected_alpn_protocol() == "http/1.1"
        sock.sendall(b"GET /__mock/health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        status, _, body = read_response(sock)
    assert status == 200 and json.loads(body)["status"] == "ok"
