"""`mock-server pki init DIR [--cnpj N]`: a test PKI for mutual TLS, written as PEM files with a README.

A test CA; a server certificate for localhost, 127.0.0.1 and ::1; a good client certificate shaped like an
institution's (the CNPJ as the subject's serialNumber, an organisation name, extended key usage clientAuth); and the
bad client certificates a client's TLS set-up must be tested against: expired, not yet valid, signed by a CA the
server does not know, made for servers (extended key usage serverAuth only), and one of another institution (another
CNPJ: a good chain, told apart by the journal and `verify`, not by the handshake). Every key is generated here, on
this machine; nothing is downloaded. The CA's key is written too, so more certificates can be issued from it.

Needs the `tls` extra (`cryptography`): `pip install 'pix-limits-mock-server[tls]'`. It is imported when a PKI is
made, so `mock-server --help` and serving TLS work without it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mock_server.domain.documents import bare_cnpj, canonical_document, format_document

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

EXIT_USAGE = 2
DEFAULT_CNPJ = "12345678000195"
OTHER_CNPJS = ("11222333000181", "11444777000161")  # the other institution's: the first that is not --cnpj
ORGANIZATION = "Banco Exemplo S.A."
OTHER_ORGANIZATION = "Outra Instituicao de Pagamento S.A."
VALID_DAYS = 365  # the good certificates'
SKEW = dt.timedelta(hours=1)  # good certificates start this long ago: a client clock a little behind still accepts
KEY_TYPES = ("rsa", "ec")
INSTALL_HINT = "mock-server pki needs the tls extra: pip install 'pix-limits-mock-server[tls]'"


@dataclass(frozen=True)
class ClientVariant:
    name: str  # client-NAME.pem and client-NAME-key.pem; "" for the good one (client.pem)
    what: str
    outcome: str  # what a server with --client-ca ca.pem --client-cert required does with it

    @property
    def stem(self) -> str:
        return f"client-{self.name}" if self.name else "client"


GOOD = ClientVariant("", "the good client: the CNPJ as serialNumber, clientAuth, valid now", "accepted")
BAD_VARIANTS = (
    ClientVariant("expired", "expired yesterday", "refused at the handshake (alert certificate expired)"),
    ClientVariant("not-yet-valid", "valid from 30 days from now", "refused at the handshake (alert bad certificate)"),
    ClientVariant("unknown-ca", "signed by another CA, not in ca.pem", "refused at the handshake (alert unknown ca)"),
    ClientVariant(
        "wrong-eku",
        "extended key usage serverAuth only (a server's certificate used as a client's)",
        "refused at the handshake (alert unsupported certificate)",
    ),
    ClientVariant(
        "other-cnpj",
        "a good chain for another institution (another CNPJ and organisation)",
        "accepted: the journal records its CNPJ, so `verify` with client_cnpj tells it apart",
    ),
)
VARIANTS = (GOOD, *BAD_VARIANTS)


@dataclass(frozen=True)
class TestPki:
    """Where `init` wrote each file."""

    __test__ = False  # not a test class, whatever pytest's collection makes of the name

    directory: Path
    cnpj: str
    other_cnpj: str

    @property
    def ca(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.directory / "ca-key.pem"

    @property
    def server_cert(self) -> Path:
        return self.directory / "server.pem"

    @property
    def server_key(self) -> Path:
        return self.directory / "server-key.pem"

    def client(self, variant: str = "") -> tuple[Path, Path]:
        """(certificate, key) of a client variant: "" the good one, else "expired", "unknown-ca", ..."""
        stem = next(v.stem for v in VARIANTS if v.name == variant)
        return self.directory / f"{stem}.pem", self.directory / f"{stem}-key.pem"

    def files(self) -> list[Path]:
        paths = [self.ca, self.ca_key, self.server_cert, self.server_key]
        for variant in VARIANTS:
            paths += self.client(variant.name)
        return [*paths, self.directory / "README.md"]


def _crypto() -> Any:
    """cryptography's modules, or SystemExit naming the extra that brings it."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise SystemExit(INSTALL_HINT) from None
    return x509, hashes, serialization, ec, rsa, ExtendedKeyUsageOID, NameOID


class _Issuer:
    """Makes keys and certificates with cryptography."""

    def __init__(self, key_type: str) -> None:
        self.key_type = key_type
        (self.x509, self.hashes, self.serialization, self.ec, self.rsa, self.eku, self.oid) = _crypto()

    def key(self) -> CertificateIssuerPrivateKeyTypes:
        if self.key_type == "ec":
            return self.ec.generate_private_key(self.ec.SECP256R1())  # type: ignore[no-any-return]
        return self.rsa.generate_private_key(public_exponent=65537, key_size=2048)  # type: ignore[no-any-return]

    def name(self, **attributes: str) -> x509.Name:
        oids = {
            "C": self.oid.COUNTRY_NAME,
            "O": self.oid.ORGANIZATION_NAME,
            "serialNumber": self.oid.SERIAL_NUMBER,
            "CN": self.oid.COMMON_NAME,
        }
        return self.x509.Name([self.x509.NameAttribute(oids[k], v) for k, v in attributes.items()])  # type: ignore[no-any-return]

    def ca(self, common_name: str, now: dt.datetime) -> tuple[x509.Certificate, CertificateIssuerPrivateKeyTypes]:
        x509 = self.x509
        key = self.key()
        name = self.name(C="BR", O="mock-server test PKI", CN=common_name)
        builder = (
            self._base(name, name, key, now - dt.timedelta(days=400), now + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(self._usage(cert_sign=True), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        )
        return builder.sign(key, self.hashes.SHA256()), key

    def leaf(
        self,
        subject: x509.Name,
        issuer: tuple[x509.Certificate, CertificateIssuerPrivateKeyTypes],
        not_before: dt.datetime,
        not_after: dt.datetime,
        usage: Any,
        san: list[Any] | None = None,
    ) -> tuple[x509.Certificate, CertificateIssuerPrivateKeyTypes]:
        x509 = self.x509
        ca_cert, ca_key = issuer
        key = self.key()
        builder = (
            self._base(subject, ca_cert.subject, key, not_before, not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(self._usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                critical=False,
            )
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return builder.sign(ca_key, self.hashes.SHA256()), key

    def _base(
        self,
        subject: x509.Name,
        issuer: x509.Name,
        key: CertificateIssuerPrivateKeyTypes,
        not_before: dt.datetime,
        not_after: dt.datetime,
    ) -> x509.CertificateBuilder:
        return (  # type: ignore[no-any-return]
            self.x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(self.x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
        )

    def _usage(self, cert_sign: bool) -> Any:
        return self.x509.KeyUsage(
            digital_signature=True,
            content_commitment=False,
            key_encipherment=not cert_sign and self.key_type == "rsa",
            data_encipherment=False,
            key_agreement=False,
            key_cert_sign=cert_sign,
            crl_sign=cert_sign,
            encipher_only=False,
            decipher_only=False,
        )

    def certificate_pem(self, certificate: x509.Certificate) -> bytes:
        return certificate.public_bytes(self.serialization.Encoding.PEM)

    def key_pem(self, key: CertificateIssuerPrivateKeyTypes) -> bytes:
        return key.private_bytes(
            self.serialization.Encoding.PEM,
            self.serialization.PrivateFormat.PKCS8,
            self.serialization.NoEncryption(),
        )


def other_cnpj(cnpj: str) -> str:
    return next(c for c in OTHER_CNPJS if c != cnpj)


def init(directory: Path, cnpj: str = DEFAULT_CNPJ, key_type: str = "rsa", now: dt.datetime | None = None) -> TestPki:
    """Write the test PKI into `directory` (made if missing; files there are overwritten). `cnpj`: a valid CNPJ,
    bare or punctuated. Raises SystemExit when cryptography is not installed."""
    import ipaddress

    cnpj = canonical_document(cnpj)
    now = now or dt.datetime.now(dt.UTC)
    issuer = _Issuer(key_type)
    x509, eku = issuer.x509, issuer.eku
    pki = TestPki(directory, cnpj, other_cnpj(cnpj))
    directory.mkdir(parents=True, exist_ok=True)
    ca = issuer.ca("mock-server test CA", now)
    written: dict[Path, bytes] = {pki.ca: issuer.certificate_pem(ca[0]), pki.ca_key: issuer.key_pem(ca[1])}
    good_from, good_until = now - SKEW, now + dt.timedelta(days=VALID_DAYS)
    server_san = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("::1")),
    ]
    server = issuer.leaf(
        issuer.name(C="BR", O="mock-server", CN="localhost"), ca, good_from, good_until, eku.SERVER_AUTH, server_san
    )
    written[pki.server_cert], written[pki.server_key] = issuer.certificate_pem(server[0]), issuer.key_pem(server[1])
    institution = issuer.name(C="BR", O=ORGANIZATION, serialNumber=cnpj, CN=ORGANIZATION)
    unknown_ca = issuer.ca("mock-server unknown test CA", now)
    day = dt.timedelta(days=1)
    made = {
        "": issuer.leaf(institution, ca, good_from, good_until, eku.CLIENT_AUTH),
        "expired": issuer.leaf(institution, ca, now - 400 * day, now - day, eku.CLIENT_AUTH),
        "not-yet-valid": issuer.leaf(institution, ca, now + 30 * day, now + 400 * day, eku.CLIENT_AUTH),
        "unknown-ca": issuer.leaf(institution, unknown_ca, good_from, good_until, eku.CLIENT_AUTH),
        "wrong-eku": issuer.leaf(institution, ca, good_from, good_until, eku.SERVER_AUTH),
        "other-cnpj": issuer.leaf(
            issuer.name(C="BR", O=OTHER_ORGANIZATION, serialNumber=pki.other_cnpj, CN=OTHER_ORGANIZATION),
            ca,
            good_from,
            good_until,
            eku.CLIENT_AUTH,
        ),
    }
    for variant, (certificate, key) in made.items():
        cert_path, key_path = pki.client(variant)
        written[cert_path], written[key_path] = issuer.certificate_pem(certificate), issuer.key_pem(key)
    written[directory / "README.md"] = readme(pki, key_type).encode("utf-8")
    for path, content in written.items():
        path.write_bytes(content)
        if path.name.endswith("-key.pem"):
            path.chmod(0o600)  # a test key, but a key: as ssh and curl expect keys to be kept
    return pki


def readme(pki: TestPki, key_type: str) -> str:
    rows = "\n".join(
        f"| `{v.stem}.pem`, `{v.stem}-key.pem` | {v.what} | {v.outcome} |" for v in VARIANTS if v is not GOOD
    )
    return f"""# A test PKI for mutual TLS (mock-server pki init)

Made by `mock-server pki init` for tests only: every key is here, unencrypted. Never trust `ca.pem` outside tests.
Keys: {key_type.upper()}{" 2048" if key_type == "rsa" else " P-256"}. The good certificates are valid for {VALID_DAYS} \
days from when they were made: run `mock-server pki init` again (with `--force`) to renew them.

| file | what it is |
|---|---|
| `ca.pem` | the test CA: the clients' trust (`--cacert`, httpx `verify=`) and the server's `--client-ca` |
| `ca-key.pem` | the test CA's key, to issue more certificates from it |
| `server.pem`, `server-key.pem` | the server: `localhost`, `127.0.0.1` and `::1`, extended key usage serverAuth |
| `client.pem`, `client-key.pem` | the good client: `O={ORGANIZATION}`, `serialNumber={pki.cnpj}` (CNPJ \
{format_document(pki.cnpj)}), extended key usage clientAuth |

The bad clients, all with the good client's subject unless said otherwise; what a server started with
`--client-ca ca.pem --client-cert required` does with each:

| files | what is wrong | outcome |
|---|---|---|
{rows}

The other institution is `O={OTHER_ORGANIZATION}`, `serialNumber={pki.other_cnpj}`.

Serve the whole API over mutual TLS, then call it with the good client:

    mock-server --tls-cert server.pem --tls-key server-key.pem --client-ca ca.pem --client-cert required
    curl --cacert ca.pem --cert client.pem --key client-key.pem https://localhost:8000/__mock/health

In Python: `httpx.Client(verify="ca.pem", cert=("client.pem", "client-key.pem"))`.
"""


def _cnpj(value: str) -> str:
    bare = bare_cnpj(value)
    if bare is None:
        raise argparse.ArgumentTypeError(f"{value!r} is not a valid CNPJ (14 characters, check digits right)")
    return bare


def pki_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="mock-server pki",
        description="Test certificates for serving the mock over mutual TLS (needs the tls extra: cryptography): "
        "`init DIR` writes a test CA, a server certificate for localhost/127.0.0.1/::1, a good client certificate "
        "(the CNPJ as its subject's serialNumber) and the bad ones (expired, not yet valid, unknown CA, wrong "
        "extended key usage, another CNPJ) into DIR as PEM files, with a README.md saying what each is.",
    )
    parser.add_argument("action", choices=("init",), help="init: write a test PKI into DIR")
    parser.add_argument("directory", metavar="DIR", type=Path, help="where to write (made if missing)")
    parser.add_argument("--cnpj", type=_cnpj, default=DEFAULT_CNPJ, help="the good client's CNPJ (default %(default)s)")
    parser.add_argument(
        "--key-type", choices=KEY_TYPES, default="rsa", help="RSA 2048 (default, as ICP-Brasil issues) or EC P-256"
    )
    parser.add_argument("--force", action="store_true", help="replace the files of an earlier PKI in DIR")
    args = parser.parse_args(argv)
    planned = TestPki(args.directory, args.cnpj, other_cnpj(args.cnpj))
    existing = [path for path in planned.files() if path.exists()]
    if existing and not args.force:
        print(
            f"mock-server pki: {existing[0]} exists already (a PKI made before?): give --force to replace it",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.directory.exists() and not args.directory.is_dir():
        print(f"mock-server pki: {args.directory} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    pki = init(args.directory, args.cnpj, args.key_type)
    print(f"mock-server pki: a test PKI in {args.directory}/ (the good client's CNPJ: {pki.cnpj})")
    width = max(len(f"{v.stem}.pem {v.stem}-key.pem") for v in VARIANTS)
    print(f"  {'ca.pem ca-key.pem':<{width}}  the test CA (give ca.pem to clients, and to the server as --client-ca)")
    print(f"  {'server.pem server-key.pem':<{width}}  the server: localhost, 127.0.0.1, ::1")
    for variant in VARIANTS:
        print(f"  {f'{variant.stem}.pem {variant.stem}-key.pem':<{width}}  {variant.what}")
    print(f"  {'README.md':<{width}}  what each file is for")
    return 0
