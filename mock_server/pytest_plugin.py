"""The pytest plugin (`pytest11` entry point `mock_server`): a mock server for a test suite, one clean session a test.

    def test_lookup(pix_mock):
        client = MyPixClient(base_url=pix_mock.url)   # the code under test, isolated by its base URL alone
        pix_mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")
        assert client.event("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11").status == "paid"

`pix_mock` is a `mock_server.client.PixMock` (the client usable without pytest) bound to the test's session; this
module is the fixtures over it and over the server. By default the server runs in-process (uvicorn in a thread on
127.0.0.1, port 0), started on first use, one per run. Under pytest-xdist the run has one server too, owned by the
controller: its socket bound as the workers start, the server started when the first worker connects, as a process
of its own (mock_server/shared_server.py: a thread of the controller would take turns with the controller's own
work for the interpreter lock), and every worker's tests get their sessions on it. `--mock-server-url URL` uses a
running server instead; each test then works in a session named for this process and test, so workers and
concurrent CI jobs never share state.

`--mock-server-tls https` serves the in-process server over https, `mutual` over mutual TLS (a client certificate
required), with certificates `mock-server pki init` makes in a temporary directory (needs the `tls` extra):
`pix_mock.pki` hands the test their files (`pki.ca`, `pki.client()`, `pki.client("expired")`, ...) for the code
under test to load, and `pix_mock.client` trusts the CA and presents the good client certificate. (Under xdist,
each worker then serves its own: the certificates are made per process.)

At load time this module imports pytest and the standard library only (and `mock_server.client`, which imports
no more): the server (Starlette, uvicorn) and httpx are imported when a test first asks for `pix_mock`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import socket
import subprocess
import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TypeVar

import pytest

from mock_server.client import (
    ANY_CLIENT,
    LifecycleConnection,
    MockServerError,
    PixMock,
    VerificationFailed,
    _refusal,
    _segment,
    entries_text,
    shared_transport,
)

if TYPE_CHECKING:
    import ssl

    import httpx

    from mock_server.pki import TestPki

__all__ = ["ANY_CLIENT", "MockServerError", "PixMock", "VerificationFailed"]  # re-exported: the client's

_T = TypeVar("_T")
GROUP = "mock-server"
MARKER = "mock_server"
START_TIMEOUT = 60.0  # seconds for the in-process server to accept connections
PACT_PROVIDER = "pix-limits"


@dataclass(frozen=True)
class _Option:
    name: str  # --mock-server-NAME, ini mock_server_NAME, MOCK_SERVER_NAME
    help: str
    switch: bool = False  # a flag without a value (ini: true/false; environment: 1/true/yes/on or 0/false/no/off)

    @property
    def flag(self) -> str:
        return f"--mock-server-{self.name.replace('_', '-')}"

    @property
    def ini(self) -> str:
        return f"mock_server_{self.name}"

    @property
    def env(self) -> str:
        return f"MOCK_SERVER_{self.name.upper()}"


OPTIONS = (
    _Option("url", "base URL of a running mock server to use instead of the in-process one"),
    _Option("scenario", "scenario every test's session is reset to (default: the server's)"),
    _Option("fixtures", "directory of scenario files for the in-process server (default: the shipped ones)"),
    _Option("seed", "seed of generated ids in every test's session (default: random)"),
    _Option("clock", "instant every test's session clock is frozen at (ISO 8601 with offset; default: real time)"),
    _Option("admin_token", "admin token to send (and, in-process, to require)"),
    _Option(
        "tls",
        "serve the in-process server over `https`, or `mutual` TLS (a client certificate required), with test "
        "certificates made for the run (pix_mock.pki); needs the tls extra",
    ),
    _Option(
        "keep_failed",
        "keep a failed test's session on the server, named in its report, instead of deleting it",
        switch=True,
    ),
    _Option(
        "pact",
        "directory to write the Pact V4 contract of the run's calls into: one CONSUMER-PROVIDER.json a consumer, "
        "merged over the sessions of the tests that passed, each distinct call once",
    ),
    _Option("pact_consumer", "the consumer's name in the pact (default: the name of pytest's rootdir)"),
    _Option("pact_provider", f"the provider's name in the pact (default {PACT_PROVIDER})"),
    _Option("pact_amounts", "`exact`: the pact's amounts are literal (default `type`: any number passes)"),
    _Option("pact_mock_defined", "`omit`: leave out answers openapi.yaml marks x-mock-defined (default `flag`)"),
)
TLS_MODES = ("https", "mutual")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "mock server of the PIX limits interface (pix_mock fixture)")
    for option in OPTIONS:
        help = f"{option.help}; ini {option.ini}, env {option.env}"
        ini_help = f"{option.help} (--mock-server-... and {option.env} win)"
        if option.switch:
            group.addoption(option.flag, dest=option.ini, action="store_true", default=None, help=help)
            parser.addini(option.ini, ini_help, type="bool", default=None)
        else:
            group.addoption(option.flag, dest=option.ini, default=None, help=help)
            parser.addini(option.ini, ini_help, default=None)


def _setting(config: pytest.Config, name: str) -> str | None:
    """A flag wins over its environment variable, which wins over the ini file."""
    option = next(o for o in OPTIONS if o.name == name)
    given = config.getoption(option.ini)
    if given is None:
        given = os.environ.get(option.env) or config.getini(option.ini) or None
    return str(given) if given is not None else None


def _switch(config: pytest.Config, name: str) -> bool:
    """A switch: its flag, else its environment variable (1/true/yes/on, 0/false/no/off), else the ini file."""
    option = next(o for o in OPTIONS if o.name == name)
    if config.getoption(option.ini):
        return True
    text = os.environ.get(option.env)
    if text is None:
        return bool(config.getini(option.ini))
    if text.strip().lower() in _TRUE + _FALSE:
        return text.strip().lower() in _TRUE
    raise pytest.UsageError(f"{option.env}={text!r}: give one of {', '.join(repr(v) for v in _TRUE + _FALSE[1:])}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario=None, clock=None, seed=None, consumer=None): start this test's pix_mock session on "
        "this scenario, with its clock frozen at `clock` and its ids seeded with `seed`; with --mock-server-pact, "
        "its calls go into the pact of `consumer`",
    )
    _switch(config, "keep_failed")  # a MOCK_SERVER_KEEP_FAILED that is neither yes nor no stops the run here
    tls = _setting(config, "tls")
    if tls is not None and tls not in TLS_MODES:
        raise pytest.UsageError(f"--mock-server-tls {tls!r}: give one of {', '.join(TLS_MODES)}")


def pytest_report_header(config: pytest.Config) -> str:
    url = _setting(config, "url")
    if config.getoption("dist", "no") == "no" or _setting(config, "tls"):
        where = "in-process (uvicorn on 127.0.0.1, a free port, started on first use)"
    else:
        where = "one for the run (a process of the xdist controller's, on 127.0.0.1, started on first use)"
    where = f"external {url}" if url else where
    scenario = _setting(config, "scenario") or "the server's default"
    kept = "; a failed test's session is kept" if _switch(config, "keep_failed") else ""
    pact = _setting(config, "pact")
    pacts = f"; the pact of the run's calls into {pact}" if pact else ""
    tls = _setting(config, "tls")
    over = f"; over {'mutual TLS' if tls == 'mutual' else 'https'}" if tls and not url else ""
    return f"mock-server: {where}; scenario {scenario}{kept}{over}{pacts}"


def _server_options(config: pytest.Config) -> dict[str, str]:
    """The server's own options the plugin passes on: the fixtures directory and the admin token, when given."""
    given = {"fixtures": _setting(config, "fixtures"), "admin_token": _setting(config, "admin_token")}
    return {name: value for name, value in given.items() if value}


class _InProcessServer:
    """create_app(Settings(...)) served in a daemon thread of this process (mock_server/server.py); on `listening`,
    a socket bound and listening already, when one is given (the xdist controller's where no child can inherit it:
    _SharedServer)."""

    def __init__(self, config: pytest.Config, listening: socket.socket | None = None) -> None:
        import gc
        from pathlib import Path

        # The server's modules imported with the cyclic collector paused, as create_app builds: the collections
        # their many new objects would set off walk the whole pytest process (its collected items) for nothing:
        # what they build lives as long as the run (create_app then freezes it: server.freeze_start_objects).
        collecting = gc.isenabled()
        gc.disable()
        try:
            from mock_server.app import create_app
            from mock_server.server import Server
            from mock_server.settings import Settings
        finally:
            if collecting:
                gc.enable()

        options: dict[str, Any] = {"port": 0, **_server_options(config)}
        if "fixtures" in options:
            options["fixtures"] = Path(options["fixtures"])
        settings = Settings(**options)  # on 127.0.0.1, as `mock-server` serves: its protocol, headers and options
        self.app = create_app(settings)
        self.tls = _setting(config, "tls")
        self.pki: TestPki | None = None
        context = None
        if self.tls:
            self.pki, context = self._tls_options()
        self._server = Server(self.app, settings, context)
        try:
            self.url = self._server.start(START_TIMEOUT, [listening] if listening is not None else None)
        except RuntimeError:
            raise RuntimeError("the in-process mock server did not start") from None
        assert self._server.loop is not None  # set once started
        self._loop = self._server.loop

    def _tls_options(self) -> tuple[TestPki, ssl.SSLContext]:
        """`mock-server pki init` into a temporary directory (kept until the process ends: the test may hand its
        files to the code under test at any time), and the TLS context of its server certificate."""
        import tempfile
        from pathlib import Path

        from mock_server.http.tls import server_context
        from mock_server.pki import init

        self._pki_directory = tempfile.TemporaryDirectory(prefix="mock-server-pki-")
        pki = init(Path(self._pki_directory.name), key_type="ec")  # EC: made in milliseconds, RSA in a second
        client_ca = pki.ca if self.tls == "mutual" else None
        context = server_context(pki.server_cert, pki.server_key, client_ca, "required")
        return pki, context

    def in_loop(self, work: Callable[[], _T]) -> _T:
        """`work()` run in the server's event loop, the one thread that touches its sessions (a request may be
        under way in it); its result, or its exception, in the caller's thread."""
        from concurrent.futures import Future

        done: Future[_T] = Future()

        def run() -> None:
            try:
                done.set_result(work())
            except BaseException as exc:
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return done.result(timeout=START_TIMEOUT)

    def create_session(self, name: str, scenario: str | None, seed: int | None) -> bool:
        """What POST /__mock/sessions does (the same `Sessions.make`), without HTTP: the session `name`, made
        explicitly on `scenario` with ids seeded by `seed`; False when one of that name exists. A scenario not
        found raises the server's own error (its status, code and message)."""
        sessions = self.app.state.sessions
        return self.in_loop(lambda: sessions.make(name, scenario, seed) is not None)

    def delete_session(self, name: str) -> bool:
        """What DELETE /__mock/sessions/NAME does, without HTTP; False when there was no such session."""
        sessions = self.app.state.sessions
        return self.in_loop(lambda: bool(sessions.delete(name)))

    def swap_sessions(self, old: str | None, new: tuple[str, str | None, int | None] | None) -> bool:
        """In one trip to the server's loop: delete the session `old` (when named) and make `new` (name,
        scenario, seed) as create_session does; whether `new` was made (not when it fails: its test's own
        create_session then says why)."""
        sessions = self.app.state.sessions

        def swap() -> bool:
            if old is not None:
                sessions.delete(old)
            if new is None:
                return False
            try:
                return sessions.make(*new) is not None
            except Exception:
                return False

        return self.in_loop(swap)

    def stop(self) -> None:
        """Stop the server at once and wait for its thread (Server.halt): the process ends soon after, and a
        server thread still running then could crash it; uvicorn's graceful shutdown would sleep for about 0.2 s
        (its 0.1 s tick, then 0.1 s for the connections to close) that no test needs."""
        self._server.halt()


_IN_PROCESS = pytest.StashKey[_InProcessServer]()  # on the config: the server this process started, if it did


# The xdist run's server as a child process needs its listening socket inherited by descriptor (pass_fds): POSIX. On
# other systems it is a thread of the controller, as it was before (slower under -n: they share one GIL).
CHILD_PROCESS = os.name == "posix"
_SHARED = pytest.StashKey["_SharedServer"]()  # on the xdist controller's config: the run's server, once bound
_WORKER_URL = "mock_server_url"  # the key of the run's server URL in an xdist worker's workerinput


class _SharedServer:
    """Under pytest-xdist, the run's one server, owned by the controller (a worker may finish early): its socket
    bound and listening at once, so that its URL goes to each worker as it starts, and the server started on it,
    as a child process of the controller (mock_server/shared_server.py), when the first connection arrives (a run
    whose tests never ask for pix_mock never pays for it; one that does queues its first calls in the socket's
    backlog meanwhile). The child inherits the socket and serves until its standard input, a pipe from this
    process, ends: at the end of the run, or when the controller dies, however it dies."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._options = _server_options(config)
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.process: subprocess.Popen[bytes] | None = None
        self.server: _InProcessServer | None = None  # where there is no child process (CHILD_PROCESS)
        self._problem: str | None = None  # why the server could not be started
        self._log: IO[bytes] | None = None  # the child's standard error: what it said if it failed
        self._wake, self._waker = socket.socketpair()
        self._thread = threading.Thread(target=self._start_when_called, name="mock-server-shared", daemon=True)
        self._thread.start()

    def _start_when_called(self) -> None:
        try:
            readable, _, _ = select.select([self._socket, self._wake], [], [])
            if self._socket in readable and self._wake not in readable:
                if not CHILD_PROCESS:
                    self.server = _InProcessServer(self._config, self._socket)
                    return  # it serves on the socket, in a thread of this process
                self.process = self._spawn()
        except Exception as exc:  # the callers waiting in the backlog are refused (below), not left to time out
            self._problem = f"{type(exc).__name__}: {exc}"
        if self.server is None:
            self._socket.close()  # the child holds the socket now, or no one does and its callers are refused

    def _spawn(self) -> subprocess.Popen[bytes]:
        import sys
        import sysconfig
        import tempfile
        from pathlib import Path

        import mock_server

        # The child imports this very package, wherever this process found it: a checkout found through sys.path
        # (a rootdir, an editable install) is named to it; an installed one it finds by itself (its site-packages
        # put on PYTHONPATH would come before the standard library).
        root = str(Path(mock_server.__file__).resolve().parent.parent)
        environment = dict(os.environ)
        if root not in {str(Path(path).resolve()) for path in sysconfig.get_paths().values()}:
            environment["PYTHONPATH"] = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        self._log = tempfile.TemporaryFile(prefix="mock-server-shared-")  # noqa: SIM115 -- kept until stop()
        descriptor = self._socket.fileno()
        return subprocess.Popen(
            [sys.executable, "-m", "mock_server.shared_server", str(descriptor), json.dumps(self._options)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            pass_fds=(descriptor,),
            env=environment,
        )

    @property
    def problem(self) -> str | None:
        """Why the run's server is not serving (None: it is, or it was never asked for)."""
        if self._problem is not None or self.process is None or self.process.poll() is None:
            return self._problem
        said = b""
        if self._log is not None:
            self._log.seek(0)
            said = self._log.read()[-2000:]
        last = said.decode(errors="replace").strip().splitlines()[-1:] or ["(it said nothing)"]
        return f"its process ended with status {self.process.returncode}: {last[0]}"

    def sessions_left(self) -> list[str] | None:
        """The names of the sessions the server holds now (None: it never started, or it did not answer)."""
        if self.server is not None:
            sessions = self.server.app.state.sessions
            return self.server.in_loop(lambda: [session.name for session in sessions.all()])
        if self.process is None or self.process.poll() is not None:
            return None
        import http.client

        port = int(self.url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Authorization": f"Bearer {self._options['admin_token']}"} if "admin_token" in self._options else {}
        try:
            connection.request("GET", "/__mock/sessions", headers=headers)
            answer = connection.getresponse()
            listing = json.loads(answer.read()) if answer.status == 200 else None
        except (OSError, ValueError):
            return None
        finally:
            connection.close()
        return None if listing is None else [session["name"] for session in listing["sessions"]]

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._waker.send(b"x")
        self._thread.join(timeout=START_TIMEOUT)
        if self.server is not None:
            self.server.stop()
        process = self.process
        if process is not None:
            assert process.stdin is not None
            process.stdin.close()  # the child ends at once (shared_server.py)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._socket.close()
        self._wake.close()
        self._waker.close()
        if self._log is not None:
            self._log.close()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, a worker starting: it gets the URL of the run's server (bound by the first
    worker's start), unless the run uses an external one or TLS (certificates are made per process)."""
    config = node.config
    if _setting(config, "url") or _setting(config, "tls"):
        return
    shared = config.stash.get(_SHARED, None)
    if shared is None:
        shared = config.stash[_SHARED] = _SharedServer(config)
    node.workerinput[_WORKER_URL] = shared.url


def pytest_unconfigure(config: pytest.Config) -> None:
    shared = config.stash.get(_SHARED, None)
    if shared is not None:
        shared.stop()


@pytest.fixture(scope="session")
def pix_mock_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL of the run's mock server: the external one, the xdist controller's, or one started
    in-process."""
    url = _setting(request.config, "url") or getattr(request.config, "workerinput", {}).get(_WORKER_URL)
    if url:
        yield url.rstrip("/")
        return
    server = _InProcessServer(request.config)
    request.config.stash[_IN_PROCESS] = server
    try:
        yield server.url
    finally:
        server.stop()


def _run_id() -> str:
    """This pytest process's part of session names: the xdist worker and a random token (another CI job on the
    same external server gets another)."""
    # os.urandom, as secrets.token_hex reads it: `secrets` (and the hmac it imports) is not worth its import here.
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.urandom(4).hex()}"


_RUN_ID = _run_id()
_COUNTER = iter(range(1, 1 << 62))


class _SessionMock(PixMock):
    """What `pix_mock` is: the client bound to the test's session, sending through the run's pool; `pki` (with
    --mock-server-tls) the test certificates' files (pki.ca, pki.client(), pki.client("expired"), ...)."""

    def __init__(self, run: _Run, name: str) -> None:
        super().__init__(run.server_url, name, token=run.token)
        self.name: str = name
        self._run = run
        self.pki = run.pki
        self.kept = False  # the fixture left the session on the server (a failed test, --mock-server-keep-failed)

    @property
    def transport(self) -> httpx.BaseTransport:
        """The connection pool `.client` sends through: the run's, the same object for every test, built when a
        test first needs it. Hand it to the code under test's own `httpx.Client(transport=...)` to spare it a
        pool and an SSL context (its close() does nothing)."""
        return self._run.transport


SEED_MAX = (1 << 63) - 1  # the admin spec's bound of a session's seed


class _Run:
    """What a pytest process does once for all its `pix_mock` sessions: the options, read; the way it makes each
    test's session and deletes it (in the in-process server's event loop; on the xdist run's own server, a batch
    at a time, PATCH /__mock/sessions; on another server, POST /__mock/sessions and DELETE /__mock/sessions/NAME);
    and one connection pool under every test's client, built when first needed (its SSL context is most of what an
    httpx.Client costs)."""

    def __init__(self, config: pytest.Config, server_url: str) -> None:
        self.server_url = server_url
        server = config.stash.get(_IN_PROCESS, None)
        self._local = server if server is not None and server.url == server_url else None
        self.in_process = self._local is not None
        self.scenario = _setting(config, "scenario")
        self.clock = _setting(config, "clock")
        self.seed = _setting(config, "seed")
        self.token = _setting(config, "admin_token")
        self.keep_failed = _switch(config, "keep_failed")
        self.pacts = _pacts(config) if _setting(config, "pact") else None
        # X-Mock-Admin: DELETE /__mock/sessions/NAME is bodyless and changes state (docs/threat-model.md).
        self._headers = {"X-Mock-Admin": "1", **({"Authorization": f"Bearer {self.token}"} if self.token else {})}
        self._lock = threading.Lock()
        # The next test's session, made (name, scenario, seed) in the trip that deleted the last one: in-process, a
        # trip to the server's thread less a test, which on a busy machine is a wait for the scheduler; in another
        # process, one call (POST /__mock/sessions with `replacing`) instead of a DELETE and a POST.
        self._next: tuple[str, str | None, int | None] | None = None
        self._replacing = True  # the server knows `replacing` (an older external one answers 400 to it)
        # On the xdist run's own server, sessions on the run's scenario and seed are made `batch` at a time and
        # deleted the same way, in one PATCH /__mock/sessions: a test then costs the server no call of its own.
        self.batch = _batch_size(config) if self._local is None and server_url == _shared_url(config) else 0
        self._ready: list[str] = []  # made by the last batch, for the tests to come: the oldest first
        self._ended: list[str] = []  # the sessions of tests that ended, deleted by the next batch
        self._pool: httpx.HTTPTransport | None = None
        self._transport: httpx.BaseTransport | None = None
        self.pki = self._local.pki if self._local is not None else None

    @property
    def transport(self) -> httpx.BaseTransport:
        """The run's pool behind a transport whose close() does nothing, built on first use."""
        with self._lock:
            if self._transport is None:
                import httpx

                # Over plain http no certificate is ever checked: no CA bundle read (a tenth of a second).
                plain = self.server_url.startswith("http://")
                verify = self._ssl_context() if self.pki else not plain
                self._pool = httpx.HTTPTransport(verify=verify)
                self._transport = shared_transport(self._pool)
            return self._transport

    def _ssl_context(self) -> ssl.SSLContext:
        """The test CA trusted, the good client certificate presented (needed when the server is `mutual`)."""
        import ssl

        assert self.pki is not None
        context = ssl.create_default_context(cafile=self.pki.ca)
        context.load_cert_chain(*self.pki.client())
        return context

    @functools.cached_property
    def _lifecycle(self) -> LifecycleConnection:
        return LifecycleConnection(self.server_url, self._headers, lambda: self.client)

    @functools.cached_property
    def client(self) -> httpx.Client:
        """An httpx client on the server, over the run's pool: the lifecycle calls' way through TLS or a proxy."""
        import httpx

        return httpx.Client(base_url=self.server_url, headers=self._headers, timeout=30.0, transport=self.transport)

    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, str, bool]:
        try:
            return self._lifecycle.call(method, path, body)
        except Exception as exc:
            raise MockServerError(
                f"{method} {self.server_url}{path}: no answer ({type(exc).__name__}: {exc}); is the mock server up?"
            ) from exc

    def open(self, scenario: str | None, seed: int | None) -> _SessionMock:
        """A new session, made explicitly on `scenario` (None: the server's) with ids seeded by `seed` (None: the
        server's --seed, if any). In-process, arguments the admin spec would refuse go over HTTP all the same, so
        that the server's own validation answers."""
        __tracebackhide__ = True
        if self.batch and (scenario, seed) == (self.scenario, _seed(self.seed)) and _plain(scenario, seed):
            if not self._ready:
                self._change(self.batch)
            return _SessionMock(self, self._ready.pop(0))
        ready, self._next = self._next, None
        if ready is not None and ready[1:] == (scenario, seed):
            return _SessionMock(self, ready[0])
        replaced = None  # made for a test on the run's scenario, this one asking another: deleted
        if ready is not None and self._local is not None:
            self._local.delete_session(ready[0])
        elif ready is not None:
            replaced = ready[0]
        name = _session_name()
        url = f"{self.server_url}/__mock/sessions"
        plain = scenario != "" and (seed is None or 0 <= seed <= SEED_MAX)
        if self._local is not None and plain:
            try:
                made = self._local.create_session(name, scenario, seed)
            except Exception as exc:  # the server's ApiError (scenario_not_found) carries its answer
                status, code = getattr(exc, "status", None), getattr(exc, "code", None)
                if not isinstance(status, int) or not isinstance(code, str):
                    raise
                error = {"code": code, "message": getattr(exc, "message", str(exc))}
                raise _refusal("POST", url, status, json.dumps(error)) from None
            if not made:
                error = {"code": "session_already_exists", "message": f"Session {name!r} exists already."}
                raise _refusal("POST", url, 409, json.dumps(error))
        else:
            body: dict[str, Any] = {"name": name}
            if scenario is not None:
                body["scenario"] = scenario
            if seed is not None:
                body["seed"] = seed
            if replaced is not None:
                body["replacing"] = replaced
            status, text, again = self._call("POST", "/__mock/sessions", body)
            if status != 201 and not (again and status == 409):  # 409 the second time: the first one made it
                raise _refusal("POST", url, status, text)
        return _SessionMock(self, name)

    def finish(self, mock: _SessionMock, failed: bool, consumer: str | None = None) -> None:
        """Delete the test's session, unless it failed and keeping was asked for; with --mock-server-pact, the
        session's pact (a passed test's) is kept for the run's file of `consumer` first."""
        __tracebackhide__ = True
        mock.close()
        if self.pacts is not None and not failed:
            self.pacts.collect(self, mock, consumer)
        kept = mock.kept = failed and self.keep_failed
        if self.batch:
            if not kept:
                self._ended.append(mock.name)
            if len(self._ended) >= 2 * self.batch:  # tests on sessions of their own: no batch has deleted them
                self._change(0)
            return
        if self._local is not None:
            # Deleted (unless kept; not there: the test deleted it itself), and the next test's session made.
            upcoming = (_session_name(), self.scenario, _seed(self.seed))
            plain = self.scenario != "" and (upcoming[2] is None or 0 <= upcoming[2] <= SEED_MAX)
            made = self._local.swap_sessions(None if kept else mock.name, upcoming if plain else None)
            self._next = upcoming if made else None
            return
        if self._replacing and self.scenario != "":
            # Deleted (unless kept) and the next test's session made, in one call.
            upcoming = (_session_name(), self.scenario, _seed(self.seed))
            if upcoming[2] is None or 0 <= upcoming[2] <= SEED_MAX:
                body: dict[str, Any] = {"name": upcoming[0], **({} if kept else {"replacing": mock.name})}
                if upcoming[1] is not None:
                    body["scenario"] = upcoming[1]
                if upcoming[2] is not None:
                    body["seed"] = upcoming[2]
                status, text, again = self._call("POST", "/__mock/sessions", body)
                if status == 201 or (again and status == 409):
                    self._next = upcoming
                    return
                self._replacing = not _refuses_replacing(status, text)  # an older server: DELETE from now on
        if kept:
            return
        path = f"/__mock/sessions/{_segment(mock.name)}"
        status, text, _ = self._call("DELETE", path)
        if status not in (204, 404):  # 404: the test deleted it itself
            raise _refusal("DELETE", f"{self.server_url}{path}", status, text)

    def _change(self, make: int) -> None:
        """One PATCH /__mock/sessions: the ended tests' sessions deleted, and `make` sessions on the run's scenario
        and seed made for the tests to come."""
        __tracebackhide__ = True
        names = [_session_name() for _ in range(make)]
        seed = _seed(self.seed)
        item = {
            **({"scenario": self.scenario} if self.scenario is not None else {}),
            **({"seed": seed} if seed is not None else {}),
        }
        body = {"create": [{"name": name, **item} for name in names], "delete": self._ended}
        status, text, again = self._call("PATCH", "/__mock/sessions", body)
        if status != 200 and not (again and status == 409):  # 409 the second time: the first one made them
            raise _refusal("PATCH", f"{self.server_url}/__mock/sessions", status, text)
        self._ended = []
        self._ready.extend(names)

    def kept_text(self, mock: _SessionMock) -> str:
        until = " (in-process: until this pytest process ends)" if self.in_process else ""
        return (
            f"session {mock.name} is kept on {self.server_url}{until}, for --mock-server-keep-failed: its URL is "
            f"{mock.url}; delete it with DELETE {self.server_url}/__mock/sessions/{_segment(mock.name)} "
            "(and the header X-Mock-Admin: 1)"
        )

    def close(self) -> None:
        if self._ready or self._ended:
            self._ended, self._ready = self._ended + self._ready, []
            with contextlib.suppress(MockServerError):  # the server may be gone already: nothing to leave behind
                self._change(0)
        ready, self._next = self._next, None
        if ready is not None and self._local is not None:
            self._local.delete_session(ready[0])
        elif ready is not None:
            with contextlib.suppress(MockServerError):  # the server may be gone already: nothing to leave behind
                self._call("DELETE", f"/__mock/sessions/{_segment(ready[0])}")
        lifecycle: LifecycleConnection | None = self.__dict__.pop("_lifecycle", None)
        if lifecycle is not None:
            lifecycle.close()
        client: httpx.Client | None = self.__dict__.pop("client", None)
        if client is not None:
            client.close()
        if self._pool is not None:
            self._pool.close()


class _Pacts:
    """--mock-server-pact: each passed test's session's pact (GET /__mock/pact, asked before the session is
    deleted), merged per consumer as the run goes. Under pytest-xdist each worker hands its own to the controller,
    which writes the files; without it the process writes them at the end of the run."""

    def __init__(self, config: pytest.Config) -> None:
        from pathlib import Path

        self.directory = Path(str(_setting(config, "pact")))
        self.consumer = _setting(config, "pact_consumer") or config.rootpath.name
        self.provider = _setting(config, "pact_provider") or PACT_PROVIDER
        asked = {"amounts": _setting(config, "pact_amounts"), "mock_defined": _setting(config, "pact_mock_defined")}
        self.options = {name: str(value) for name, value in asked.items() if value}
        self.documents: dict[str, dict[str, Any]] = {}  # consumer -> the run's merged pact so far
        self.written: list[tuple[Any, int]] = []  # (path, interactions), for the terminal summary

    def collect(self, run: _Run, mock: _SessionMock, consumer: str | None) -> None:
        __tracebackhide__ = True
        from urllib.parse import urlencode

        name = consumer or self.consumer
        query = urlencode({"consumer": name, "provider": self.provider, **self.options})
        path = f"/__session/{_segment(mock.name)}/__mock/pact?{query}"
        status, text, _ = run._call("GET", path)
        if status != 200:
            raise _refusal("GET", f"{run.server_url}{path}", status, text)
        self.add(json.loads(text))

    def add(self, document: dict[str, Any]) -> None:
        from mock_server.admin.pact import merge_pacts

        if not document["interactions"]:
            return
        consumer = document["consumer"]["name"]
        found = self.documents.get(consumer)
        self.documents[consumer] = document if found is None else merge_pacts([found, document])

    def write(self) -> None:
        from mock_server.admin.pact import pact_file_name

        if not self.documents:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for consumer, document in sorted(self.documents.items()):
            path = self.directory / pact_file_name(consumer, document["provider"]["name"])
            path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            self.written.append((path, len(document["interactions"])))


_PACTS = pytest.StashKey[_Pacts]()  # on the config: the run's pacts, when --mock-server-pact asks for them
_WORKER_PACTS = "mock_server_pacts"  # the key of a worker's pacts in its xdist workeroutput


def _pacts(config: pytest.Config) -> _Pacts:
    found = config.stash.get(_PACTS, None)
    if found is None:
        found = config.stash[_PACTS] = _Pacts(config)
    return found


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: a worker finished; its pacts join the run's."""
    documents = getattr(node, "workeroutput", {}).get(_WORKER_PACTS)
    if documents:
        pacts = _pacts(node.config)
        for document in documents:
            pacts.add(document)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not _setting(config, "pact"):
        return
    pacts = _pacts(config)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller writes
        workeroutput[_WORKER_PACTS] = list(pacts.documents.values())
        return
    pacts.write()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    shared = config.stash.get(_SHARED, None)
    started = shared is not None and (shared.process is not None or shared.server is not None)
    if shared is not None and (started or shared.problem is not None):
        terminalreporter.write_line(_shared_text(shared))  # the xdist controller's server: up until unconfigure
    pacts = config.stash.get(_PACTS, None)
    if pacts is None or not _setting(config, "pact"):
        return
    if not pacts.written:
        terminalreporter.write_line(f"mock-server: no pact written to {pacts.directory}: no passed test made a call")
    for path, count in pacts.written:
        terminalreporter.write_line(f"mock-server: wrote {path} ({count} interactions)")


def _shared_text(shared: _SharedServer) -> str:
    problem = shared.problem
    if problem is not None:
        return f"mock-server: the run's server at {shared.url} did not start: {problem}"
    left = shared.sessions_left()
    kept = "unknown (no answer)" if left is None else f"{len(left)} left: {', '.join(left)}" if left else "none left"
    pid = f" (process {shared.process.pid})" if shared.process is not None else ""
    return f"mock-server: one server for the run, started in the xdist controller at {shared.url}{pid}; sessions {kept}"


_RUN = pytest.StashKey[_Run]()  # on the config: this process's _Run, once a test has asked for pix_mock
_SESSION = pytest.StashKey[_SessionMock]()  # the test's PixMock, for its report
_FAILED = pytest.StashKey[bool]()  # the test's setup or call failed


def _refuses_replacing(status: int, text: str) -> bool:
    """Whether a POST /__mock/sessions was refused for its `replacing` member: a server older than it."""
    if status != 400:
        return False
    try:
        details = json.loads(text).get("details") or []
    except (ValueError, AttributeError):
        return False
    return any(isinstance(detail, dict) and detail.get("field") == "replacing" for detail in details)


def _plain(scenario: str | None, seed: int | None) -> bool:
    """Arguments the admin spec accepts (others go to the server one call at a time: its validation answers)."""
    return scenario != "" and (seed is None or 0 <= seed <= SEED_MAX)


def _shared_url(config: pytest.Config) -> str | None:
    """The URL of the xdist run's own server, in a worker given one (not with --mock-server-url)."""
    return getattr(config, "workerinput", {}).get(_WORKER_URL)


BATCH_MAX = 16  # sessions made in one call for a worker's tests to come
BATCH_BUDGET = 64  # at most about three times this many sessions of the run's on the server at once (of 256)


def _batch_size(config: pytest.Config) -> int:
    """How many sessions a worker makes at a time on the run's own server: up to BATCH_MAX, fewer with many
    workers, so that every worker's made, used and ended sessions (three batches at most) stay well within the
    server's 256; below 2, none (one call a test, `replacing`)."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    size = min(BATCH_MAX, BATCH_BUDGET // max(workers, 1))
    return size if size >= 2 else 0


def _seed(text: str | None) -> int | None:
    """The option's seed as the fixture passes it (-1, out of the spec's range, when it is no integer: the
    fixture's own conversion reports that)."""
    try:
        return int(text) if text is not None else None
    except ValueError:
        return -1


def _session_name() -> str:
    return f"pytest-{_RUN_ID}-{next(_COUNTER)}"


@pytest.fixture(scope="session")
def _pix_mock_run(request: pytest.FixtureRequest, pix_mock_server: str) -> Iterator[_Run]:
    run = _Run(request.config, pix_mock_server)
    request.config.stash[_RUN] = run
    try:
        yield run
    finally:
        del request.config.stash[_RUN]
        run.close()


@pytest.fixture
def pix_mock(request: pytest.FixtureRequest, _pix_mock_run: _Run) -> Iterator[_SessionMock]:
    """A session of its own on the mock server, made for the test on the scenario (option or marker), with the
    marker's or the option's clock and seed, and deleted after it (kept when it failed and
    --mock-server-keep-failed asked)."""
    run = _pix_mock_run
    marker = request.node.get_closest_marker(MARKER)
    wanted: dict[str, Any] = dict(marker.kwargs) if marker else {}
    unknown = set(wanted) - {"scenario", "clock", "seed", "consumer"}
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.{MARKER} takes scenario, clock, seed and consumer, not {sorted(unknown)}"
        )
    consumer = wanted.pop("consumer", None)
    scenario = wanted.get("scenario", run.scenario)
    clock = wanted.get("clock", run.clock)
    seed = wanted.get("seed", run.seed)
    mock = run.open(scenario, int(seed) if seed is not None else None)
    request.node.stash[_SESSION] = mock
    try:
        if clock is not None:
            mock.freeze(clock)
    except BaseException:
        run.finish(mock, failed=True)
        raise
    yield mock
    run.finish(mock, failed=request.node.stash.get(_FAILED, False), consumer=consumer)


def _journal_text(mock: _SessionMock) -> str:
    try:
        entries = mock.requests()
    except Exception as exc:  # the report must not fail because the server is gone
        return f"(the journal could not be read: {type(exc).__name__}: {exc})"
    return "\n".join([f"session {mock.name} at {mock.url}: {len(entries)} request(s)", *entries_text(entries)])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report carries its session's journal, shown under the failure, and, when it is kept, the
    session's name and how to delete it."""
    report = yield
    mock = item.stash.get(_SESSION, None)
    if mock is None or not report.failed or report.when == "teardown":
        return report
    item.stash[_FAILED] = True  # for the fixture's teardown, which comes after this report
    if report.when == "call":
        report.sections.append(("mock-server journal", _journal_text(mock)))
    run = item.config.stash.get(_RUN, None)
    if run is not None and run.keep_failed:
        report.sections.append(("mock-server session kept", run.kept_text(mock)))
    return report
