"""http/tls.py in process: the server context the TLS options make (and the clear error when a file cannot serve),
and the ASGI TLS extension built from a real handshake, run over memory buffers (no socket: the e2e tier runs it
over the network with curl, httpx and openssl)."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from mock_server.http.connection import GuardedHttpProtocol, TlsHttpProtocol, protocol_class
from mock_server.http.tls import TlsSetupError, server_context, tls_extension
from mock_server.pki import TestPki
from mock_server.state.bounds import ConnectionLimits


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> tuple[ssl.SSLObject, ssl.SSLObject]:
    """A TLS handshake between two SSLObjects over memory BIOs; raises the ssl error either side hits."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_in, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_side = client.wrap_bio(to_client, to_server, server_hostname="localhost")
    server_side = server.wrap_bio(server_in, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(10):
        for name, side in (("client", client_side), ("server", server_side)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
        server_in.write(to_server.read())
        to_client.write(server_out.read())
        if all(done.values()):
            return client_side, server_side
    raise AssertionError("the handshake did not finish")


def client_context(pki: TestPki, variant: str | None = "") -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=pki.ca)
    if variant is not None:
        context.load_cert_chain(*pki.client(variant))
    return context


def test_mutual_tls_hands_the_client_certificate_to_the_asgi_extension(test_pki):
    server = server_context(test_pki.server_cert, test_pki.server_key, test_pki.ca, "required")
    _, server_side = handshake(server, client_context(test_pki))
    extension = tls_extension(server_side)
    [certificate] = extension["client_cert_chain"]
    assert certificate == test_pki.client()[0].read_text()  # the PEM, as the ASGI TLS extension gives it
    assert extension["client_cert_name"].startswith("CN=Banco Exemplo S.A.,serialNumber=12345678000195,")
    assert extension["tls_version"] == 0x0304
    assert extension["client_cert_error"] is None


def test_without_a_client_ca_no_certificate_is_asked_for(test_pki):
    server = server_context(test_pki.server_cert, test_pki.server_key)
    _, server_side = handshake(server, client_context(test_pki))
    assert tls_extension(server_side)["client_cert_chain"] == []
    assert tls_extension(server_side)["client_cert_name"] is None


def test_optional_lets_a_client_come_without_a_certificate_but_not_with_an_untrusted_one(test_pki):
    server = server_context(test_pki.server_cert, test_pki.server_key, test_pki.ca, "optional")
    _, server_side = handshake(server, client_context(test_pki, None))
    assert tls_extension(server_side)["client_cert_chain"] == []
    with pytest.raises(ssl.SSLError, match=r"CERTIFICATE_VERIFY_FAILED|unknown ca"):
        handshake(server, client_context(test_pki, "unknown-ca"))


def test_the_server_speaks_http_1_1_by_alpn_and_nothing_older_than_tls_1_2(test_pki):
    server = server_context(test_pki.server_cert, test_pki.server_key)
    client = client_context(test_pki, None)
    client.set_alpn_protocols(["h2", "http/1.1"])
    client_side, _ = handshake(server, client)
    assert client_side.selected_alpn_protocol() == "http/1.1"
    # (this machine's OpenSSL refuses TLS 1.1 on the client side already: a handshake would prove nothing)
    assert server.minimum_version == ssl.TLSVersion.TLSv1_2


def test_a_certificate_file_holding_its_key_needs_no_tls_key(test_pki, tmp_path):
    both = tmp_path / "both.pem"
    both.write_text(test_pki.server_cert.read_text() + test_pki.server_key.read_text())
    assert server_context(both, None).verify_mode == ssl.CERT_NONE


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (("missing.pem", "server-key.pem", None), "--tls-cert missing.pem: no such file"),
        (("server.pem", "missing.pem", None), "--tls-key missing.pem: no such file"),
        (("server.pem", "server-key.pem", "missing.pem"), "--client-ca missing.pem: no such file"),
        (("server.pem", "client-key.pem", None), "the key must match the certificate"),
        (("server-key.pem", "server-key.pem", None), "not a PEM certificate and its private key"),
        (("server.pem", None, None), "without --tls-key the certificate file must hold the key too"),
        (("server.pem", "server-key.pem", "README.md"), "--client-ca README.md: no PEM CA certificate in it"),
    ],
)
def test_a_file_that_cannot_serve_is_named_with_the_reason(test_pki, monkeypatch, files, message):
    monkeypatch.chdir(test_pki.directory)
    cert, key, ca = (None if name is None else Path(name) for name in files)
    assert cert is not None
    with pytest.raises(TlsSetupError) as error:
        server_context(cert, key, ca)
    assert message in str(error.value)


def test_plain_http_runs_the_protocol_it_always_ran():
    plain = protocol_class(ConnectionLimits())
    assert issubclass(plain, GuardedHttpProtocol) and not issubclass(plain, TlsHttpProtocol)
    assert issubclass(protocol_class(ConnectionLimits(), tls=True), TlsHttpProtocol)


@pytest.mark.own_protocol  # the idle connection's drop at the stop is TlsHttpProtocol.shutdown's
def test_a_tls_server_stops_without_waiting_for_an_idle_client(test_pki):
    """An idle kept-alive client never sends close_notify: the stop used to wait for it until the graceful-shutdown
    bound (10 s) ran out, the server thread still alive after it."""
    import threading

    import httpx

    from mock_server.app import create_app
    from mock_server.server import Server
    from mock_server.settings import Settings

    settings = Settings(port=0, tls_cert=test_pki.server_cert, tls_key=test_pki.server_key, shutdown_timeout=30.0)
    context = server_context(test_pki.server_cert, test_pki.server_key)
    server = Server(create_app(settings), settings, context, configure_logging=False)
    url = server.start(10)
    with httpx.Client(verify=client_context(test_pki, None)) as idle:
        assert idle.get(url + "/__mock/health").status_code == 200  # its connection kept alive, then left idle
        stopping = threading.Thread(target=server.stop, kwargs={"wait": True})
        stopping.start()
        stopping.join(timeout=8)  # under the 30 s bound given above: the stop waits for no idle client
        assert not stopping.is_alive(), "the stop waited for the idle client's close_notify"
