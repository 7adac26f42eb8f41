"""The one seam to the ASGI server: the uvicorn configuration mock-server serves with, and the server object that
runs it, in this thread (`mock-server`, bench/bare_app.py) or in a daemon thread of this process (serving.py's
InProcessServer, the pytest plugin's; tests/threaded_server.py). Nothing else builds a uvicorn Config or Server.

What mock-server does beyond stock uvicorn -- deadlines, the head-size limit, the Host rule, the TLS extension, the
`reset` fault's drop, one write per answer -- is the HTTP protocol behind `Config(http=...)` (http/connection.py),
which subclasses uvicorn's httptools protocol and so relies on more than uvicorn's public interface. It is used on
the uvicorn releases it was tested on (`KNOWN_UVICORN`); on any other, the server runs uvicorn's own protocol and
says so once (`stock_protocol_reason`): it still answers every request correctly, without those extras.

The rest of what is here uses uvicorn's public interface only: `Config(...)`, `Server.serve()` and its `startup`,
`shutdown` and `handle_exit` steps, `started`, `should_exit`, `servers`. The event loop is chosen here, not by uvicorn
(whose way of choosing it changed between 0.30 and 0.40): uvloop when installed for plain HTTP, as uvicorn's own
default; with TLS, asyncio's loop made to answer handshakes as a real server does (http/tls_handshake.py). The TLS
context goes to uvicorn by `ssl_context_factory` where uvicorn has it (0.47 and later), else it is set on the loaded
Config, where older releases keep the one they make from files.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import errno
import inspect
import logging
import signal
import socket
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import cache
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from mock_server.http.connection import protocol_class
from mock_server.http.hosts import HostPolicy
from mock_server.http.tls_handshake import loop_factory
from mock_server.settings import Settings
from mock_server.start_freeze import freeze_start_objects

log = logging.getLogger("mock_server")
# The uvicorn releases http/connection.py's protocol was tested on: from 0.30.0 up to the last 0.55 release. uvicorn
# changes the internals that protocol builds on (its request cycle, its parser callbacks) without notice.
KNOWN_UVICORN = ((0, 30), (0, 55))
START_TIMEOUT = 60.0  # seconds for a server started in a thread to accept connections
_SSL_CONTEXT_FACTORY = "ssl_context_factory" in inspect.signature(uvicorn.Config.__init__).parameters


def _release(version: str) -> tuple[int, int] | None:
    """`0.54.1` -> (0, 54); None when the version is not one of numbers."""
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def stock_protocol_reason(version: str | None = None) -> str | None:
    """Why the server must run uvicorn's own HTTP protocol instead of mock-server's (None: it need not)."""
    version = uvicorn.__version__ if version is None else version
    release = _release(version)
    low, high = KNOWN_UVICORN
    if release is not None and low <= release <= high:
        return None
    return (
        f"uvicorn {version} is not a release mock-server's HTTP protocol was tested on "
        f"({low[0]}.{low[1]} to {high[0]}.{high[1]}): serving with uvicorn's own protocol, so without the "
        "deadlines, the head-size limit, the Host rule, the client certificate of TLS connections and "
        "--client-cert-header, `reset` faults and one write per answer"
    )


@cache
def _warn_once(reason: str) -> None:
    log.warning("%s", reason)


def http_protocol(settings: Settings, tls: bool) -> type[asyncio.Protocol] | str:
    """What uvicorn's `Config(http=...)` gets: mock-server's protocol, or uvicorn's own on a uvicorn it does not
    know (warned of once a process)."""
    reason = stock_protocol_reason()
    if reason is not None:
        _warn_once(reason)
        return "httptools"
    return protocol_class(
        settings.connection,
        HostPolicy.build(settings.allowed_hosts, settings.host),
        tls=tls,
        client_cnpjs=settings.client_cnpjs,
    )


class _Config(uvicorn.Config):
    """uvicorn's Config holding a TLS context made elsewhere (http/tls.server_context) on a uvicorn without
    `ssl_context_factory`: set where `load()` leaves the one it would make from files."""

    context: ssl.SSLContext | None = None

    def load(self) -> None:
        super().load()
        if self.context is not None:
            self.ssl = self.context


def _cli_log_config() -> dict[str, Any]:
    """uvicorn's logging with the access log on stderr as well: stdout carries the ready line and nothing else."""
    config: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["handlers"]["access"]["stream"] = "ext://sys.stderr"
    return config


def uvicorn_config(
    app: ASGIApp,
    settings: Settings,
    context: ssl.SSLContext | None = None,
    *,
    configure_logging: bool = True,
    overrides: Mapping[str, Any] | None = None,
) -> uvicorn.Config:
    """The uvicorn options the server runs with (https with `context`). `configure_logging`: uvicorn's logging set
    up as `mock-server` runs it (False: the process's own left alone, as a test's). `overrides`: options over
    these, for a test of how the protocol meets uvicorn's others (e.g. `date_header=True`)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "access_log": settings.access_log,
        "server_header": False,
        "date_header": False,
        "lifespan": "off",
        "ws": "none",  # no route speaks WebSocket: http/connection.py answers an upgrade in the contract's body
        "log_config": _cli_log_config() if configure_logging else None,
        # http/connection.py: uvicorn's httptools protocol plus the deadlines, head-size limit and Host rule it lacks.
        "http": http_protocol(settings, tls=context is not None),
        "timeout_keep_alive": settings.connection.idle_timeout,  # float seconds work
        "timeout_graceful_shutdown": settings.shutdown_timeout,
    }
    if context is not None and _SSL_CONTEXT_FACTORY:
        options["ssl_context_factory"] = lambda config, default: context
    if not isinstance(options["http"], type):
        # uvicorn's own protocol records no TCP peer (http/tls.py): its scope's client is that peer only so.
        options["proxy_headers"] = False
    config = _Config(app, **{**options, **(overrides or {})})
    if context is not None and not _SSL_CONTEXT_FACTORY:
        config.context = context
    return config


@cache
def _plain_loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvicorn's default loop for plain HTTP: uvloop where installed (uvicorn[standard]), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop


class _UvicornServer(uvicorn.Server):
    """uvicorn's Server, telling its owner when it listens and before it stops."""

    def __init__(self, config: uvicorn.Config, owner: Server) -> None:
        super().__init__(config)
        self._owner = owner

    def handle_exit(self, sig: int, frame: Any) -> None:
        # uvicorn stops gracefully, then raises the signal again: SIGTERM ends the process by the signal (a shell
        # reports 143); SIGINT raises KeyboardInterrupt, or nothing when it is ignored. `interrupted` lets the CLI
        # turn both SIGINT outcomes into exit status 0.
        self._owner.interrupted = self._owner.interrupted or sig == signal.SIGINT
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list | None = None) -> None:  # type: ignore[type-arg]
        await super().startup(sockets)
        if self.started:
            host, port = self.config.host, self.config.port
            for server in self.servers:
                for sock in server.sockets:
                    port = sock.getsockname()[1]
            shown = f"[{host}]" if ":" in host else host
            self._owner.url = f"{'https' if self._owner.tls else 'http'}://{shown}:{port}"
            self._owner.loop = asyncio.get_running_loop()
            if self._owner.on_start is not None:
                self._owner.on_start(self._owner.url)

    async def halt(self) -> None:
        """uvicorn's shutdown without its waits, then the loop stopped where it is: the listening sockets and every
        connection closed (a request in flight gets no answer), and a few turns of the loop for their handles to
        close (a handle left open is a ResourceWarning as the loop is freed)."""
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.transport.abort()
        for _ in range(3):
            await asyncio.sleep(0)
        asyncio.get_running_loop().stop()

    async def shutdown(self, sockets: list | None = None) -> None:  # type: ignore[type-arg]
        # Here, not after serve(): uvicorn re-raises SIGTERM/SIGINT once it has shut down, so nothing after it
        # would get to run when a signal stopped the server.
        await super().shutdown(sockets)
        if self._owner.on_stop is not None:
            await self._owner.on_stop()


class Server:
    """`app` served as mock-server serves it, on `settings.host`/`settings.port` (https with `context`).

    `run()` serves in this thread until a signal or `stop()`; `start()` serves in a daemon thread and answers the
    URL once the socket accepts connections. `on_start(url)` runs in the server's loop once it listens (it may
    start tasks there); `on_stop()` is awaited there once the last requests are answered."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        context: ssl.SSLContext | None = None,
        *,
        on_start: Callable[[str], None] | None = None,
        on_stop: Callable[[], Awaitable[None]] | None = None,
        configure_logging: bool = True,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.tls = context is not None
        self.on_start = on_start
        self.on_stop = on_stop
        self.url: str | None = None  # once started
        self.loop: asyncio.AbstractEventLoop | None = None  # the server's, once started
        self.interrupted = False  # stopped by SIGINT (Ctrl-C)
        config = uvicorn_config(app, settings, context, configure_logging=configure_logging, overrides=overrides)
        self.tls = self.tls or bool(config.ssl_certfile)  # a test's certificate files, uvicorn's own options
        self._uvicorn = _UvicornServer(config, self)
        self._loop_factory = (
            loop_factory(settings.connection.header_timeout) if context is not None else _plain_loop_factory()
        )
        self._thread: threading.Thread | None = None
        self._halted = False

    @property
    def started(self) -> bool:
        """Whether the socket accepted connections (False after a run that could not bind it)."""
        return self._uvicorn.started

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve in this thread until a signal or `stop()`, on `sockets` when given (bound and listening already),
        else on the settings' host and port. uvicorn exits the process (status 3) when it cannot bind the port;
        SIGINT may end this as KeyboardInterrupt."""
        freeze_start_objects()  # once a process: for an app made otherwise than by create_app
        with asyncio.Runner(loop_factory=self._loop_factory) as runner:
            runner.run(self._uvicorn.serve(sockets=sockets))

    def start(self, timeout: float = START_TIMEOUT, sockets: list[socket.socket] | None = None) -> str:
        """Serve in a daemon thread (it ends with the process if not stopped), on `sockets` when given; the URL,
        once the socket accepts connections. RuntimeError when it did not start within `timeout` seconds."""
        self._thread = threading.Thread(target=self._run_in_thread, args=(sockets,), name="mock-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while self.url is None:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the mock server did not start")
            time.sleep(0.001)
        return self.url

    def _run_in_thread(self, sockets: list[socket.socket] | None) -> None:
        with contextlib.suppress(SystemExit):  # uvicorn's exit when it cannot bind: the thread ends, start() says so
            try:
                self.run(sockets)
            except RuntimeError:
                if not self._halted:
                    raise  # else the loop stopped by halt() before serve() completed: what it asked for

    def halt(self, timeout: float = 5.0) -> None:
        """Stop the server of `start()` at once, without uvicorn's graceful shutdown (its open connections
        dropped), and wait for its thread to end: for a process about to exit. A daemon thread whose loop still
        runs when the interpreter finalizes can crash the process (uvloop's timers call into the finalized
        interpreter: a segmentation fault at the end of one pytest run in ten, with the plugin's server)."""
        loop, thread = self.loop, self._thread
        self._uvicorn.should_exit = True
        if loop is None or thread is None:
            return
        self._halted = True
        with contextlib.suppress(RuntimeError):  # the loop is closed already: the thread has ended
            asyncio.run_coroutine_threadsafe(self._uvicorn.halt(), loop)
        thread.join(timeout)

    def stop(self, wait: bool = False) -> None:
        """Tell the server to stop. Without `wait`, the run goes on meanwhile: uvicorn's graceful shutdown sleeps
        for about 0.2 s (its 0.1 s tick, then 0.1 s for the connections to close) that no test needs, and the
        daemon thread ends by itself, or with the process."""
        self._uvicorn.should_exit = True
        if wait and self._thread is not None:
            self._thread.join(timeout=10)


def port_in_use(host: str, port: int) -> str | None:
    """A newcomer's message when `port` on `host` is taken (by another server, most likely), else None; asked
    before serving, so that a busy port reads as what it is, not as uvicorn's bare `[Errno 98]` and exit 3. Each
    address the host resolves to is bound as uvicorn binds it (SO_REUSEADDR), then let go; any other failure (an
    address this machine does not have, a name that does not resolve) is uvicorn's to report."""
    if port == 0:
        return None
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError):
        return None
    for family, kind, protocol, _, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return (
                        f"port {port} on {host} is in use (another server?): choose another with --port "
                        "(or PORT= for make run)"
                    )
    return None
