"""`make cluster-test`: nginx ending mutual TLS in front of the mock (scripts/cluster.py --tls-cert --tls-key
--client-ca), the documented alternative to the mock's own mutual TLS (docs/tls.md): nginx verifies the client
certificate and forwards it in X-Client-Cert; the mock, told `--client-cert-header X-Client-Cert`, journals it.

Not part of `make test` (marker `cluster`): it needs nginx, which the make target installs when missing.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from mock_server.pki import TestPki
from mock_server.pki import init as init_pki
from tests.default_scenario import PENDING_EVENT_PATH

pytestmark = pytest.mark.cluster

ROOT = Path(__file__).resolve().parents[2]
READY = "mock-cluster ready on "
EVENT = PENDING_EVENT_PATH


@dataclass(frozen=True)
class Proxied:
    url: str  # nginx, https
    process: str  # the mock-server behind it, plain HTTP on loopback
    pki: TestPki

    def client(self, variant: str | None = "") -> httpx.Client:
        tls = ssl.create_default_context(cafile=self.pki.ca)
        if variant is not None:
            tls.load_cert_chain(*self.pki.client(variant))
        return httpx.Client(base_url=self.url.replace("127.0.0.1", "localhost"), verify=tls, timeout=30)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.fail("nginx is not installed: run `make cluster-test`, which installs it")
    pki = init_pki(tmp_path_factory.mktemp("pki"), key_type="ec")
    command = [
        sys.executable, str(ROOT / "scripts" / "cluster.py"), "--processes", "1", "--port", str(_free_port()),
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key), "--client-ca", str(pki.ca),
    ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        line = process.stdout.readline()
        assert line.startswith(READY), f"no ready line, got {line!r} (exit {process.poll()})"
        balancer, rest = line[len(READY) :].split(" ", 1)
        (behind,) = rest.split(": ", 1)[1].rstrip(")\n").split()
        yield Proxied(balancer, behind, pki)
    finally:
        process.terminate()
        process.wait(30)
        process.stdout.close()


def test_the_client_certificate_nginx_verified_reaches_the_journal(proxied: Proxied) -> None:
    session = {"X-Mock-Session": "through-nginx"}
    with proxied.client() as client:
        assert proxied.url.startswith("https://")
        assert client.get(EVENT, headers=session).status_code == 200
        [entry] = client.get("/__mock/requests", headers=session).json()["requests"]
    assert entry["client_certificate"]["cnpj"] == proxied.pki.cnpj
    assert entry["client_certificate"]["subject"].startswith("CN=Banco Exemplo S.A.,serialNumber=12345678000195,")


def test_a_client_cannot_forge_the_header_through_nginx(proxied: Proxied) -> None:
    session = {"X-Mock-Session": "forged-through-nginx"}
    forged = quote(proxied.pki.client()[0].read_text())  # claims the good institution's certificate...
    with proxied.client("other-cnpj") as client:  # ...while presenting another's
        assert client.get(EVENT, headers={**session, "X-Client-Cert": forged}).status_code == 200
        [entry] = client.get("/__mock/requests", headers=session).json()["requests"]
    assert entry["client_certificate"]["cnpj"] == proxied.pki.other_cnpj  # nginx set the header itself


@pytest.mark.parametrize(
    ("variant", "answer"),
    [("expired", "The SSL certificate error"), ("unknown-ca", "The SSL certificate error"),
     (None, "No required SSL certificate was sent")],
)  # fmt: skip
def test_nginx_answers_a_bad_or_missing_certificate_with_its_own_400(proxied: Proxied, variant, answer) -> None:
    """Where the mock fails the handshake, nginx completes it and answers an HTML 400: what a client of a service
    behind nginx sees (docs/tls.md says so)."""
    with proxied.client(variant) as client:
        refused = client.get(EVENT)
    assert refused.status_code == 400 and answer in refused.text
