"""The pytest plugin over TLS (issue 27): `--mock-server-tls mutual` (or `https`) serves the in-process server with
test certificates made for the run, and `pix_mock.pki` hands the test their files, for the code under test to load
as it loads the real service's. Run the way an integrator runs it: pytester writes a project, pytest runs it in a
subprocess with the plugin from the installed package's entry point."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INI = """
[pytest]
filterwarnings = error
addopts = -p no:cacheprovider
"""

MUTUAL = """
import ssl

import httpx
import pytest

EVENT = "/event_conciliation/extraordinary_event/9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"


def client_for(pix_mock, variant=""):
    # the code under test: its TLS set-up from files, as for the real service
    tls = ssl.create_default_context(cafile=pix_mock.pki.ca)
    if variant is not None:
        tls.load_cert_chain(*pix_mock.pki.client(variant))
    return httpx.Client(base_url=pix_mock.url, verify=tls)


def test_the_good_certificate_is_journaled_and_verified(pix_mock):
    assert pix_mock.url.startswith("https://127.0.0.1:")
    with client_for(pix_mock) as client:
        assert client.get(EVENT).status_code == 200
    assert pix_mock.verify("getExtraordinaryEvent", client_cnpj=pix_mock.pki.cnpj, times=1)["matched"] == 1
    assert pix_mock.requests()[0]["client_certificate"]["cnpj"] == "12345678000195"


def test_another_institution_fails_the_verification(pix_mock):
    with client_for(pix_mock, "other-cnpj") as client:
        assert client.get(EVENT).status_code == 200
    with pytest.raises(AssertionError, match="client CNPJ 12345678000195"):
        pix_mock.verify("getExtraordinaryEvent", client_cnpj=pix_mock.pki.cnpj)


@pytest.mark.parametrize("variant", ["expired", "unknown-ca", None])
def test_a_bad_or_missing_certificate_is_refused_at_the_handshake(pix_mock, variant):
    with client_for(pix_mock, variant) as client, pytest.raises(httpx.TransportError, match="alert"):
        client.get(EVENT)
    assert pix_mock.requests() == []  # the helper's own client holds the good certificate


def test_the_helpers_client_is_already_set_up(pix_mock):
    assert pix_mock.client.get(EVENT).status_code == 200
    assert pix_mock.verify("getExtraordinaryEvent", client_cnpj="12.345.678/0001-95")["matched"] == 1
"""

HTTPS = """
import ssl

import httpx


def test_https_asks_for_no_client_certificate(pix_mock):
    with httpx.Client(base_url=pix_mock.url, verify=ssl.create_default_context(cafile=pix_mock.pki.ca)) as client:
        assert client.get("/event_conciliation/extraordinary_event/9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11").is_success
    assert pix_mock.verify("getExtraordinaryEvent", client_cnpj=None, times=1)["matched"] == 1


def test_plain_http_is_refused(pix_mock):
    plain = pix_mock.url.replace("https://", "http://")
    answer = httpx.get(plain + "/__mock/health")
    assert answer.status_code == 400 and answer.json()["code"] == "https_required"
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("URL", "SCENARIO", "FIXTURES", "SEED", "CLOCK", "ADMIN_TOKEN", "KEEP_FAILED", "TLS"):
        monkeypatch.delenv(f"MOCK_SERVER_{name}", raising=False)
    pytester.makeini(INI)
    return pytester


@pytest.mark.own_protocol  # the client certificate reaching the journal is the protocol's
def test_mutual_tls_in_process_with_the_certificates_handed_to_the_test(project):
    project.makepyfile(test_api=MUTUAL)
    result = project.runpytest_subprocess("--mock-server-tls", "mutual", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["mock-server: in-process *; over mutual TLS"])


def test_https_from_the_environment_under_xdist(project, monkeypatch):
    project.makepyfile(test_api=HTTPS)
    monkeypatch.setenv("MOCK_SERVER_TLS", "https")
    project.runpytest_subprocess("-n", "2").assert_outcomes(passed=2)


def test_an_unknown_tls_mode_is_a_usage_error(project):
    project.makepyfile(test_api=HTTPS)
    result = project.runpytest_subprocess("--mock-server-tls", "yes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mock-server-tls 'yes': give one of https, mutual*"])
