"""The pytest plugin (`pytest11` entry point `mock_server`): a mock server for a test suite, one clean session a test.

    def test_lookup(pix_mock):
        client = MyPixClient(base_url=pix_mock.url)   # the code under test, isolated by its base URL alone
        pix_mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")
        assert client.event("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11").status == "paid"

`pix_mock` is a `mock_server.client.PixMock` (the client usable without pytest) bound to the test's session; this
module is fixtures over it and over the servers of mock_server/serving.py (usable without pytest too), the
sessions made and deleted by mock_server/session_supply.py. By default the server runs in-process (uvicorn in a
thread on 127.0.0.1, port 0: serving.InProcessServer), started on first use, one per run. Under pytest-xdist the
run has one server too, owned by the controller (serving.SharedServer): its socket bound as the workers start, the
server started when the first worker connects, as a process of its own (a thread of the controller would take turns
with the controller's own work for the interpreter lock), and every worker's tests get their sessions on it.
`--mock-server-url URL` uses a running server instead; each test then works in a session named for this process
and test, so workers and concurrent CI jobs never share state.

`--mock-server-tls https` serves the in-process server over https, `mutual` over mutual TLS (a client certificate
required), with certificates `mock-server pki init` makes in a temporary directory (needs the `tls` extra):
`pix_mock.pki` hands the test their files (`pki.ca`, `pki.client()`, `pki.client("expired")`, ...) for the code
under test to load, and `pix_mock.client` trusts the CA and presents the good client certificate. (Under xdist,
each worker then serves its own: the certificates are made per process.)

At load time this module imports pytest and the standard library only (and `mock_server.client`, which imports
no more): the server (Starlette, uvicorn) and httpx are imported when a test first asks for `pix_mock`.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from mock_server.client import ANY_CLIENT, MockServerError, PixMock, VerificationFailed, entries_text

if TYPE_CHECKING:
    from mock_server.serving import InProcessServer, SharedServer
    from mock_server.session_supply import RunPacts, SessionSupply, SuppliedSession

__all__ = ["ANY_CLIENT", "MockServerError", "PixMock", "VerificationFailed"]  # re-exported: the client's

GROUP = "mock-server"
MARKER = "mock_server"
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


# Without a child process (a system without pass_fds), the xdist run's server is a thread of the controller: slower
# under -n (the two share one interpreter lock). A conftest may turn it off to try that road.
CHILD_PROCESS = os.name == "posix"
_IN_PROCESS = pytest.StashKey["InProcessServer"]()  # on the config: the server this process started, if it did
_SHARED = pytest.StashKey["SharedServer"]()  # on the xdist controller's config: the run's server, once bound
_WORKER_URL = "mock_server_url"  # the key of the run's server URL in an xdist worker's workerinput


def __getattr__(name: str) -> Any:
    """`_InProcessServer`, the class of the server this plugin starts (mock_server/serving.py), for a conftest that
    wraps it (counting starts): imported when named, as the plugin imports the server only when a test needs it."""
    if name == "_InProcessServer":
        from mock_server.serving import InProcessServer

        return InProcessServer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist's controller, a worker starting: it gets the URL of the run's server (bound by the first
    worker's start, served when first called: serving.SharedServer), unless the run uses an external one or TLS
    (certificates are made per process)."""
    config = node.config
    if _setting(config, "url") or _setting(config, "tls"):
        return
    shared = config.stash.get(_SHARED, None)
    if shared is None:
        from mock_server.serving import SharedServer

        shared = config.stash[_SHARED] = SharedServer(_server_options(config), child_process=CHILD_PROCESS)
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
    server_class: type[InProcessServer] = __getattr__("_InProcessServer")
    given = _server_options(request.config)
    server = server_class(given.get("fixtures"), given.get("admin_token"), _setting(request.config, "tls"))
    request.config.stash[_IN_PROCESS] = server
    try:
        yield server.url
    finally:
        server.stop()


_PACTS = pytest.StashKey["RunPacts"]()  # on the config: the run's pacts, when --mock-server-pact asks for them
_WORKER_PACTS = "mock_server_pacts"  # the key of a worker's pacts in its xdist workeroutput


def _pacts(config: pytest.Config) -> RunPacts:
    """--mock-server-pact: the run's pacts (session_supply.RunPacts). Under pytest-xdist each worker hands its own
    to the controller, which writes the files; without it the process writes them at the end of the run."""
    found = config.stash.get(_PACTS, None)
    if found is None:
        from pathlib import Path

        from mock_server.session_supply import RunPacts

        asked = {"amounts": _setting(config, "pact_amounts"), "mock_defined": _setting(config, "pact_mock_defined")}
        found = config.stash[_PACTS] = RunPacts(
            Path(str(_setting(config, "pact"))),
            _setting(config, "pact_consumer") or config.rootpath.name,
            _setting(config, "pact_provider") or PACT_PROVIDER,
            {name: value for name, value in asked.items() if value},
        )
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
    if shared is not None and (shared.started or shared.problem is not None):
        terminalreporter.write_line(_shared_text(shared))  # the xdist controller's server: up until unconfigure
    pacts = config.stash.get(_PACTS, None)
    if pacts is None or not _setting(config, "pact"):
        return
    if not pacts.written:
        terminalreporter.write_line(f"mock-server: no pact written to {pacts.directory}: no passed test made a call")
    for path, count in pacts.written:
        terminalreporter.write_line(f"mock-server: wrote {path} ({count} interactions)")


def _shared_text(shared: SharedServer) -> str:
    problem = shared.problem
    if problem is not None:
        return f"mock-server: the run's server at {shared.url} did not start: {problem}"
    left = shared.sessions_left()
    kept = "unknown (no answer)" if left is None else f"{len(left)} left: {', '.join(left)}" if left else "none left"
    pid = f" (process {shared.process.pid})" if shared.process is not None else ""
    return f"mock-server: one server for the run, started in the xdist controller at {shared.url}{pid}; sessions {kept}"


_RUN = pytest.StashKey["_Run"]()  # on the config: this process's _Run, once a test has asked for pix_mock
_SESSION = pytest.StashKey["SuppliedSession"]()  # the test's PixMock, for its report
_FAILED = pytest.StashKey[bool]()  # the test's setup or call failed


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


@dataclass(frozen=True)
class _Run:
    """What a pytest process reads once for all its `pix_mock` sessions, and the supply that makes and deletes them
    (mock_server/session_supply.py: in the in-process server's event loop, a batch at a time on the xdist run's own
    server, one call a test on another)."""

    supply: SessionSupply
    clock: str | None
    seed: str | None  # as given: the fixture's int() reports one that is no integer
    keep_failed: bool
    pacts: RunPacts | None

    def finish(self, mock: SuppliedSession, failed: bool, consumer: str | None = None) -> None:
        """Delete the test's session, unless it failed and keeping was asked for; with --mock-server-pact, the
        session's pact (a passed test's) is kept for the run's file of `consumer` first."""
        __tracebackhide__ = True
        if self.pacts is not None and not failed:
            self.pacts.collect(self.supply, mock, consumer)
        self.supply.finish(mock, keep=failed and self.keep_failed)


@pytest.fixture(scope="session")
def _pix_mock_run(request: pytest.FixtureRequest, pix_mock_server: str) -> Iterator[_Run]:
    from mock_server.session_supply import SessionSupply

    config = request.config
    server = config.stash.get(_IN_PROCESS, None)
    local = server if server is not None and server.url == pix_mock_server else None
    batch = _batch_size(config) if local is None and pix_mock_server == _shared_url(config) else 0
    seed = _setting(config, "seed")
    supply = SessionSupply(
        pix_mock_server,
        token=_setting(config, "admin_token"),
        scenario=_setting(config, "scenario"),
        seed=_seed(seed),
        local=local,
        batch=batch,
    )
    pacts = _pacts(config) if _setting(config, "pact") else None
    run = config.stash[_RUN] = _Run(supply, _setting(config, "clock"), seed, _switch(config, "keep_failed"), pacts)
    try:
        yield run
    finally:
        del config.stash[_RUN]
        supply.close()


@pytest.fixture
def pix_mock(request: pytest.FixtureRequest, _pix_mock_run: _Run) -> Iterator[SuppliedSession]:
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
    scenario = wanted.get("scenario", run.supply.scenario)
    clock = wanted.get("clock", run.clock)
    seed = wanted.get("seed", run.seed)
    mock = run.supply.open(scenario, int(seed) if seed is not None else None)
    request.node.stash[_SESSION] = mock
    try:
        if clock is not None:
            mock.freeze(clock)
    except BaseException:
        run.finish(mock, failed=True)
        raise
    yield mock
    run.finish(mock, failed=request.node.stash.get(_FAILED, False), consumer=consumer)


def _journal_text(mock: SuppliedSession) -> str:
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
        report.sections.append(("mock-server session kept", run.supply.kept_text(mock)))
    return report
