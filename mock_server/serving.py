"""Servers a test run starts, beside the seam (server.py), usable without pytest: the pytest plugin is fixtures over
these and the client.

    from mock_server.client import PixMock
    from mock_server.serving import InProcessServer

    with InProcessServer(tls="https") as server:           # uvicorn in a daemon thread, 127.0.0.1, a free port
        with PixMock(server.url, "job-1", verify=server.pki.ca) as mock:
            mock.create()
            mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")

`InProcessServer`: `create_app(Settings(...))` served in a daemon thread of this process (server.Server), over
https or mutual TLS with test certificates made for it (`pki`), its sessions reached through their one door
(state/session_door.py) in the server's own event loop (`with_sessions`): a session made or swapped without HTTP.
`SharedServer`: one server for several processes (the pytest plugin's under pytest-xdist): its socket bound at
once, so that its URL can be handed out before it serves, and the server started on it when the first connection
arrives, as a child process (mock_server/shared_server.py) or, where no child can inherit a socket, a thread.

At import this module loads the standard library only: the server (Starlette, uvicorn) is imported when one starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import ssl
    from types import TracebackType

    from starlette.applications import Starlette

    from mock_server.pki import TestPki
    from mock_server.state.session_door import SessionDoor

_T = TypeVar("_T")
START_TIMEOUT = 60.0  # seconds for a server to accept connections, and for a trip to its event loop
TLS_MODES = ("https", "mutual")
# A child process inherits the listening socket by descriptor (pass_fds): POSIX only. Elsewhere, a thread.
CHILD_PROCESS = os.name == "posix"


class InProcessServer:
    """The mock server in a daemon thread of this process, started at once; `url` once it accepts connections.

    `fixtures` (a directory of scenario files) and `admin_token` are the server's options of those names; `tls`
    `https`, or `mutual` (a client certificate required), with certificates `mock-server pki init` makes in a
    temporary directory (`pki`; needs the `tls` extra); `listening`: a socket bound and listening already to serve
    on (SharedServer's)."""

    def __init__(
        self,
        fixtures: str | Path | None = None,
        admin_token: str | None = None,
        tls: str | None = None,
        listening: socket.socket | None = None,
    ) -> None:
        import gc

        if tls is not None and tls not in TLS_MODES:
            raise ValueError(f"tls {tls!r}: give one of {', '.join(TLS_MODES)}")
        # The server's modules imported with the cyclic collector paused, as create_app builds: the collections
        # their many new objects would set off walk the whole calling process (a pytest run's collected items) for
        # nothing: what they build lives as long as the process (create_app then freezes it).
        collecting = gc.isenabled()
        gc.disable()
        try:
            from mock_server.app import create_app
            from mock_server.server import Server
            from mock_server.settings import Settings
        finally:
            if collecting:
                gc.enable()

        options: dict[str, Any] = {"port": 0, "admin_token": admin_token}
        if fixtures:
            options["fixtures"] = Path(fixtures)
        settings = Settings(**options)  # on 127.0.0.1, as `mock-server` serves: its protocol, headers and options
        self.app: Starlette = create_app(settings)
        self.tls = tls
        self.pki: TestPki | None = None
        context = None
        if tls:
            self.pki, context = self._tls_options(tls)
        self._server = Server(self.app, settings, context)
        try:
            self.url = self._server.start(START_TIMEOUT, [listening] if listening is not None else None)
        except RuntimeError:
            raise RuntimeError("the in-process mock server did not start") from None
        assert self._server.loop is not None  # set once started
        self._loop = self._server.loop

    def _tls_options(self, tls: str) -> tuple[TestPki, ssl.SSLContext]:
        """`mock-server pki init` into a temporary directory (kept until the process ends: a test may hand its
        files to the code under test at any time), and the TLS context of its server certificate."""
        import tempfile

        from mock_server.http.tls import server_context
        from mock_server.pki import init

        self._pki_directory = tempfile.TemporaryDirectory(prefix="mock-server-pki-")
        pki = init(Path(self._pki_directory.name), key_type="ec")  # EC: made in milliseconds, RSA in a second
        client_ca = pki.ca if tls == "mutual" else None
        return pki, server_context(pki.server_cert, pki.server_key, client_ca, "required")

    def with_sessions(self, work: Callable[[SessionDoor], _T]) -> _T:
        """`work(door)` on the server's session door, run in the server's event loop (the one thread that touches
        its sessions: a request may be under way in it); its result, or its exception (the door's `ApiError`), in
        the caller's thread. What the /__mock/sessions routes do, without HTTP: a trip to another thread, not a
        request."""
        from concurrent.futures import Future

        from mock_server.state.session_door import SessionDoor

        door = SessionDoor(self.app.state.sessions)
        done: Future[_T] = Future()

        def run() -> None:
            try:
                done.set_result(work(door))
            except BaseException as exc:
                done.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return done.result(timeout=START_TIMEOUT)

    def stop(self) -> None:
        """Stop the server at once and wait for its thread (Server.halt): the process may end soon after, and a
        server thread still running then could crash it; uvicorn's graceful shutdown would sleep for about 0.2 s
        (its 0.1 s tick, then 0.1 s for the connections to close) that no test needs."""
        self._server.halt()

    def __enter__(self) -> InProcessServer:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


class SharedServer:
    """One server for several processes, owned by this one: its socket bound and listening at once (`url`), and the
    server started on it when the first connection arrives (no caller, no cost; the first calls wait in the
    socket's backlog meanwhile), as a child process (mock_server/shared_server.py) that serves until its standard
    input, a pipe from this process, ends: at `stop()`, or when this process dies, however it dies. Without
    `child_process`, an InProcessServer of this process serves it instead (`server`).

    `options`: `fixtures` and `admin_token`, as InProcessServer takes them."""

    def __init__(self, options: Mapping[str, str], child_process: bool = CHILD_PROCESS) -> None:
        self._options = dict(options)
        self._child_process = child_process
        self._socket = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self.process: subprocess.Popen[bytes] | None = None
        self.server: InProcessServer | None = None  # without a child process
        self._problem: str | None = None  # why the server could not be started
        # The first call arrived and the start began: set before the server is made, as it serves that call before
        # its constructor returns (a caller answered must find it started).
        self._called = False
        self._log: IO[bytes] | None = None  # the child's standard error: what it said if it failed
        self._wake, self._waker = socket.socketpair()
        self._thread = threading.Thread(target=self._start_when_called, name="mock-server-shared", daemon=True)
        self._thread.start()

    def _start_when_called(self) -> None:
        try:
            readable, _, _ = select.select([self._socket, self._wake], [], [])
            if self._socket in readable and self._wake not in readable:
                self._called = True
                if not self._child_process:
                    given = self._options
                    self.server = InProcessServer(given.get("fixtures"), given.get("admin_token"), None, self._socket)
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
    def started(self) -> bool:
        return self._called

    @property
    def problem(self) -> str | None:
        """Why the server is not serving (None: it is, or it was never called)."""
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
        if self._called:
            # The server answers its first call before the start thread has kept it (`server`, `process`): a
            # caller answered already must find it kept, so the start is waited for (it ends once kept).
            self._thread.join(timeout=START_TIMEOUT)
        if self.server is not None:
            return self.server.with_sessions(lambda door: door.names())
        if self.process is None or self.process.poll() is not None:
            return None
        import http.client

        port = int(self.url.rsplit(":", 1)[1])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        token = self._options.get("admin_token")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        try:
            connection.request("GET", "/__mock/sessions", headers=headers)
            answer = connection.getresponse()
            listing = json.loads(answer.read(1 << 24)) if answer.status == 200 else None
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
