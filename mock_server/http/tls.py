"""TLS at the server's edge: the SSL context `--tls-cert`, `--tls-key`, `--client-ca` and `--client-cert` make; the
ASGI TLS extension each request's scope carries (uvicorn sets none: http/connection.py adds it); and the client
certificate a request came with, read from that extension or, behind a proxy that terminated mutual TLS, from the
header it forwards the verified certificate in (`--client-cert-header`), trusted only from a loopback TCP peer: the
socket's own, as mock-server's protocol records it (`PEER_EXTENSION`), never an address a proxy header names.

The handshake decides trust: a server started with `--client-cert required` never sees a request whose client
certificate is missing, expired, not yet valid, of an unknown CA or not made for clients. What is read here is only
what the certificate says (domain/certificates.py).
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from starlette.types import Scope

from mock_server.domain.certificates import CertificateError, ClientCertificate, der_from_text, read_certificate
from mock_server.wire.headers import header_value

log = logging.getLogger("mock_server")
CLIENT_CERT_MODES = {"required": ssl.CERT_REQUIRED, "optional": ssl.CERT_OPTIONAL}
TLS_EXTENSION = "tls"  # the ASGI TLS extension's key in scope["extensions"]
# The scope extension holding the TCP peer's (host, port) as the socket has it (http/connection.py sets it). uvicorn's
# proxy headers rewrite scope["client"] from X-Forwarded-For for a peer FORWARDED_ALLOW_IPS trusts; this, never.
PEER_EXTENSION = "mock_server.peer"
# ssl's names of the versions -> the numbers the ASGI TLS extension gives them (the TLS wire values)
TLS_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}
CERTIFICATES_KEPT = 256  # distinct certificates whose facts are kept read (one client: one certificate)


class TlsSetupError(ValueError):
    """The TLS options cannot make a server context: the message says which file and why."""


def server_context(
    cert: Path, key: Path | None, client_ca: Path | None = None, client_cert: str = "required"
) -> ssl.SSLContext:
    """The context of an https server: TLS 1.2 or later, HTTP/1.1 by ALPN, and with `client_ca` a client certificate
    asked for and verified against it (refused at the handshake when `required` and missing or not trusted)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["http/1.1"])
    for flag, path in (("--tls-cert", cert), ("--tls-key", key), ("--client-ca", client_ca)):
        if path is not None and not path.is_file():
            raise TlsSetupError(f"{flag} {path}: no such file")
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        what = f"--tls-cert {cert}" + (f" and --tls-key {key}" if key is not None else " (no --tls-key)")
        raise TlsSetupError(
            f"{what}: not a PEM certificate and its private key ({exc.reason or exc}); the key must match the "
            "certificate, and without --tls-key the certificate file must hold the key too"
        ) from None
    if client_ca is not None:
        try:
            context.load_verify_locations(cafile=client_ca)
        except ssl.SSLError as exc:
            raise TlsSetupError(f"--client-ca {client_ca}: no PEM CA certificate in it ({exc.reason or exc})") from None
        context.verify_mode = CLIENT_CERT_MODES[client_cert]
    return context


def tls_extension(ssl_object: ssl.SSLObject) -> dict[str, Any]:
    """The ASGI TLS extension (asgiref's specs/tls.rst) of one connection, after its handshake. Only the client's
    own certificate is there to give: Python 3.11 does not expose the chain it sent."""
    der = ssl_object.getpeercert(binary_form=True)
    chain = [ssl.DER_cert_to_PEM_cert(der)] if der else []
    name = None
    if der:
        try:
            name = read_certificate(der).subject
        except CertificateError:  # verified by OpenSSL, yet beyond this reader: the chain still says it all
            name = None
    return {
        "server_cert": None,
        "client_cert_chain": chain,
        "client_cert_name": name,
        "client_cert_error": None,  # a certificate the handshake could not verify never gets this far
        "tls_version": TLS_VERSIONS.get(ssl_object.version() or ""),
        "cipher_suite": None,  # ssl gives the suite's name only, not its number
    }


def certificate_cnpj(pem: str) -> str | None:
    """The CNPJ a PEM client certificate carries (bare), or None."""
    try:
        return _read(pem).cnpj
    except CertificateError:
        return None


@lru_cache(maxsize=CERTIFICATES_KEPT)
def _read(text: str) -> ClientCertificate:
    """The facts of a PEM (or base64) certificate: read once per distinct certificate, not once per request."""
    return read_certificate(der_from_text(text))


def _loopback(scope: Scope) -> bool:
    """Whether the request's TCP peer is on this machine: the socket's, where mock-server's protocol recorded it;
    elsewhere (a TestClient, another ASGI server) the scope's client, which that server's own settings decide."""
    client = (scope.get("extensions") or {}).get(PEER_EXTENSION) or scope.get("client")
    if not client:
        return False
    try:
        address = ipaddress.ip_address(client[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def client_certificate(scope: Scope, trusted_header: str | None) -> ClientCertificate | None:
    """The client certificate of this request: the one of its own TLS handshake, else (with `trusted_header`, a
    lower-case header name) the one a proxy on this machine (the TCP peer, whatever X-Forwarded-For says) forwarded
    in that header (PEM, URL-escaped PEM as nginx's $ssl_client_escaped_cert, or base64 DER). None when the request
    came with none."""
    tls = (scope.get("extensions") or {}).get(TLS_EXTENSION)
    if tls is not None and tls.get("client_cert_chain"):
        try:
            return _read(tls["client_cert_chain"][0])
        except CertificateError:
            return None
    if trusted_header is None:
        return None
    forwarded = header_value(scope.get("headers", ()), trusted_header.encode("latin-1"))
    if not forwarded or not _loopback(scope):  # empty: nginx's variable when the client sent no certificate
        return None
    try:
        return _read(unquote(forwarded) if "%" in forwarded else forwarded)
    except CertificateError as exc:
        log.warning(
            "the %s header does not hold a certificate (%s): the request is taken as without one", trusted_header, exc
        )
        return None
