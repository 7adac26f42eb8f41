"""The HTTP/1.1 connection: uvicorn's httptools protocol with the deadlines and the head-size limit it lacks,
and the contract's JSON body on everything it refuses itself.

uvicorn closes a connection only after it answered and then heard nothing for `timeout_keep_alive`; a client
that connects and never sends, sends half a request line or headers, or stops in the middle of a body the
server does not read, holds its connection (and a file descriptor) for ever, and a 100 MB header is buffered
and parsed whole. Here:

- idle: a new connection that sends nothing is closed after `idle_timeout`, as a kept-alive one is;
- head: once a request's first byte arrived, its line and headers must be complete within `header_timeout`
  (else 408) and within `max_header_bytes` (else 431);
- body: a body the application did not read (it answered first) must still arrive within `body_timeout`, or
  the connection is closed. A body the application does read is timed where it is read (`request_body.read_bytes`),
  so that answer is the pipeline's 408, journaled like any other.

Malformed HTTP gets a 400 with the contract's body instead of uvicorn's text/plain one. A head is judged once it is
complete, before the application sees it: its size (`max_header_bytes` counts the request target and the header
lines, never another request's bytes that came in the same read), one Host header on HTTP/1.1, and one the server
answers to (`HostPolicy.refusal`, http/hosts.py: the guard against DNS rebinding); and a WebSocket upgrade, which this
server never speaks, gets a 400 in the contract's body (the server runs uvicorn with `ws="none"`: an `Upgrade` it
does not refuse, such as HTTP/2's `h2c`, is ignored as RFC 9110 7.8 allows, and that connection closes after its
answer, as the parser stops at the upgrade and would read no further request on it).

Each request's scope carries, under `extensions`, what ASGI has no word for: `ABORT_EXTENSION`, the callable an
injected `reset` fault (http/fault_replies.py) drops the connection with, without an answer (uvicorn answers a 500 to
an application that returns or raises without one); `PEER_EXTENSION` (http/tls.py), the TCP peer's address as the
socket has it, which uvicorn's proxy headers never rewrite; and over TLS the ASGI TLS extension.

One write per answer: uvicorn writes an answer's head and its body in two writes (two system calls, two packets);
the connection's transport (`HeadHoldingTransport`) holds a head until the body's write, and writes both as one. The
application speaks ASGI only: nothing of it knows this protocol.

This class subclasses uvicorn's `HttpToolsProtocol` and reads its request cycle: mock_server/server.py uses it only on
the uvicorn releases it knows, and uvicorn's own protocol on any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import logging
import socket
import struct
from collections.abc import Callable, Iterable
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from mock_server.domain.errors import ApiError, Detail, HeadersTooLarge, InvalidRequest, MalformedHttp, RequestTimeout
from mock_server.http.hosts import HostPolicy
from mock_server.http.responses import error_response
from mock_server.http.scope_keys import ABORT_EXTENSION
from mock_server.http.tls import PEER_EXTENSION, TLS_EXTENSION, certificate_cnpj, tls_extension
from mock_server.state.bounds import ConnectionLimits
from mock_server.wire.encoding import encode_json

log = logging.getLogger("mock_server")

_LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close() sends RST instead of FIN


def error_bytes(error: ApiError) -> bytes:
    """A whole HTTP/1.1 response with the error's contract body, closing the connection."""
    body = encode_json(error.body())
    phrase = http.HTTPStatus(error.status).phrase
    head = (
        f"HTTP/1.1 {error.status} {phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class HeadHoldingTransport:
    """The connection's transport, writing an answer's head and body as one: a head (a status line and headers,
    not an interim 1xx) is held until the next write, which carries it; or until the connection closes, the answer
    completes (`flush`, by the protocol: a HEAD's or a 204's answer has no body write), or the event loop's next
    turn, whichever comes first, so a streaming answer's head never waits for its body. `amend` may change a head
    before it is held. Everything else is the transport's own: what uvicorn calls at every request (`is_closing`,
    `pause_reading`, `resume_reading`, `get_extra_info`) is the transport's own method, bound here once, with no
    call of this class in between."""

    __slots__ = (
        "_amend",
        "_flush",
        "_held",
        "_loop",
        "_transport",
        "get_extra_info",
        "is_closing",
        "pause_reading",
        "resume_reading",
    )

    def __init__(
        self,
        transport: asyncio.Transport,
        loop: asyncio.AbstractEventLoop,
        amend: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self._transport = transport
        self._loop = loop
        self._amend = amend
        self._held: bytes | None = None
        self._flush = self.flush  # bound once: scheduled at every answer
        self.is_closing: Callable[[], bool] = transport.is_closing
        self.pause_reading: Callable[[], None] = transport.pause_reading
        self.resume_reading: Callable[[], None] = transport.resume_reading
        self.get_extra_info: Callable[..., Any] = transport.get_extra_info

    def write(self, data: bytes | bytearray) -> None:  # what uvicorn writes
        held = self._held
        if held is not None:
            self._held = None
            self._transport.write(held + data)
        elif data.endswith(b"\r\n\r\n") and data.startswith(b"HTTP/1.1 ") and data[9] != 0x31:  # not 1xx
            self._held = bytes(data) if self._amend is None else self._amend(bytes(data))
            self._loop.call_soon(self._flush)
        else:
            self._transport.write(data)

    def flush(self) -> None:
        """Write a held head now (none to a connection lost meanwhile)."""
        held = self._held
        if held is not None:
            self._held = None
            if not self._transport.is_closing():
                self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        self._held = None
        self._transport.abort()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def __getattr__(self, name: str) -> Any:  # the rest of asyncio.Transport, as it is
        return getattr(self._transport, name)


class GuardedHttpProtocol(HttpToolsProtocol):
    """One connection. `limits` and `hosts` are set on the subclass `protocol_class` makes.

    The parser's callbacks, run at every request, call uvicorn's by its class, not through `super()`: that makes a
    super object at each call, five a request."""

    limits = ConnectionLimits()
    hosts = HostPolicy()

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # uvicorn writes an access log wherever its `uvicorn.access` logger has a handler; pytest adds its capture
        # handlers to every logger that does not propagate, which is what `access_log=False` makes that one. So the
        # option decides too: a server in a test process (the pytest plugin's) logs no more than its CLI would.
        self.access_log = config.access_log and self.access_log
        self._head_pending = False  # a request's first byte came, its headers are not complete yet
        self._head_bytes = 0  # of the pending head, at the end of the last read: at most its own
        self._head_began = False  # in the read being parsed, a request began
        self._read_size = 0  # the bytes of the read being parsed
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._body_overdue = False
        # The Host value this connection's last request was answered to: a kept-alive client sends the same one
        # at every request, and the policy (a class attribute) does not change, so its verdict stands (no frame of
        # http/hosts.py per request).
        self._answered_host: bytes | None = None

    # --- connection ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._holding = HeadHoldingTransport(transport, self.loop, self._amended_head)  # type: ignore[arg-type]
        super().connection_made(self._holding)  # type: ignore[arg-type]  # a transport in all but name
        # uvicorn arms its keep-alive timer only after a response: a connection that never sends would stay.
        self.timeout_keep_alive_task = self.loop.call_later(self.limits.idle_timeout, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        self._cancel_body_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        continued = self._head_pending  # a head that began in an earlier read
        self._head_began = False
        self._read_size = len(data)
        HttpToolsProtocol.data_received(self, data)
        if self.transport.is_closing():
            return
        if self._head_pending:
            if continued and not self._head_began:
                self._head_bytes += len(data)  # the whole read is that head's
            else:  # it began in this read, after other requests maybe: what the parser has of it so far
                self._head_bytes = self._parsed_head_bytes()
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse(self._head_too_large())
                return
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_timed_out)
        cycle = self.cycle
        if cycle is not None and cycle.more_body and self._body_timer is None and not self._body_overdue:
            self._body_timer = self.loop.call_later(self.limits.body_timeout, self._body_timed_out)

    def _amended_head(self, head: bytes) -> bytes:
        """An answer's head as it leaves: saying `connection: close` wherever the connection closes after it (uvicorn
        before 0.31 closes without saying so). Among those: an answer while the client holds its body back for 100
        Continue, which it never sends, and what it sends next would be read as that body (RFC 9110 10.1.1), so
        the connection closes (`on_response_complete`). With requests queued behind it, the answering request is not
        `self.cycle` (the last one parsed): its head is left as uvicorn wrote it."""
        cycle = self.cycle
        if cycle is None or self.pipeline:
            return head
        if cycle.keep_alive and not (self.expect_100_continue and cycle.more_body):
            return head
        cycle.keep_alive = False
        if b"\r\nconnection: close\r\n" in head.lower():
            return head
        return head[:-2] + b"connection: close\r\n\r\n"

    def send_400_response(self, msg: str) -> None:
        """What uvicorn answers to bytes that are not HTTP/1.1 (its own text/plain 400)."""
        self._refuse(MalformedHttp("The request is not valid HTTP/1.1."))

    def _refuse(self, error: ApiError) -> None:
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self.transport.write(error_bytes(error))
            self.transport.close()

    def drop(self) -> None:
        """Close the connection now without a byte of answer: a TCP reset (SO_LINGER 0), so the client reads
        ECONNRESET rather than a clean end of stream. Its requests (the one answering and any pipelined after
        it) are marked disconnected first, so uvicorn neither answers its 500 nor logs the application as
        having returned without a response."""
        for cycle in (self.cycle, *(queued for queued, _ in self.pipeline)):
            if cycle is not None:
                cycle.disconnected = True
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # already gone: the abort below is all there is to do
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)
        self.transport.abort()

    # --- the parser's callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        HttpToolsProtocol.on_message_begin(self)
        # uvicorn sets no extensions; the scope is typed for the standard ones only. The peer is the socket's,
        # which uvicorn's proxy headers (X-Forwarded-For) never rewrite, unlike scope["client"].
        self.scope["extensions"] = {ABORT_EXTENSION: self.drop, PEER_EXTENSION: self.client}  # type: ignore[dict-item]
        self._head_pending = True
        self._head_began = True
        self._head_bytes = 0
        self._body_overdue = False

    def on_header(self, name: bytes, value: bytes) -> None:
        """uvicorn's own, as 0.55 writes it, in place of the one of the release serving (0.30 to 0.54 had it
        without the strip): a field value's trailing whitespace is no part of it (RFC 9110 section 5.5; llhttp keeps
        it), so `X-Mock-Session: a ` names session `a`, and a bearer token or a `traceparent` sent so is read,
        whichever uvicorn release serves."""
        name = name.lower()
        value = value.rstrip(b" \t")
        if name == b"expect" and value.lower() == b"100-continue":
            self.expect_100_continue = True
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._head_pending = False
        self._cancel_head_timer()
        refusal = self._refusal_of_head()
        if refusal is None:
            HttpToolsProtocol.on_headers_complete(self)
        else:
            # Answered in turn through uvicorn's own cycle (a pipelined request behind one still running waits for
            # it), by the refusal instead of the application, which never sees the request.
            app, self.app = self.app, error_response(refusal)
            try:
                HttpToolsProtocol.on_headers_complete(self)
            finally:
                self.app = app
        if (refusal is not None or self.parser.should_upgrade()) and self.cycle is not None:
            # A refused head closes its connection, as every refusal of this module does; and the parser stops at
            # an upgrade: nothing after it on this connection would be read.
            self.cycle.keep_alive = False

    def _refusal_of_head(self) -> ApiError | None:
        """Why a complete head is refused before the application sees it, or None."""
        # A head that began in a read no larger than the limit is within it (nearly every head): nothing to count.
        spanned = not self._head_began or self._read_size > self.limits.max_header_bytes
        if spanned and self._parsed_head_bytes() > self.limits.max_header_bytes:
            return self._head_too_large()
        hosts = []
        for name, value in self.headers:  # a loop, not a comprehension: no function to make and call per request
            if name == b"host":
                hosts.append(value)
        if len(hosts) == 1 and hosts[0] == self._answered_host:
            refusal = None
        else:
            refusal = self.hosts.refusal(hosts, self.parser.get_http_version())
            if refusal is None and len(hosts) == 1:
                self._answered_host = hosts[0]
        if refusal is None and self.parser.should_upgrade() and self._get_upgrade() == b"websocket":
            refusal = InvalidRequest(
                "This server speaks no WebSocket: send the request without Upgrade.",
                [Detail(("Upgrade",), "websocket is not supported on any route")],
            )
        return refusal

    def _parsed_head_bytes(self) -> int:
        """The bytes of the head the parser handed over so far: its request target and its header lines (a header
        still arriving is not handed over yet: at most one read of it, which the next read's count covers)."""
        return len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def _head_too_large(self) -> HeadersTooLarge:
        return HeadersTooLarge(f"The request line and headers are over {self.limits.max_header_bytes} bytes.")

    def _unsupported_upgrade_warning(self) -> None:
        """uvicorn's warning for an upgrade it does not perform: here every one is answered on purpose (refused or
        ignored, see the module's docstring), so there is nothing to warn of."""

    def on_message_complete(self) -> None:
        if self._body_timer is not None:
            self._cancel_body_timer()
        HttpToolsProtocol.on_message_complete(self)

    def on_response_complete(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle.more_body and (self._body_overdue or self.expect_100_continue):
            # Answered without reading a body that is late already, or that a client waiting for 100 Continue
            # will never send (its next request would be read as that body): no keep-alive can follow it.
            self.transport.close()
        elif self._holding._held is not None:
            self._holding.flush()  # a head whose answer has no body write (HEAD, 204, 304): sent now
        HttpToolsProtocol.on_response_complete(self)

    # --- deadlines ----------------------------------------------------------------------------

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._head_pending:
            self._refuse(RequestTimeout(f"The request line and headers took over {self.limits.header_timeout} s."))

    def _body_timed_out(self) -> None:
        self._body_timer = None
        self._body_overdue = True
        cycle = self.cycle
        # The application answered without reading the body: nothing waits for the rest of it.
        if cycle is not None and cycle.response_complete and not self.transport.is_closing():
            self.transport.close()

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _cancel_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None


class TlsHttpProtocol(GuardedHttpProtocol):
    """One connection over TLS: every request's scope also carries the ASGI TLS extension (the client certificate),
    which uvicorn does not set. Read once per connection, after the handshake; plain HTTP never runs this class."""

    _tls: dict[str, Any] | None = None

    client_cnpjs: frozenset[str] = frozenset()  # --client-cnpj: the institutions served (empty: any)
    _refused = False  # closed for its certificate's CNPJ: nothing it sent is read

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        self._tls = tls_extension(ssl_object) if ssl_object is not None else None
        if self.client_cnpjs and self._tls is not None and self._tls["client_cert_chain"]:
            cnpj = certificate_cnpj(self._tls["client_cert_chain"][0])
            if cnpj not in self.client_cnpjs:
                # Python's ssl cannot fail a handshake for a chain OpenSSL accepted, nor send an alert after it:
                # the connection is closed (close_notify) before any request is read, as a provider does for an
                # institution it has not registered.
                log.warning("closed a TLS connection: its client certificate's CNPJ %s is not in --client-cnpj", cnpj)
                self._refused = True
                transport.close()

    def data_received(self, data: bytes) -> None:
        # A TLS 1.3 client may send its request with its last handshake message: already read by the TLS layer,
        # it would still be handed over after the close above.
        if not self._refused:
            GuardedHttpProtocol.data_received(self, data)

    def on_message_begin(self) -> None:
        GuardedHttpProtocol.on_message_begin(self)
        if self._tls is not None:
            self.scope["extensions"][TLS_EXTENSION] = self._tls  # type: ignore[assignment]

    def shutdown(self) -> None:
        """The server stops: an idle connection is dropped at once. uvicorn closes it, and asyncio's TLS close then
        waits for the client's close_notify (up to 30 s), which an idle keep-alive client, reading nothing, never
        sends: every stop (SIGTERM, Ctrl-C, a test's server) took the whole graceful-shutdown bound, 10 s. Nothing
        is lost: no request is under way on it. A connection with an answer still due is left to finish it."""
        if self.cycle is None or self.cycle.response_complete:
            self.transport.abort()
        else:
            super().shutdown()


def protocol_class(
    limits: ConnectionLimits, hosts: HostPolicy | None = None, tls: bool = False, client_cnpjs: Iterable[str] = ()
) -> type[GuardedHttpProtocol]:
    """The protocol uvicorn instantiates per connection (`Config(http=...)`), carrying `limits` and the Host names
    it answers to (`hosts`; by default loopback names and IP addresses only); with `tls`, the one that hands the
    client certificate to the application, serving only the institutions `client_cnpjs` names (empty: any)."""
    base = TlsHttpProtocol if tls else GuardedHttpProtocol
    attributes: dict[str, Any] = {"limits": limits, "hosts": hosts or HostPolicy()}
    if tls:
        attributes["client_cnpjs"] = frozenset(client_cnpjs)
    return type(base.__name__, (base,), attributes)
