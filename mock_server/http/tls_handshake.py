"""The TLS handshake as a real server answers it: the event loop of a server started with `--tls-cert`.

asyncio's TLS transport (and uvloop's, which it was ported from) drops a failed handshake's alert: when the client's
certificate is expired, of an unknown CA or missing, OpenSSL writes the alert saying so, and the transport closes the
connection without sending it. The client then reads a bare end of stream or a reset where a real server (nginx,
OpenSSL, a JVM) makes it read `alert certificate expired`, `unknown ca`, `certificate required`: the very errors a
client's TLS set-up is tested against. Here a failed handshake sends its alert first; plain HTTP sent to the TLS
port gets a plain HTTP 400 with the contract's body (`https_required`, as nginx answers it) instead of silence; and a
handshake must complete within the head's deadline (`--header-timeout`) rather than asyncio's 60 s.

This reaches into asyncio's TLS protocol (`asyncio.sslproto`, CPython 3.11+): where its hooks are missing, the
loop is asyncio's own and handshakes fail as asyncio fails them (tests/e2e/test_tls.py says which).
"""

from __future__ import annotations

import asyncio
import ssl
from asyncio import selector_events, sslproto
from collections.abc import Callable
from typing import Any

from mock_server.domain.errors import HttpsRequired
from mock_server.http.connection import error_bytes

HOOKED = all(hasattr(sslproto.SSLProtocol, name) for name in ("_on_handshake_complete", "_process_outgoing"))
PLAIN_HTTP = error_bytes(HttpsRequired("This port speaks HTTPS: the request was sent as plain HTTP."))


class _AnsweringSSLProtocol(sslproto.SSLProtocol):
    def _on_handshake_complete(self, handshake_exc: BaseException | None) -> None:
        transport: Any = self._transport
        if isinstance(handshake_exc, ssl.SSLError) and transport is not None:
            if handshake_exc.reason == "HTTP_REQUEST":
                transport.write(PLAIN_HTTP)
            else:
                self._process_outgoing()  # type: ignore[attr-defined]  # the alert OpenSSL wrote, sent before the close
        super()._on_handshake_complete(handshake_exc)


class TlsEventLoop(asyncio.SelectorEventLoop):
    """asyncio's loop whose server-side TLS connections use the protocol above."""

    handshake_timeout = 10.0  # seconds; set per server by `loop_factory`

    def _make_ssl_transport(
        self,
        rawsock: Any,
        protocol: Any,
        sslcontext: ssl.SSLContext,
        waiter: asyncio.Future[Any] | None = None,
        *,
        server_side: bool = False,
        server_hostname: str | None = None,
        extra: dict[str, Any] | None = None,
        server: Any = None,
        ssl_handshake_timeout: float | None = None,
        ssl_shutdown_timeout: float | None = None,
    ) -> Any:
        if not server_side:
            return super()._make_ssl_transport(  # type: ignore[misc]
                rawsock,
                protocol,
                sslcontext,
                waiter,
                server_side=server_side,
                server_hostname=server_hostname,
                extra=extra,
                server=server,
                ssl_handshake_timeout=ssl_handshake_timeout,
                ssl_shutdown_timeout=ssl_shutdown_timeout,
            )
        ssl_protocol: Any = _AnsweringSSLProtocol(
            self,
            protocol,
            sslcontext,
            waiter,  # type: ignore[arg-type]
            server_side,
            server_hostname,
            ssl_handshake_timeout=self.handshake_timeout,  # type: ignore[arg-type]  # typeshed says int; seconds
            ssl_shutdown_timeout=ssl_shutdown_timeout,
        )
        selector_events._SelectorSocketTransport(self, rawsock, ssl_protocol, extra=extra, server=server)  # type: ignore[attr-defined]
        return ssl_protocol._app_transport


def loop_factory(handshake_timeout: float) -> Callable[[], asyncio.AbstractEventLoop]:
    """What makes a TLS server's event loop: TlsEventLoop with this handshake deadline (asyncio's own loop when
    this Python's asyncio lacks the hooks)."""
    if not HOOKED:
        return asyncio.SelectorEventLoop
    return type("TlsEventLoop", (TlsEventLoop,), {"handshake_timeout": handshake_timeout})
