"""What domain/certificates.py reads from a certificate's DER bytes, checked against `cryptography` (an independent
X.509 implementation) on certificates it builds: subject and issuer in RFC 4514, serial number, SHA-256 fingerprint,
validity, the CNPJ of the subject's serialNumber. And bytes that are not a certificate are a CertificateError,
never another exception."""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
from urllib.parse import quote

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from hypothesis import given
from hypothesis import strategies as st

from mock_server.domain.certificates import (
    CertificateError,
    cnpj_from_serial_number,
    der_from_text,
    read_certificate,
)

KEY = ec.generate_private_key(ec.SECP256R1())
NOW = dt.datetime(2026, 11, 21, 13, 0, tzinfo=dt.UTC)
# cryptography writes serialNumber and the others RFC 4514 has no name for by dotted OID unless told
NAMES = {NameOID.SERIAL_NUMBER: "serialNumber", NameOID.EMAIL_ADDRESS: "emailAddress"}


def certificate(
    subject: x509.Name,
    serial: int = 0x0FED79588B1F3314,
    not_before: dt.datetime = NOW,
    not_after: dt.datetime = NOW + dt.timedelta(days=365),
) -> x509.Certificate:
    issuer = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, "Test CA"), x509.NameAttribute(NameOID.COUNTRY_NAME, "BR")]
    )
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(KEY.public_key())
        .serial_number(serial)
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .sign(KEY, hashes.SHA256())
    )


def institution(serial_number: str, organization: str = "Banco Exemplo S.A.") -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "BR"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
            x509.NameAttribute(NameOID.SERIAL_NUMBER, serial_number),
            x509.NameAttribute(NameOID.COMMON_NAME, organization),
        ]
    )


def der(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.DER)


def test_the_facts_of_an_institution_certificate_match_cryptographys_reading():
    cert = certificate(institution("12345678000195"))
    facts = read_certificate(der(cert))
    assert facts.cnpj == "12345678000195"
    assert facts.organization == "Banco Exemplo S.A."
    assert facts.subject == cert.subject.rfc4514_string(NAMES)
    assert facts.subject == "CN=Banco Exemplo S.A.,serialNumber=12345678000195,O=Banco Exemplo S.A.,C=BR"
    assert facts.issuer == cert.issuer.rfc4514_string(NAMES) == "C=BR,CN=Test CA"
    assert facts.serial_number == "0FED79588B1F3314"
    assert facts.fingerprint_sha256 == cert.fingerprint(hashes.SHA256()).hex()
    assert (facts.not_before, facts.not_after) == (cert.not_valid_before_utc, cert.not_valid_after_utc)


def test_the_journal_shape_writes_instants_as_the_rest_of_the_journal():
    facts = read_certificate(der(certificate(institution("12.345.678/0001-95"))))
    shape = facts.to_json()
    assert shape["cnpj"] == "12345678000195"  # bare, whichever layout the certificate wrote
    assert shape["not_before"] == "2026-11-21T10:00:00.000-03:00"
    assert set(shape) == {
        "cnpj", "organization", "subject", "issuer", "serial_number", "fingerprint_sha256", "not_before", "not_after"
    }  # fmt: skip


@pytest.mark.parametrize(
    ("serial_number", "cnpj"),
    [
        ("12345678000195", "12345678000195"),
        ("12.345.678/0001-95", "12345678000195"),
        (" 12345678000195 ", "12345678000195"),
        ("12ABC34501DE35", "12ABC34501DE35"),  # the alphanumeric CNPJ
        ("12345678000194", None),  # wrong check digit
        ("52998224725", None),  # a CPF: a person, not an institution
        ("00000000000000", None),
        ("CNPJ 12345678000195", None),
        ("", None),
    ],
)
def test_the_cnpj_is_the_serial_number_when_it_is_a_valid_cnpj(serial_number, cnpj):
    assert cnpj_from_serial_number(serial_number) == cnpj


def test_a_subject_without_a_serial_number_has_no_cnpj():
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client")])
    facts = read_certificate(der(certificate(name)))
    assert (facts.cnpj, facts.organization, facts.subject) == (None, None, "CN=client")


def test_the_first_serial_number_holding_a_cnpj_counts():
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.SERIAL_NUMBER, "not a cnpj"),
            x509.NameAttribute(NameOID.SERIAL_NUMBER, "11222333000181"),
        ]
    )
    assert read_certificate(der(certificate(name))).cnpj == "11222333000181"


def test_special_characters_multi_valued_rdns_and_other_string_types_render_as_rfc_4514():
    name = x509.Name(
        [
            x509.RelativeDistinguishedName(
                [
                    x509.NameAttribute(NameOID.ORGANIZATION_NAME, 'Instituição, "Pagamentos" + Cia; <x>'),
                    x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "#1 "),
                ]
            ),
            x509.RelativeDistinguishedName(
                [x509.NameAttribute(NameOID.COMMON_NAME, "Ação", _type=x509.name._ASN1Type.BMPString)]
            ),
            x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.EMAIL_ADDRESS, "ti@exemplo.com.br")]),
        ]
    )
    cert = certificate(name)
    facts = read_certificate(der(cert))
    assert facts.subject == cert.subject.rfc4514_string(NAMES)
    assert facts.organization == 'Instituição, "Pagamentos" + Cia; <x>'


def test_serial_numbers_print_as_openssl_prints_them():
    assert read_certificate(der(certificate(institution("12345678000195"), serial=1))).serial_number == "01"
    big = (1 << 158) + 0xABC
    assert read_certificate(der(certificate(institution("12345678000195"), serial=big))).serial_number == format(
        big, "X"
    )


def test_validity_past_2049_is_a_generalized_time():
    late = dt.datetime(2051, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    facts = read_certificate(der(certificate(institution("12345678000195"), not_after=late)))
    assert facts.not_after == late


def test_pem_pem_with_spaces_and_bare_base64_give_the_same_der():
    cert = certificate(institution("12345678000195"))
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    raw = der(cert)
    assert der_from_text(pem) == raw
    assert der_from_text(pem.replace("\n", " ")) == raw  # a proxy that folded the PEM onto one header line
    assert der_from_text(base64.b64encode(raw).decode()) == raw
    assert quote(pem)  # URL escaping is the HTTP part's to undo (http/tls.py), never this reader's


@pytest.mark.parametrize("text", ["", "not base64!", "-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----"])
def test_text_that_is_no_certificate_is_a_certificate_error(text):
    with pytest.raises(CertificateError):
        read_certificate(der_from_text(text))


DER = der(certificate(institution("12345678000195")))


@given(st.integers(min_value=0, max_value=len(DER) - 1))
def test_a_cut_certificate_is_a_certificate_error(length):
    with pytest.raises(CertificateError):
        read_certificate(DER[:length])


@given(st.binary(max_size=300))
def test_random_bytes_are_a_certificate_error_or_read(data):
    with contextlib.suppress(CertificateError):
        read_certificate(data)


@given(st.integers(min_value=0, max_value=len(DER) - 1), st.integers(min_value=0, max_value=255))
def test_a_changed_byte_is_read_or_a_certificate_error(position, value):
    changed = DER[:position] + bytes([value]) + DER[position + 1 :]
    with contextlib.suppress(CertificateError):
        read_certificate(changed)
