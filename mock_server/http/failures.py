"""Why a call to a server got no answer, in one line: the words `healthcheck`, `wait`, `verify-provider` and shadow
mode all use, so one refusal reads the same whichever command met it.

Standard library only: `mock-server healthcheck` (probe.py) imports it without loading the server.
"""

from __future__ import annotations

import ssl

# TLS alerts a server sends when it refuses the client certificate, and the reason in words. With TLS 1.3 they
# arrive after the client's side of the handshake is done: at the first read of the answer, not at the connect.
_ALERTS = {
    "TLSV13_ALERT_CERTIFICATE_REQUIRED": "the server requires a client certificate ({cert} and {key})",
    "SSLV3_ALERT_CERTIFICATE_EXPIRED": "the server refused the client certificate ({cert}): it has expired",
    "TLSV1_ALERT_UNKNOWN_CA": "the server does not trust the CA that signed the client certificate ({cert})",
    "SSLV3_ALERT_UNSUPPORTED_CERTIFICATE": "the server refused the client certificate ({cert}): it is not for "
    "client authentication (its extended key usage)",
    "SSLV3_ALERT_BAD_CERTIFICATE": "the server refused the client certificate ({cert}): not yet valid, or "
    "otherwise unusable",
    "SSLV3_ALERT_CERTIFICATE_REVOKED": "the server refused the client certificate ({cert}): it is revoked",
    "TLSV1_ALERT_ACCESS_DENIED": "the server refused the client certificate ({cert}): access denied",
    "WRONG_VERSION_NUMBER": "the server speaks plain HTTP, not https",
}


# httpx's and httpcore's RemoteProtocolError, recognised by name (this module does not import httpx): the answer
# broke HTTP/1.1 (h11's words after the colon) or ended early.
_PROTOCOL_ERROR = "RemoteProtocolError"
# h11: an unfinished head over httpcore's max_incomplete_event_size (100 KiB), checked after each 64 KiB read
_HEAD_BOUND = "Receive buffer too long"


def _protocol_words(text: str) -> str:
    if text.startswith("Server disconnected"):
        return "the server closed the connection without answering"
    if text.startswith("peer closed connection without sending complete message body"):
        return f"the server closed the connection before the end of its answer ({text.partition(': ')[2]})"
    if text == _HEAD_BOUND:
        return "its head (status line and headers) is larger than 100 KiB"
    return f"it is not an HTTP/1.1 answer: {text}"


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and those under it (httpx's over httpcore's over the socket's or TLS's), outermost first."""
    chain = [exc]
    while len(chain) < 16:
        inner = chain[-1].__cause__ or chain[-1].__context__
        if inner is None or inner in chain:
            break
        chain.append(inner)
    return chain


def describe(exc: BaseException, flags: str = "--") -> str:
    """One line on why the call failed. `flags`: how the command's TLS options start (`--` for `--cert`,
    `--shadow-` for `--shadow-cert`), named where the fix is one of them."""
    chain = _chain(exc)
    cert, key, cacert = f"{flags}cert", f"{flags}key", f"{flags}cacert"
    cause = next((e for e in chain if isinstance(e, ssl.SSLError | ConnectionError)), exc)
    if isinstance(cause, ssl.SSLCertVerificationError):
        why = cause.verify_message or cause.reason or str(cause)
        return f"{cause.reason}: the server's certificate is not trusted: {why} ({cacert})"
    if isinstance(cause, ssl.SSLError):
        reason = cause.reason or ""
        if reason in _ALERTS:
            return f"{reason}: {_ALERTS[reason].format(cert=cert, key=key)}"
        if isinstance(cause, ssl.SSLEOFError) or reason == "UNEXPECTED_EOF_WHILE_READING":
            return "the server closed the TLS connection in the middle of the exchange"
        return f"{reason or type(cause).__name__}: {cause}"
    if isinstance(cause, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    if isinstance(cause, ConnectionResetError):
        return "the server reset the connection"
    protocol = next((e for e in chain if type(e).__name__ == _PROTOCOL_ERROR), None)
    if protocol is not None:
        return _protocol_words(str(protocol).rstrip("."))
    if any(isinstance(e, TimeoutError) or "Timeout" in type(e).__name__ for e in chain):
        return "no answer within the timeout"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
