"""The pytest plugin (`pytest11` entry point `mock_server`): a mock server for a test suite, one clean session a test.

    def test_lookup(pix_mock):
        client = MyPixClient(base_url=pix_mock.url)   # the code under test, isolated by its base URL alone
        pix_mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")
        assert client.event("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11").status == "paid"

By default the server runs in-process (uvicorn in a thread on 127.0.0.1, port 0), started on first use, one per
pytest process: under pytest-xdist every worker has its own. `--mock-server-url URL` uses a running server
instead; each test then works in a session named for this process and test, so workers and concurrent CI jobs
never share state.

At load time this module imports pytest and the standard library only: the server (Starlette, uvicorn) and
httpx are imported when a test first asks for `pix_mock`.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx
    import uvicorn

GROUP = "mock-server"
MARKER = "mock_server"
START_TIMEOUT = 60.0  # seconds for the in-process server to accept connections
JOURNAL_SHOWN = 50  # the last N journal entries attached to a failed test's report


@dataclass(frozen=True)
class _Option:
    name: str  # --mock-server-NAME, ini mock_server_NAME, MOCK_SERVER_NAME
    help: str

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
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "mock server of the PIX limits interface (pix_mock fixture)")
    for option in OPTIONS:
        group.addoption(
            option.flag, dest=option.ini, default=None, help=f"{option.help}; ini {option.ini}, env {option.env}"
        )
        parser.addini(option.ini, f"{option.help} (--mock-server-... and {option.env} win)", default=None)


def _setting(config: pytest.Config, name: str) -> str | None:
    """A flag wins over its environment variable, which wins over the ini file."""
    option = next(o for o in OPTIONS if o.name == name)
    given = config.getoption(option.ini)
    if given is None:
        given = os.environ.get(option.env) or config.getini(option.ini) or None
    return str(given) if given is not None else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario=None, clock=None, seed=None): start this test's pix_mock session on this scenario, "
        "with its clock frozen at `clock` and its ids seeded with `seed`",
    )


def pytest_report_header(config: pytest.Config) -> str:
    url = _setting(config, "url")
    where = f"external {url}" if url else "in-process (uvicorn on 127.0.0.1, a free port, started on first use)"
    scenario = _setting(config, "scenario") or "the server's default"
    return f"mock-server: {where}; scenario {scenario}"


class MockServerError(AssertionError):
    """An admin call the fixture made was refused: the status and the contract's error body say why."""


class _InProcessServer:
    """uvicorn serving create_app(Settings(...)) in a daemon thread of this process."""

    def __init__(self, config: pytest.Config) -> None:
        from pathlib import Path

        import uvicorn

        from .app import create_app
        from .bounds import ConnectionLimits
        from .connection import protocol_class
        from .settings import Settings

        fixtures = _setting(config, "fixtures")
        options: dict[str, Any] = {"port": 0, "admin_token": _setting(config, "admin_token")}
        if fixtures:
            options["fixtures"] = Path(fixtures)
        self.app = create_app(Settings(**options))
        uvicorn_config = uvicorn.Config(
            self.app,
            host="127.0.0.1",
            port=0,
            log_level="warning",
            lifespan="off",
            ws="none",
            access_log=False,
            http=protocol_class(ConnectionLimits()),  # mock-server's own protocol: a `reset` fault can drop
        )
        self._server: uvicorn.Server = uvicorn.Server(uvicorn_config)
        self._thread = threading.Thread(target=self._server.run, name="mock-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the in-process mock server did not start")
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)


@pytest.fixture(scope="session")
def pix_mock_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The base URL of this process's mock server: the external one, or one started in-process."""
    url = _setting(request.config, "url")
    if url:
        yield url.rstrip("/")
        return
    server = _InProcessServer(request.config)
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
    """One test's session on the mock server: `.url` for the code under test, `.client` and helpers for the test."""

    def __init__(self, server_url: str, name: str, token: str | None) -> None:
        import httpx

        self.name = name
        self.server_url = server_url
        self.url = f"{server_url}/__session/{name}"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client: httpx.Client = httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    def _admin(self, method: str, path: str, body: Any = None, expect: int = 200) -> Any:
        response = self.client.request(method, f"/__mock{path}", json=body)
        if response.status_code != expect:
            raise MockServerError(f"{method} {self.url}/__mock{path} answered {response.status_code}: {response.text}")
        return response.json() if response.content else None

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

    def close(self) -> None:
        self.client.close()


_SESSION = pytest.StashKey["PixMock"]()  # the test's PixMock, for its report


def _session_name() -> str:
    return f"pytest-{_RUN_ID}-{next(_COUNTER)}"


@pytest.fixture
def pix_mock(request: pytest.FixtureRequest, pix_mock_server: str) -> Iterator[PixMock]:
    """A session of its own on the mock server, reset before the test to the scenario (option or marker),
    with the marker's or the option's clock and seed."""
    config = request.config
    marker = request.node.get_closest_marker(MARKER)
    wanted: dict[str, Any] = dict(marker.kwargs) if marker else {}
    unknown = set(wanted) - {"scenario", "clock", "seed"}
    if unknown:
        raise pytest.UsageError(f"@pytest.mark.{MARKER} takes scenario, clock and seed, not {sorted(unknown)}")
    scenario = wanted.get("scenario", _setting(config, "scenario"))
    clock = wanted.get("clock", _setting(config, "clock"))
    seed = wanted.get("seed", _setting(config, "seed"))
    mock = PixMock(pix_mock_server, _session_name(), _setting(config, "admin_token"))
    request.node.stash[_SESSION] = mock
    try:
        mock.reset(scenario, int(seed) if seed is not None else None)  # no seed: the server's --seed, if any
        if clock is not None:
            mock.freeze(clock)
        yield mock
    finally:
        mock.close()


def _journal_text(mock: PixMock) -> str:
    try:
        entries = mock.requests()
    except Exception as exc:  # the report must not fail because the server is gone
        return f"(the journal could not be read: {type(exc).__name__}: {exc})"
    lines = [f"session {mock.name} at {mock.url}: {len(entries)} request(s)"]
    if len(entries) > JOURNAL_SHOWN:
        lines.append(f"(the first {len(entries) - JOURNAL_SHOWN} left out)")
    for entry in entries[-JOURNAL_SHOWN:]:
        lines.append(f"{entry['received_at']} {entry['method']} {entry['path']} -> {entry['status']}")
        if entry["request_body"] is not None:
            lines.append(f"    request:  {json.dumps(entry['request_body'], ensure_ascii=False)}")
        if entry["response_body"] is not None:
            lines.append(f"    response: {json.dumps(entry['response_body'], ensure_ascii=False)}")
    return "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report carries its session's journal, shown under the failure."""
    report = yield
    mock = item.stash.get(_SESSION, None)
    if mock is not None and report.failed and report.when == "call":
        report.sections.append(("mock-server journal", _journal_text(mock)))
    return report
