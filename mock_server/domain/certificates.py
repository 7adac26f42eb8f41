"""What a client certificate says about its holder: the CNPJ in its subject's serialNumber (as Open Finance
Brasil and ICP-Brasil-style institution certificates carry it), its serial number, its SHA-256 fingerprint, who
it names and who issued it, and when it is valid.

Read from the certificate's DER bytes by a small reader of the few X.509 fields needed (RFC 5280 4.1): the same
facts whether the bytes came from this server's own TLS handshake or from a proxy that terminated mutual TLS in
front of it (its header: PEM, URL-escaped PEM or bare base64). Pure: no TLS, HTTP or crypto library; whether the
certificate is trusted is decided by whoever ran the handshake, never here.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mock_server.domain.clock import timestamp
from mock_server.domain.documents import bare_cnpj

SERIAL_NUMBER_OID = "2.5.4.5"  # the subject attribute institution certificates carry the CNPJ in
# Attribute names in a rendered subject or issuer (RFC 4514 names, plus the ones OpenSSL also prints by name);
# any other attribute is written by its dotted OID.
ATTRIBUTE_NAMES = {
    "2.5.4.3": "CN",
    "2.5.4.5": "serialNumber",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.15": "businessCategory",
    "0.9.2342.19200300.100.1.1": "UID",
    "0.9.2342.19200300.100.1.25": "DC",
    "1.2.840.113549.1.9.1": "emailAddress",
    "1.3.6.1.4.1.311.60.2.1.3": "jurisdictionC",
}

# DER tags (X.690) of what is read
_INTEGER, _OID, _SEQUENCE, _SET = 0x02, 0x06, 0x30, 0x31
_VERSION = 0xA0  # [0] EXPLICIT, before the serial number in v2/v3 certificates
_UTC_TIME, _GENERALIZED_TIME = 0x17, 0x18
_STRING_CODECS = {
    0x0C: "utf-8",  # UTF8String
    0x12: "ascii",  # NumericString
    0x13: "ascii",  # PrintableString
    0x14: "latin-1",  # TeletexString (T.61; Latin-1 is what every reader uses in practice)
    0x16: "ascii",  # IA5String
    0x1A: "ascii",  # VisibleString
    0x1C: "utf-32-be",  # UniversalString
    0x1E: "utf-16-be",  # BMPString
}
_PEM_MARKERS = ("-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----")


class CertificateError(ValueError):
    """The bytes are not an X.509 certificate this reader understands."""


@dataclass(frozen=True, slots=True)
class ClientCertificate:
    """The facts of one client certificate, as the journal records them."""

    subject: str  # RFC 4514, most specific attribute first: "CN=...,serialNumber=...,O=...,C=BR"
    issuer: str
    serial_number: str  # upper-case hex, as OpenSSL prints it
    fingerprint_sha256: str  # lower-case hex of the SHA-256 of the DER bytes
    not_before: datetime
    not_after: datetime
    cnpj: str | None  # the subject's serialNumber when it is a valid CNPJ (bare form), else None
    organization: str | None  # the subject's O

    def to_json(self) -> dict[str, Any]:
        return {
            "cnpj": self.cnpj,
            "organization": self.organization,
            "subject": self.subject,
            "issuer": self.issuer,
            "serial_number": self.serial_number,
            "fingerprint_sha256": self.fingerprint_sha256,
            "not_before": timestamp(self.not_before),
            "not_after": timestamp(self.not_after),
        }


def cnpj_from_serial_number(value: str) -> str | None:
    """The CNPJ a subject's serialNumber holds (bare or punctuated, check digits right), in its bare form."""
    return bare_cnpj(value.strip())


def read_certificate(der: bytes) -> ClientCertificate:
    """The facts of a DER-encoded X.509 certificate; CertificateError when it is not one."""
    certificate = _DerReader(der).sequence()
    tbs = certificate.sequence()
    if tbs.peek() == _VERSION:
        tbs.skip()
    serial = tbs.integer()
    tbs.expect(_SEQUENCE)  # the signature algorithm
    issuer = tbs.name()
    validity = tbs.sequence()
    not_before, not_after = validity.time(), validity.time()
    subject = tbs.name()
    serial_numbers = [value for oid, value in _attributes(subject) if oid == SERIAL_NUMBER_OID]
    organizations = [value for oid, value in _attributes(subject) if oid == "2.5.4.10"]
    cnpj = next((c for c in map(cnpj_from_serial_number, serial_numbers) if c is not None), None)
    return ClientCertificate(
        subject=rfc4514(subject),
        issuer=rfc4514(issuer),
        serial_number=_hex_serial(serial),
        fingerprint_sha256=hashlib.sha256(der).hexdigest(),
        not_before=not_before,
        not_after=not_after,
        cnpj=cnpj,
        organization=organizations[0] if organizations else None,
    )


def der_from_text(text: str) -> bytes:
    """The DER bytes of a certificate written as PEM (its newlines possibly turned into spaces by a proxy) or as
    bare base64; CertificateError when it is neither."""
    body = text.strip()
    begin, end = _PEM_MARKERS
    if body.startswith(begin):
        body = body[len(begin) :]
        body = body[: body.index(end)] if end in body else body
    compact = "".join(body.split())
    try:
        return base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        raise CertificateError("not a PEM or base64 certificate") from None


# An attribute: its OID, its value, and whether the value is text (else the hex of a non-string DER value, which
# RFC 4514 writes as `#hex`). An RDN is a set of attributes; a Name is the RDNs as encoded, least specific first.
Attribute = tuple[str, str, bool]
Name = tuple[tuple[Attribute, ...], ...]


def _attributes(name: Name) -> list[tuple[str, str]]:
    return [(oid, value) for rdn in name for oid, value, is_text in rdn if is_text]


def rfc4514(name: Name) -> str:
    """A Name as RFC 4514 writes it: the last RDN first, `+` inside a multi-valued RDN, special characters escaped."""
    return ",".join(
        "+".join(
            f"{ATTRIBUTE_NAMES.get(oid, oid)}={_escaped(value) if is_text else '#' + value}"
            for oid, value, is_text in rdn
        )
        for rdn in reversed(name)
    )


def _escaped(value: str) -> str:
    out = "".join(f"\\{c}" if c in ',+"\\<>;' else "\\00" if c == "\x00" else c for c in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _hex_serial(value: int) -> str:
    digits = format(abs(value), "X")
    digits = "0" + digits if len(digits) % 2 else digits
    return "-" + digits if value < 0 else digits


class _DerReader:
    """DER (X.690) values one after the other in `data`."""

    __slots__ = ("data", "offset")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def peek(self) -> int | None:
        return self.data[self.offset] if self.offset < len(self.data) else None

    def _next(self) -> tuple[int, bytes]:
        data, at = self.data, self.offset
        if at + 2 > len(data):
            raise CertificateError("truncated DER")
        tag, length = data[at], data[at + 1]
        at += 2
        if tag & 0x1F == 0x1F:
            raise CertificateError("a high-tag-number DER tag")
        if length & 0x80:
            count = length & 0x7F
            if count == 0 or count > 4 or at + count > len(data):
                raise CertificateError("a DER length this reader does not take")
            length = int.from_bytes(data[at : at + count], "big")
            at += count
        if at + length > len(data):
            raise CertificateError("truncated DER")
        self.offset = at + length
        return tag, data[at : at + length]

    def expect(self, tag: int) -> bytes:
        found, content = self._next()
        if found != tag:
            raise CertificateError(f"DER tag {found:#04x} where {tag:#04x} belongs")
        return content

    def skip(self) -> None:
        self._next()

    def sequence(self) -> _DerReader:
        return _DerReader(self.expect(_SEQUENCE))

    def integer(self) -> int:
        content = self.expect(_INTEGER)
        if not content:
            raise CertificateError("an empty INTEGER")
        return int.from_bytes(content, "big", signed=True)

    def time(self) -> datetime:
        tag, content = self._next()
        try:
            text = content.decode("ascii")
            if tag == _UTC_TIME and len(text) == 13 and text.endswith("Z"):
                year = int(text[:2])
                text = f"{1900 + year if year >= 50 else 2000 + year}{text[2:]}"  # RFC 5280 4.1.2.5.1
            elif tag != _GENERALIZED_TIME or len(text) != 15 or not text.endswith("Z"):
                raise ValueError(text)
            return datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise CertificateError("a validity time RFC 5280 does not allow") from None

    def name(self) -> Name:
        rdns = []
        name = self.sequence()
        while name.peek() is not None:
            rdn = _DerReader(name.expect(_SET))
            pairs: list[Attribute] = []
            while rdn.peek() is not None:
                attribute = rdn.sequence()
                oid = _oid(attribute.expect(_OID))
                start = attribute.offset
                tag, raw = attribute._next()
                codec = _STRING_CODECS.get(tag)
                if codec is None:  # not a string: RFC 4514 writes the whole DER value in hex
                    pairs.append((oid, attribute.data[start : attribute.offset].hex(), False))
                    continue
                try:
                    value = raw.decode(codec)
                except UnicodeDecodeError:
                    raise CertificateError("an attribute string not in its declared encoding") from None
                pairs.append((oid, value, True))
            rdns.append(tuple(pairs))
        return tuple(rdns)


def _oid(content: bytes) -> str:
    if not content or content[-1] & 0x80:
        raise CertificateError("a malformed OBJECT IDENTIFIER")
    arcs: list[int] = []
    value = 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(map(str, head + arcs[1:]))
