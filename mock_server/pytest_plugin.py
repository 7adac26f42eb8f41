"""The pytest plugin (`pytest11` entry point `mock_server`): a mock server for a test suite, one clean session a test.

    def test_lookup(pix_mock):
        client = MyPixClient(base_url=pix_mock.url)   # the code under test, isolated by its base URL alone
        pix_mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")
        assert client.event("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11").status == "paid"

By default the server runs in-process (uvicorn in a thread on 127.0.0.1, port 0), started on first use, one per
pytest process: under pytest-xdist every worker has its own. `--mock-server-url URL` uses a running server
instead; each test then works in a session named for this process and test, so workers and concurrent CI jobs
never share state.

`--mock-server-tls https` serves the in-process server over https, `mutual` over mutual TLS (a client certificate
required), with certificates `mock-server pki init` makes in a temporary directory (needs the `tls` extra):
`pix_mock.pki` hands the test their files (`pki.ca`, `pki.client()`, `pki.client("expired")`, ...) for the code
under test to load, and `pix_mock.client` trusts the CA and presents the good client certificate.

At load time this module imports pytest and the standard library only: the server (Starlette, uvicorn) and
httpx are imported when a test first asks for `pix_mock`.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

import pytest

if TYPE_CHECKING:
    import ssl

    import httpx
    import uvicorn

    from mock_server.pki import TestPki

_T = TypeVar("_T")
GROUP = "mock-server"
MARKER = "mock_server"
START_TIMEOUT = 60.0  # seconds for the in-process server to accept connections
JOURNAL_SHOWN = 50  # the last N journal entries attached to a failed test's report
PACT_PROVIDER = "pix-limits"
ANY_CLIENT: Any = object()  # verify(client_cnpj=...) not given: calls with any client certificate or none count


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
    where = f"external {url}" if url else "in-process (uvicorn on 127.0.0.1, a free port, started on first use)"
    scenario = _setting(config, "scenario") or "the server's default"
    kept = "; a failed test's session is kept" if _switch(config, "keep_failed") else ""
    pact = _setting(config, "pact")
    pacts = f"; the pact of the run's calls into {pact}" if pact else ""
    tls = _setting(config, "tls")
    over = f"; over {'mutual TLS' if tls == 'mutual' else 'https'}" if tls and not url else ""
    return f"mock-server: {where}; scenario {scenario}{kept}{over}{pacts}"


class MockServerError(AssertionError):
    """An admin call the fixture made was refused: the status and the contract's error body say why (the message
    names each field the server complained of, one a line)."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status answered
        self.body = body  # the contract's error body ({"code", "message", "details"?}), or the text when not JSON


class VerificationFailed(AssertionError):
    """`pix_mock.verify(...)` did not hold: the message is the mock's verdict followed by every call of the
    operation it journaled (the last JOURNAL_SHOWN of them), so pytest's output says what the client really did."""

    def __init__(self, message: str, matched: int, calls: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.matched = matched  # the journaled calls that matched the operation, status and body
        self.calls = calls  # every journaled call of the operation, oldest first (journal entries)


class _InProcessServer:
    """uvicorn serving create_app(Settings(...)) in a daemon thread of this process."""

    def __init__(self, config: pytest.Config) -> None:
        from pathlib import Path

        import uvicorn

        from mock_server.app import create_app
        from mock_server.http.connection import protocol_class
        from mock_server.settings import Settings
        from mock_server.state.bounds import ConnectionLimits

        fixtures = _setting(config, "fixtures")
        options: dict[str, Any] = {"port": 0, "admin_token": _setting(config, "admin_token")}
        if fixtures:
            options["fixtures"] = Path(fixtures)
        self.app = create_app(Settings(**options))
        self.tls = _setting(config, "tls")
        self.pki: TestPki | None = None
        tls_options: dict[str, Any] = {}
        if self.tls:
            self.pki, tls_options = self._tls_options()
        uvicorn_config = (uvicorn.Config if self.tls is None else _tls_config_class())(
            self.app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            ws="none",
            access_log=False,
            server_header=False,  # the headers `mock-server` answers with (cli.uvicorn_config), and only those:
            date_header=False,  # the same answers, and a JSON one leaves in one write (http/connection.py)
            # mock-server's own protocol: a `reset` fault can drop; over TLS, the client certificate is journaled
            http=protocol_class(ConnectionLimits(), tls=self.tls is not None),
            **tls_options,
        )
        self._server: uvicorn.Server = uvicorn.Server(uvicorn_config)
        self._thread = threading.Thread(target=self._server.run, name="mock-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the in-process mock server did not start")
            time.sleep(0.001)
        server = self._server.servers[0]
        port = server.sockets[0].getsockname()[1]
        self.url = f"{'https' if self.tls else 'http'}://127.0.0.1:{port}"
        self._loop = server.get_loop()

    def _tls_options(self) -> tuple[TestPki, dict[str, Any]]:
        """`mock-server pki init` into a temporary directory (kept until the process ends: the test may hand its
        files to the code under test at any time), and uvicorn's TLS options for its server certificate."""
        import tempfile
        from pathlib import Path

        from mock_server.http.tls import server_context
        from mock_server.pki import init

        self._pki_directory = tempfile.TemporaryDirectory(prefix="mock-server-pki-")
        pki = init(Path(self._pki_directory.name), key_type="ec")  # EC: made in milliseconds, RSA in a second
        client_ca = pki.ca if self.tls == "mutual" else None
        context = server_context(pki.server_cert, pki.server_key, client_ca, "required")
        return pki, {"ssl_context_factory": lambda config, default: context}

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

    def stop(self, wait: bool = False) -> None:
        """Tell the server to stop. Without `wait`, the run goes on meanwhile: uvicorn's graceful shutdown sleeps
        for about 0.2 s (its 0.1 s tick, then 0.1 s for the connections to close) that no test needs, and the
        daemon thread ends by itself, or with the process."""
        self._server.should_exit = True
        if wait:
            self._thread.join(timeout=10)


def _tls_config_class() -> type[uvicorn.Config]:
    from mock_server.http.tls_handshake import TlsConfig  # asyncio's loop, answering handshakes as a real server

    return TlsConfig


_IN_PROCESS = pytest.StashKey[_InProcessServer]()  # on the config: the server this process started, if it did


@pytest.fixture(scope="session")
def pix_mock_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL of this process's mock server: the external one, or one started in-process."""
    url = _setting(request.config, "url")
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
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{secrets.token_hex(4)}"


_RUN_ID = _run_id()
_COUNTER = iter(range(1, 1 << 62))


class PixMock:
    """One test's session on the mock server: `.url` for the code under test, `.client` and helpers for the test.

    `transport`: the connection pool `.client` sends through; without one, `.client` has a pool of its own."""

    def __init__(
        self, server_url: str, name: str, token: str | None, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.name = name
        self.server_url = server_url
        self.url = f"{server_url}/__session/{name}"
        self.kept = False  # the fixture left the session on the server (a failed test, --mock-server-keep-failed)
        # --mock-server-tls: the test certificates' files (pki.ca, pki.client(), pki.client("expired"), ...)
        self.pki: TestPki | None = None
        self._transport = transport
        self._run: _Run | None = None  # the fixture's run, whose pool `transport` is
        # X-Mock-Admin: a bodyless admin call that changes state (a cancel, a snapshot) needs it (docs/threat-model.md).
        self._headers = {"X-Mock-Admin": "1", **({"Authorization": f"Bearer {token}"} if token else {})}

    @property
    def transport(self) -> httpx.BaseTransport | None:
        """The connection pool `.client` sends through. The fixture's is the run's: the same object for every
        test, built when a test first needs it. Hand it to the code under test's own
        `httpx.Client(transport=...)` to spare it a pool and an SSL context (its close() does nothing)."""
        return self._run.transport if self._run is not None else self._transport

    @functools.cached_property
    def client(self) -> httpx.Client:
        """An httpx.Client on `url`, sending X-Mock-Admin: 1 and the admin token when there is one; made when first
        used (a test that only hands `url` to the code under test never pays for one)."""
        import httpx

        return httpx.Client(base_url=self.url, headers=self._headers, timeout=30.0, transport=self.transport)

    def _admin(
        self, method: str, path: str, body: Any = None, expect: int = 200, *, yaml_text: str | None = None
    ) -> Any:
        """Send an admin call (a JSON body, or `yaml_text` as application/yaml); anything but `expect` raises
        MockServerError."""
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        response = self._send(method, path, body, yaml_text)
        if response.status_code != expect:
            raise self._refusal(method, path, response)
        return response.json() if response.content else None

    def _send(self, method: str, path: str, body: Any = None, yaml_text: str | None = None) -> httpx.Response:
        if yaml_text is not None:
            return self.client.request(
                method, f"/__mock{path}", content=yaml_text.encode(), headers={"Content-Type": "application/yaml"}
            )
        return self.client.request(method, f"/__mock{path}", json=body)

    def _refusal(self, method: str, path: str, response: httpx.Response) -> MockServerError:
        return _refusal(method, f"{self.url}/__mock{path}", response.status_code, response.text)

    def reset(self, scenario: str | None = None, seed: int | None = None, *, reseed: bool = False) -> dict[str, Any]:
        """Back to the scenario's seed (switching to `scenario` when given): empty journal, no faults, real
        clock. `seed` (or `reseed=True` with None: random ids) sets the session's id seed."""
        body: dict[str, Any] = {}
        if scenario is not None:
            body["scenario"] = scenario
        if seed is not None or reseed:
            body["seed"] = seed
        result: dict[str, Any] = self._admin("POST", "/reset", body)
        return result

    def freeze(self, at: str | datetime | None) -> dict[str, Any]:
        """Freeze the session clock at `at` (ISO 8601 with an offset, or an aware datetime); None: real time."""
        now = at.isoformat() if isinstance(at, datetime) else at
        result: dict[str, Any] = self._admin("PUT", "/clock", {"now": now})
        return result

    def fault(
        self,
        operation_id: str,
        status: int | None = None,
        body: Any = None,
        delay_ms: int = 0,
        times: int | None = 1,
        kind: str = "respond",
        text: str | None = None,
        match: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Make the next `times` calls of `operation_id` answer `status` (and `body`) after `delay_ms`; `kind`
        `reset`, `malformed` (with `text`) or `slow_body`, and `match` ({"path": {...}, "body_contains": ...}:
        only the calls it holds for) as POST /__mock/faults describes."""
        spec: dict[str, Any] = {"operation_id": operation_id, "kind": kind, "delay_ms": delay_ms, "times": times}
        if status is not None:
            spec["status"] = status
        if body is not None:
            spec["body"] = body
        if text is not None:
            spec["text"] = text
        if match is not None:
            spec["match"] = match
        result: dict[str, Any] = self._admin("POST", "/faults", spec, expect=201)
        return result

    def pay(self, key: str, amount: float | str | None = None, paid_at: str | None = None) -> dict[str, Any]:
        """Pay the event `key`, the open balance unless `amount` is given; answers the event."""
        body: dict[str, Any] = {}
        if amount is not None:
            body["amount"] = float(amount) if isinstance(amount, str) else amount
        if paid_at is not None:
            body["paid_at"] = paid_at
        result: dict[str, Any] = self._admin("POST", f"/events/{key}/pay", body)
        return result

    def cancel(self, key: str) -> dict[str, Any]:
        """Cancel the event `key`; answers the event."""
        result: dict[str, Any] = self._admin("POST", f"/events/{key}/cancel")
        return result

    def state(self) -> dict[str, Any]:
        """The session's state, as a scenario file writes it."""
        result: dict[str, Any] = self._admin("GET", "/state")
        return result

    def requests(self) -> list[dict[str, Any]]:
        """The journal: what the public API received in this session, oldest first."""
        result: list[dict[str, Any]] = self._admin("GET", "/requests")["requests"]
        return result

    def verify(
        self,
        operation_id: str,
        *,
        status: int | None = None,
        body_contains: Any = None,
        times: int | None = None,
        at_least: int | None = None,
        at_most: int | None = None,
        client_cnpj: Any = ANY_CLIENT,
    ) -> dict[str, Any]:
        """Assert what the client called (POST /__mock/verify): the session's journaled calls of `operation_id`
        answered `status` whose request body contains `body_contains` (a JSON subset), made with a TLS client
        certificate of `client_cnpj` (None: with none), number exactly `times`, or at least `at_least` and at
        most `at_most` (none of them: at least once). Answers the verdict when it holds;
        raises VerificationFailed listing every call of the operation the mock saw when it does not, and
        MockServerError when the server refuses the question (an unknown operation, times with at_least)."""
        __tracebackhide__ = True
        options = {
            "status": status,
            "body_contains": body_contains,
            "times": times,
            "at_least": at_least,
            "at_most": at_most,
        }
        spec = {"operation_id": operation_id} | {name: value for name, value in options.items() if value is not None}
        if client_cnpj is not ANY_CLIENT:
            spec["client_cnpj"] = client_cnpj
        response = self._send("POST", "/verify", spec)
        failure = response.json() if response.status_code == 409 else None
        if isinstance(failure, dict) and failure.get("code") == "verification_failed":
            raise VerificationFailed(_failure_text(self, failure), failure["matched"], failure["calls"])
        if response.status_code != 200:
            raise self._refusal("POST", "/verify", response)
        result: dict[str, Any] = response.json()
        return result

    def coverage(self) -> dict[str, Any]:
        """Server-wide coverage (GET /__mock/coverage): for each public operation, the documented statuses
        answered (with counts), those never answered, undocumented and injected ones, and the fields that failed
        validation. Every session of the server counts, so it is the whole run's (in-process: this process's)."""
        result: dict[str, Any] = self._admin("GET", "/coverage")
        return result

    def coverage_markdown(self) -> str:
        """The same coverage as the Markdown report (GET /__mock/coverage?format=markdown), to print or keep."""
        __tracebackhide__ = True
        response = self.client.get("/__mock/coverage", params={"format": "markdown"})
        if response.status_code != 200:
            raise self._refusal("GET", "/coverage?format=markdown", response)
        return response.text

    def snapshot(self, name: str) -> dict[str, Any]:
        """Copy the session's events, accounts and pending schedules under `name` (POST /__mock/snapshots/NAME;
        replaces one of that name; at most 16 a session). Answers its summary (name, taken_at, counts). A name is
        written as a session's: 1 to 64 of `A-Za-z0-9._-`, not `.` or `..`."""
        result: dict[str, Any] = self._admin("POST", f"/snapshots/{_segment(name)}", expect=201)
        return result

    def restore(self, name: str) -> dict[str, Any]:
        """Put the snapshot `name` back (POST /__mock/snapshots/NAME/restore): the session's events, accounts and
        schedules become its again; the journal, faults, clock and ids stay. The snapshot stays too."""
        result: dict[str, Any] = self._admin("POST", f"/snapshots/{_segment(name)}/restore")
        return result

    def snapshots(self) -> list[dict[str, Any]]:
        """The session's snapshots (GET /__mock/snapshots), in the order first taken."""
        result: list[dict[str, Any]] = self._admin("GET", "/snapshots")["snapshots"]
        return result

    def forget_snapshot(self, name: str) -> None:
        """Forget the snapshot `name` (DELETE /__mock/snapshots/NAME)."""
        self._admin("DELETE", f"/snapshots/{_segment(name)}", expect=204)

    def load_state(self, document: Mapping[str, Any] | str) -> dict[str, Any]:
        """Load a scenario document into the session (PUT /__mock/state): a mapping is sent as JSON, a string as
        YAML (what `state()` answers, or `?format=yaml` exports). Validated as a scenario file: a bad document
        raises MockServerError naming every field at fault, and changes nothing. Answers the counts loaded."""
        if isinstance(document, str):
            result: dict[str, Any] = self._admin("PUT", "/state", yaml_text=document)
        else:
            result = self._admin("PUT", "/state", dict(document))
        return result

    def schedule(
        self,
        key: str,
        action: str,
        *,
        amount: float | str | None = None,
        after_lookups: int | None = None,
        at: str | datetime | None = None,
    ) -> dict[str, Any]:
        """Schedule `action` ("pay", with `amount` or the open balance; or "cancel") on the event `key`, for a
        client that polls (POST /__mock/events/KEY/schedule): the `after_lookups`-th lookup of the event from now
        answers with it applied, or the first call once the session clock reaches `at`. Give one of the two.
        Answers the schedule."""
        body: dict[str, Any] = {"action": action}
        if amount is not None:
            body["amount"] = float(amount) if isinstance(amount, str) else amount
        if after_lookups is not None:
            body["after_lookups"] = after_lookups
        if at is not None:
            body["at"] = at.isoformat() if isinstance(at, datetime) else at
        result: dict[str, Any] = self._admin("POST", f"/events/{_segment(key)}/schedule", body, expect=201)
        return result

    def schedules(self) -> list[dict[str, Any]]:
        """The session's schedules (GET /__mock/schedules) in the order made: pending, applied or failed (with
        the reason in `outcome`)."""
        result: list[dict[str, Any]] = self._admin("GET", "/schedules")["schedules"]
        return result

    def advance(self, seconds: float | timedelta) -> dict[str, Any]:
        """Move the frozen session clock forward (POST /__mock/clock/advance), applying the schedules whose `at`
        it reaches; the clock must be frozen first (`freeze`, or the marker's `clock`). Answers the clock."""
        amount = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
        result: dict[str, Any] = self._admin("POST", "/clock/advance", {"seconds": amount})
        return result

    def close(self) -> None:
        client: httpx.Client | None = self.__dict__.pop("client", None)
        if client is not None:
            client.close()


def _refusal(method: str, url: str, status: int, text: str) -> MockServerError:
    """The error for a refused admin call: the status, the contract's code and message, then each detail as
    `field: message`, so a bad argument is named in the test's output."""
    try:
        error = json.loads(text)
    except ValueError:
        error = None
    head = f"{method} {url} answered {status}"
    if not isinstance(error, dict) or "code" not in error:
        return MockServerError(f"{head}: {text}", status, text)
    lines = [f"{head} {error['code']}: {error.get('message', '')}"]
    for detail in error.get("details") or []:
        lines.append(f"    {detail.get('field') or '(the body)'}: {detail.get('message', '')}")
    return MockServerError("\n".join(lines), status, error)


def _shared(pool: httpx.BaseTransport) -> httpx.BaseTransport:
    """`pool` behind a transport whose close() does nothing: a test that closes its `pix_mock.client` (or uses it
    in a `with`) leaves the run's pool open for the next test."""
    import httpx

    class SharedTransport(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return pool.handle_request(request)

        def close(self) -> None:
            pass

    return SharedTransport()


class _Lifecycle:
    """POST /__mock/sessions and DELETE /__mock/sessions/NAME over HTTP, for a server in another process: on one
    kept-alive connection of the standard library's http.client, which costs this process a fifth of what a call
    through httpx does. Through `fallback()` (an httpx client of the run) when the server's URL is https or the
    environment names a proxy for it, so that TLS settings and proxies stay httpx's."""

    def __init__(self, server_url: str, headers: dict[str, str], fallback: Callable[[], httpx.Client]) -> None:
        from urllib.parse import urlsplit
        from urllib.request import getproxies_environment, proxy_bypass

        parts = urlsplit(server_url)
        proxies = getproxies_environment()
        proxied = bool({"http", "all"} & proxies.keys()) and not proxy_bypass(parts.netloc)
        self._direct = parts.scheme == "http" and not proxied
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._headers = headers
        self._fallback = fallback
        self._connection: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, bool]:
        """(status, text of the answer, whether the request was sent twice: the kept-alive connection had been
        closed by the server)."""
        if not self._direct:
            answer = self._fallback().request(method, path, json=body)
            return answer.status_code, answer.text, False
        payload = None if body is None else json.dumps(body).encode()
        headers = self._headers if payload is None else {**self._headers, "Content-Type": "application/json"}
        with self._lock:
            for attempt in (1, 2):
                connection, reused = self._connect()
                try:
                    connection.request(method, self._prefix + path, body=payload, headers=headers)
                    response = connection.getresponse()
                    text = response.read().decode()
                except (ConnectionError, http.client.BadStatusLine):
                    self.close()
                    if reused and attempt == 1:
                        continue  # closed by the server while idle: once more, on a new connection
                    raise
                except BaseException:
                    self.close()
                    raise
                if response.will_close:
                    self.close()
                return response.status, text, attempt == 2
        raise AssertionError("unreachable")

    def _connect(self) -> tuple[http.client.HTTPConnection, bool]:
        """The kept-alive connection, or a new one when there is none or the server has closed it (an idle
        connection that reads as ready holds the end of the stream)."""
        import select

        connection = self._connection
        if connection is not None and connection.sock is not None and select.select([connection.sock], [], [], 0)[0]:
            self.close()
            connection = None
        if connection is None:
            connection = self._connection = http.client.HTTPConnection(self._host, self._port, timeout=30.0)
            return connection, False
        return connection, True

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


SEED_MAX = (1 << 63) - 1  # the admin spec's bound of a session's seed


class _Run:
    """What a pytest process does once for all its `pix_mock` sessions: the options, read; the way it makes each
    test's session and deletes it (in the in-process server's event loop, or POST /__mock/sessions and DELETE
    /__mock/sessions/NAME to another server); and one connection pool under every test's client, built when
    first needed (its SSL context is most of what an httpx.Client costs)."""

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
        self._pool: httpx.HTTPTransport | None = None
        self._transport: httpx.BaseTransport | None = None
        self.pki = self._local.pki if self._local is not None else None

    @property
    def transport(self) -> httpx.BaseTransport:
        """The run's pool behind a transport whose close() does nothing, built on first use."""
        with self._lock:
            if self._transport is None:
                import httpx

                self._pool = httpx.HTTPTransport(verify=self._ssl_context()) if self.pki else httpx.HTTPTransport()
                self._transport = _shared(self._pool)
            return self._transport

    def _ssl_context(self) -> ssl.SSLContext:
        """The test CA trusted, the good client certificate presented (needed when the server is `mutual`)."""
        import ssl

        assert self.pki is not None
        context = ssl.create_default_context(cafile=self.pki.ca)
        context.load_cert_chain(*self.pki.client())
        return context

    @functools.cached_property
    def _lifecycle(self) -> _Lifecycle:
        return _Lifecycle(self.server_url, self._headers, lambda: self.client)

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

    def open(self, scenario: str | None, seed: int | None) -> PixMock:
        """A new session, made explicitly on `scenario` (None: the server's) with ids seeded by `seed` (None: the
        server's --seed, if any). In-process, arguments the admin spec would refuse go over HTTP all the same, so
        that the server's own validation answers."""
        __tracebackhide__ = True
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
            status, text, again = self._call("POST", "/__mock/sessions", body)
            if status != 201 and not (again and status == 409):  # 409 the second time: the first one made it
                raise _refusal("POST", url, status, text)
        mock = PixMock(self.server_url, name, self.token)
        mock._run = self
        mock.pki = self.pki
        return mock

    def finish(self, mock: PixMock, failed: bool, consumer: str | None = None) -> None:
        """Delete the test's session, unless it failed and keeping was asked for; with --mock-server-pact, the
        session's pact (a passed test's) is kept for the run's file of `consumer` first."""
        __tracebackhide__ = True
        mock.close()
        if self.pacts is not None and not failed:
            self.pacts.collect(self, mock, consumer)
        if failed and self.keep_failed:
            mock.kept = True
            return
        if self._local is not None:
            self._local.delete_session(mock.name)  # False: the test deleted it itself
            return
        path = f"/__mock/sessions/{_segment(mock.name)}"
        status, text, _ = self._call("DELETE", path)
        if status not in (204, 404):  # 404: the test deleted it itself
            raise _refusal("DELETE", f"{self.server_url}{path}", status, text)

    def kept_text(self, mock: PixMock) -> str:
        until = " (in-process: until this pytest process ends)" if self.in_process else ""
        return (
            f"session {mock.name} is kept on {self.server_url}{until}, for --mock-server-keep-failed: its URL is "
            f"{mock.url}; delete it with DELETE {self.server_url}/__mock/sessions/{_segment(mock.name)} "
            "(and the header X-Mock-Admin: 1)"
        )

    def close(self) -> None:
        lifecycle: _Lifecycle | None = self.__dict__.pop("_lifecycle", None)
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

    def collect(self, run: _Run, mock: PixMock, consumer: str | None) -> None:
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
    pacts = config.stash.get(_PACTS, None)
    if pacts is None or not _setting(config, "pact"):
        return
    if not pacts.written:
        terminalreporter.write_line(f"mock-server: no pact written to {pacts.directory}: no passed test made a call")
    for path, count in pacts.written:
        terminalreporter.write_line(f"mock-server: wrote {path} ({count} interactions)")


_RUN = pytest.StashKey[_Run]()  # on the config: this process's _Run, once a test has asked for pix_mock
_SESSION = pytest.StashKey[PixMock]()  # the test's PixMock, for its report
_FAILED = pytest.StashKey[bool]()  # the test's setup or call failed


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
def pix_mock(request: pytest.FixtureRequest, _pix_mock_run: _Run) -> Iterator[PixMock]:
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


def _journal_text(mock: PixMock) -> str:
    try:
        entries = mock.requests()
    except Exception as exc:  # the report must not fail because the server is gone
        return f"(the journal could not be read: {type(exc).__name__}: {exc})"
    return "\n".join([f"session {mock.name} at {mock.url}: {len(entries)} request(s)", *_entries_text(entries)])


def _entries_text(entries: list[dict[str, Any]]) -> list[str]:
    """Journal entries a line each (and their bodies under them), the last JOURNAL_SHOWN."""
    lines = []
    if len(entries) > JOURNAL_SHOWN:
        lines.append(f"(the first {len(entries) - JOURNAL_SHOWN} left out)")
    for entry in entries[-JOURNAL_SHOWN:]:
        answer = "no answer (an injected reset)" if entry["status"] is None else entry["status"]
        lines.append(f"{entry['received_at']} {entry['method']} {entry['path']} -> {answer}")
        if entry["request_body"] is not None:
            lines.append(f"    request:  {json.dumps(entry['request_body'], ensure_ascii=False)}")
        if entry["response_body"] is not None:
            lines.append(f"    response: {json.dumps(entry['response_body'], ensure_ascii=False)}")
    return lines


def _failure_text(mock: PixMock, failure: dict[str, Any]) -> str:
    """A failed verification as pytest prints it: the mock's verdict, then the calls of the operation it saw."""
    calls: list[dict[str, Any]] = failure["calls"]
    seen = f"The calls of the operation the mock journaled in session {mock.name}"
    lines = [failure["message"], f"{seen}: none." if not calls else f"{seen}, oldest first:"]
    lines += [f"  {line}" for line in _entries_text(calls)]
    return "\n".join(lines)


def _segment(text: str) -> str:
    """`text` as one path segment: a snapshot name may hold spaces, `?` or `#`."""
    return quote(text, safe="")


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
