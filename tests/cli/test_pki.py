"""`mock-server pki init DIR`: what each certificate it writes is, read back with `cryptography` and judged by
cryptography's own X.509 path validation for a TLS client (the handshake itself is tests/e2e/test_tls.py's)."""

from __future__ import annotations

import datetime as dt
import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import Criticality, ExtensionPolicy, PolicyBuilder, Store, VerificationError

from mock_server import cli
from mock_server.pki import BAD_VARIANTS, DEFAULT_CNPJ, VARIANTS, TestPki, init, other_cnpj

NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> TestPki:
    return init(tmp_path_factory.mktemp("pki"), "12.345.678/0001-95", key_type="ec", now=NOW)


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def serial_number(cert: x509.Certificate) -> str:
    return str(cert.subject.get_attributes_for_oid(NameOID.SERIAL_NUMBER)[0].value)


def client_verdict(pki: TestPki, variant: str, at: dt.datetime = NOW) -> str:
    """What a TLS server's path validation against ca.pem makes of the client certificate: "ok" or the error."""
    # The web PKI's policy, but for a SAN: institution certificates name their holder in the subject (OpenSSL, as a
    # TLS server, asks for none either).
    leaf_policy = ExtensionPolicy.webpki_defaults_ee().may_be_present(
        x509.SubjectAlternativeName, Criticality.AGNOSTIC, None
    )
    builder = PolicyBuilder().store(Store([load(pki.ca)])).time(at)
    verifier = builder.extension_policies(
        ca_policy=ExtensionPolicy.webpki_defaults_ca(), ee_policy=leaf_policy
    ).build_client_verifier()
    try:
        verifier.verify(load(pki.client(variant)[0]), [])
    except VerificationError as exc:
        return str(exc)
    return "ok"


def test_every_file_is_written_and_keys_are_private(pki):
    for path in pki.files():
        assert path.is_file(), path
        if path.name.endswith("-key.pem"):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert len({v.stem for v in VARIANTS}) == len(VARIANTS) == 6


def test_the_good_client_carries_the_cnpj_bare_as_serial_number_and_is_valid_now(pki):
    cert = load(pki.client()[0])
    assert serial_number(cert) == "12345678000195"
    assert cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == "Banco Exemplo S.A."
    assert cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value == x509.ExtendedKeyUsage(
        [ExtendedKeyUsageOID.CLIENT_AUTH]
    )
    assert client_verdict(pki, "") == "ok"
    assert cert.not_valid_before_utc < NOW < cert.not_valid_after_utc


@pytest.mark.parametrize(
    ("variant", "reason"),
    [
        ("expired", "not valid at validation time"),
        ("not-yet-valid", "not valid at validation time"),
        ("unknown-ca", "candidates exhausted"),
        ("wrong-eku", "required eku not found"),
    ],
)
def test_each_bad_variant_fails_path_validation_for_its_own_reason(pki, variant, reason):
    assert reason in client_verdict(pki, variant).lower()
    cert = load(pki.client(variant)[0])
    if variant == "expired":
        assert cert.not_valid_after_utc < NOW
    if variant == "not-yet-valid":
        assert cert.not_valid_before_utc > NOW


def test_the_other_institution_is_a_good_chain_with_another_cnpj(pki):
    cert = load(pki.client("other-cnpj")[0])
    assert serial_number(cert) == pki.other_cnpj == other_cnpj("12345678000195") != pki.cnpj
    assert client_verdict(pki, "other-cnpj") == "ok"


def test_bad_variants_differ_from_the_good_one_only_where_they_say(pki):
    good = load(pki.client()[0])
    for variant in BAD_VARIANTS:
        cert = load(pki.client(variant.name)[0])
        if variant.name != "other-cnpj":
            assert cert.subject == good.subject, variant.name
        if variant.name != "unknown-ca":
            assert cert.issuer == good.issuer, variant.name


def test_the_server_certificate_names_localhost_and_both_loopbacks(pki):
    cert = load(pki.server_cert)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    verifier = PolicyBuilder().store(Store([load(pki.ca)])).time(NOW).build_server_verifier(x509.DNSName("localhost"))
    verifier.verify(cert, [])  # raises when a TLS client would refuse it


def test_keys_are_rsa_2048_unless_ec_is_asked(tmp_path):
    rsa_pki = init(tmp_path / "rsa", DEFAULT_CNPJ)
    key = load(rsa_pki.client()[0]).public_key()
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048
    ec_pki = init(tmp_path / "ec", DEFAULT_CNPJ, key_type="ec")
    assert isinstance(load(ec_pki.client()[0]).public_key(), ec.EllipticCurvePublicKey)


def test_the_readme_names_every_file_and_the_cnpjs(pki):
    readme = (pki.directory / "README.md").read_text()
    for path in pki.files()[:-1]:
        assert f"`{path.name}`" in readme, path.name
    assert "serialNumber=12345678000195" in readme and pki.other_cnpj in readme


def test_the_command_writes_a_pki_and_says_what_each_file_is(tmp_path, capsys):
    assert cli.main(["pki", "init", str(tmp_path / "pki"), "--cnpj", "11222333000181", "--key-type", "ec"]) == 0
    out = capsys.readouterr().out
    assert "the good client's CNPJ: 11222333000181" in out
    for variant in VARIANTS:
        assert f"{variant.stem}.pem {variant.stem}-key.pem" in out
    assert serial_number(load(tmp_path / "pki" / "client-other-cnpj.pem")) != "11222333000181"


def test_the_command_refuses_to_overwrite_an_earlier_pki_without_force(tmp_path, capsys):
    directory = tmp_path / "pki"
    assert cli.main(["pki", "init", str(directory), "--key-type", "ec"]) == 0
    before = (directory / "ca.pem").read_bytes()
    assert cli.main(["pki", "init", str(directory), "--key-type", "ec"]) == 2
    assert "exists already" in capsys.readouterr().err
    assert (directory / "ca.pem").read_bytes() == before
    assert cli.main(["pki", "init", str(directory), "--key-type", "ec", "--force"]) == 0
    assert (directory / "ca.pem").read_bytes() != before


@pytest.mark.parametrize("cnpj", ["12345678000194", "52998224725", "abc"])
def test_an_invalid_cnpj_is_a_usage_error(tmp_path, capsys, cnpj):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["pki", "init", str(tmp_path), "--cnpj", cnpj])
    assert exit_.value.code == 2
    assert "is not a valid CNPJ" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_file_where_the_directory_should_be_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "taken").write_text("")
    assert cli.main(["pki", "init", str(tmp_path / "taken")]) == 2
    assert "is not a directory" in capsys.readouterr().err
