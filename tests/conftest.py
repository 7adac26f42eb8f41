"""Shared fixtures: the specs and the app are built once; every test gets fresh sessions.

Set MOCK_SERVER_TEST_URL=http://127.0.0.1:8000 to run the API tests against a live server instead of
in-process: each test then works in a session of its own, reset before it starts.

The `client` reads the session's state before every request it sends, so that `tests.helpers.assert_error`
can check that a rejected request changed nothing.
"""

from __future__ import annotations

import gc
import itertools
import os
import re
import shlex
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Imported before any test: pytester's tests forget every module first imported while they run, and httpx keeps the
# classes of the httpcore it first saw to map its errors (a pool made after such a test raises httpcore's errors
# unmapped: a reset fault's ReadError was no httpx.TransportError when a pytester test came first in the worker).
import httpcore  # noqa: F401
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.pki import TestPki
from mock_server.pki import init as init_pki
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from tests.helpers import ADMIN_HEADERS, Client, StateNotRead, WatchedLiveClient, WatchedTestClient, checks_state
from tests.whole_answer_client import WholeAnswerTestClient

LIVE_URL = os.environ.get("MOCK_SERVER_TEST_URL")


@pytest.fixture(scope="session")
def specs() -> Specs:
    return load_specs()


@pytest.fixture(scope="session")
def app(specs: Specs) -> Starlette:
    # Every response any test provokes is checked against the spec: a deviation is a 500 and fails the test.
    return create_app(Settings(validate_responses=True), specs)


@pytest.fixture(scope="session")
def test_pki(tmp_path_factory: pytest.TempPathFactory) -> TestPki:
    """`mock-server pki init` once per test process (EC keys: quicker to make), for the TLS tests."""
    return init_pki(tmp_path_factory.mktemp("pki"), key_type="ec")


@pytest.fixture(scope="session")
def _portal() -> Iterator[BlockingPortal]:
    """The event loop (in a thread of its own) the `client` fixture's clients call the app in: one a process. A
    client entered for each test started one and stopped it (~3 ms a test, two thousand tests); the app has no
    lifespan for `with` to run."""
    with start_blocking_portal(backend="asyncio") as portal:
        yield portal


@pytest.fixture
def client(app: Starlette, request: pytest.FixtureRequest, _portal: BlockingPortal) -> Iterator[Client]:
    """An HTTP client on a clean server: in-process by default, or the live server at MOCK_SERVER_TEST_URL. It
    reads the session's state before each request only for a test that may check it (tests/helpers.py)."""
    not_read = None if _checks_state(request) else StateNotRead(request.node.nodeid)
    if LIVE_URL:
        session = f"test-{uuid.uuid4().hex[:12]}"
        with WatchedLiveClient(base_url=LIVE_URL, headers={"X-Mock-Session": session, **ADMIN_HEADERS}) as live:
            live.state_not_read = not_read
            live.post("/__mock/reset").raise_for_status()
            yield live
        return
    app.state.sessions.clear()
    local = WatchedTestClient(app, raise_server_exceptions=True, headers=ADMIN_HEADERS)
    local.portal = _portal  # what `with` would set: every call goes into that loop
    local.state_not_read = not_read
    try:
        yield local
    finally:
        local.portal = None
        local.close()


def _checks_state(request: pytest.FixtureRequest) -> bool:
    """Whether the test may check the state of a `client` response: through its code, the fixtures of its module it
    takes, or a function among its parameters (tests.helpers.checks_state)."""
    fixtures = [getattr(getattr(request.module, name, None), "__wrapped__", None) for name in request.fixturenames]
    callspec = getattr(request.node, "callspec", None)
    parameters = list(callspec.params.values()) if callspec is not None else []
    return checks_state(request.function, [f for f in fixtures if f is not None] + parameters)


@pytest.fixture
def make_client(specs: Specs) -> Callable[..., TestClient]:
    """A client on an app built with other settings, e.g. `make_client(admin=False)`."""

    def build(**options: Any) -> TestClient:
        options.setdefault("validate_responses", True)
        return WholeAnswerTestClient(create_app(Settings(**options), specs), headers=ADMIN_HEADERS)

    return build


# --- tiers: `make test` runs in process; a test that starts the server, pytest or make in a child process
# belongs to `make test-e2e` (marker `e2e`, every test under tests/e2e/). The guard below makes the rule hold:
# such a child, started by a test of the default tier (or by its fixtures), fails that test and says why. Tests
# that run a tool or a fresh interpreter in a child process (mkdocs, linters, lint-imports, what a start imports),
# and a new feature's slow tests (real servers in threads, real exporters), are marked `e2e` where they are.

E2E = "e2e"
# tiers with a make target of their own, run outside `make test`
OWN_TARGETS = (E2E, "browser", "cluster", "slow", "containers")
E2E_DIRECTORY = Path(__file__).resolve().parent / "e2e"
E2E_PROGRAMS = frozenset({"mock-server", "pytest", "py.test", "make"})
E2E_MODULES = frozenset({"mock_server", "pytest"})
OWN_PROTOCOL = "own_protocol"  # needs mock-server's HTTP protocol, not uvicorn's own (pyproject's markers)
_running: list[pytest.Item] = []


class ChildProcessOutsideE2E(AssertionError):
    """A default-tier test started the server, pytest or make in a child process."""


def starts_e2e_child(command: object) -> bool:
    """Whether a Popen command runs the mock server, pytest or make: as its program, or as `python -m`."""
    words = shlex.split(command) if isinstance(command, str) else [str(word) for word in command]  # type: ignore[attr-defined]
    if not words:
        return False
    if Path(words[0]).name in E2E_PROGRAMS:
        return True
    return any(word == "-m" and module in E2E_MODULES for word, module in itertools.pairwise(words))


@pytest.fixture(autouse=True)
def _children_are_no_xdist_workers(request: pytest.FixtureRequest) -> None:
    """`make test-e2e` runs on pytest-xdist's workers: a child an e2e test starts is no worker of this run, so it
    does not inherit the worker's PYTEST_XDIST_* variables (a child pytest named its sessions after gw0)."""
    if request.node.get_closest_marker(E2E):
        monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
        for name in [name for name in os.environ if name.startswith("PYTEST_XDIST_")]:
            monkeypatch.delenv(name)


# --- the exhaustive tier (marker `exhaustive`, `make test-exhaustive`): the full sweeps whose sample the default
# tier runs. A module named `*_exhaustive.py` holds only such tests; it is not collected at all when the run's `-m`
# leaves the marker out, because its sweep is built at collection (schemathesis's coverage cases), which each xdist
# worker of the default tier would pay for nothing.

EXHAUSTIVE = "exhaustive"


def selects_marker(expression: str, marker: str) -> bool:
    """Whether a `-m` expression keeps a test that carries `marker` alone."""
    if not expression:
        return True
    # pytest's own evaluator of -m (no public API); a change in it shows up as an error here, never as a lost test.
    from _pytest.mark.expression import Expression

    def carries(name: str, /, **_: str | int | bool | None) -> bool:
        return name == marker

    return Expression.compile(expression).evaluate(carries)


_MARK_KEYWORDS = {"and", "or", "not", "True", "False", "None"}


def may_select_marker(expression: str, marker: str) -> bool:
    """Whether a `-m` expression keeps some test that carries `marker`, whatever other markers it carries too."""
    if not expression:
        return True
    from _pytest.mark.expression import Expression

    compiled = Expression.compile(expression)
    # The expression's names as pytest's scanner reads them (Expression.idents() is newer than pytest 8.0, the floor).
    others = sorted(set(re.findall(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+", expression)) - _MARK_KEYWORDS - {marker})
    if len(others) > 12:  # too many to try each combination: collect, and let -m deselect
        return True
    for carried in itertools.product((False, True), repeat=len(others)):
        names = {name for name, on in zip(others, carried, strict=True) if on} | {marker}

        def carries(name: str, /, **_: str | int | bool | None) -> bool:
            return name in names  # noqa: B023  (evaluated at once, within this iteration)

        if compiled.evaluate(carries):
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    expression = config.getoption("markexpr")
    if collection_path.name.endswith(f"_{EXHAUSTIVE}.py") and not selects_marker(expression, EXHAUSTIVE):
        return True
    # tests/e2e/ whole, when -m keeps none of its tests (every one is marked e2e): importing its modules cost each
    # xdist worker of the default tier ~1.5 s of collection (a 200 MB gzip bomb built at import, among others).
    if collection_path == E2E_DIRECTORY and not may_select_marker(expression, E2E):
        return True
    return None  # pytest's other rules decide


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    stock_reason: str | None = None  # read once, and only when a test needs mock-server's own protocol
    for item in items:
        if item.path.is_relative_to(E2E_DIRECTORY):
            item.add_marker(E2E)
        if item.get_closest_marker(OWN_PROTOCOL):
            if stock_reason is None:
                from mock_server.server import stock_protocol_reason

                stock_reason = stock_protocol_reason() or ""
            if stock_reason:
                # The upgrade check meets a uvicorn newer than the protocol knows: the server serves uvicorn's own
                # protocol, as designed, so what only mock-server's adds is not there to test (tests/test_server_seam
                # says which releases are known, and fails on the one pinned in constraints.txt if it is not).
                item.add_marker(pytest.mark.skip(reason=stock_reason))


# --- the cyclic garbage collector in a process that runs tests: CPython's full collections walk every object the
# process holds, and a test process holds a lot that lives as long as the run (every test module and its imports,
# the items, caches, module-scoped fixtures). In each xdist worker of the default tier a full collection came every
# ~50 tests, ~0.6 s each as the heap grew: a quarter of the run's CPU went to the collector. So the full collections
# are made between tests, and what survives one is frozen (gc.freeze(), as mock-server freezes what its start
# built): the next one walks only what was made since. Within a test the collections are CPython's own, of the
# younger generations: nothing a test makes is frozen while it runs, so its own gc.collect() reclaims what it
# dropped and tracemalloc sees what it would. What was frozen and died since in a reference cycle stays, until
# the frozen objects are half as many again as after the last thaw: then all is thawed and collected once more.

FULL_EVERY = 10  # collections of the middle generation between two full ones (CPython's default threshold)
THAW_GROWTH = 1.5
_thawed_at = 0  # how many objects were frozen after the last thaw


def _collect_and_freeze(thaw: bool) -> None:
    global _thawed_at
    if thaw:
        gc.unfreeze()
    gc.collect()
    gc.freeze()
    if thaw:
        _thawed_at = gc.get_freeze_count()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected, in the process that runs them (an xdist worker, or a run without xdist)."""
    _collect_and_freeze(thaw=True)
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1 << 30)  # no full collection within a test: between_tests() makes them


def between_tests() -> None:
    """A full collection once CPython would have made one, and what survives it frozen."""
    if _thawed_at and gc.get_count()[2] >= FULL_EVERY:
        _collect_and_freeze(thaw=gc.get_freeze_count() > THAW_GROWTH * _thawed_at)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()
        between_tests()


def pytest_configure(config: pytest.Config) -> None:
    original = subprocess.Popen.__init__

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        test = _running[-1] if _running else None
        if test and not any(test.get_closest_marker(tier) for tier in OWN_TARGETS) and starts_e2e_child(args):
            raise ChildProcessOutsideE2E(
                f"{test.nodeid} starts {args!r} in a child process: such a test belongs to the e2e tier "
                "(mark it `@pytest.mark.e2e` or move it under tests/e2e/; `make test-e2e` runs them)"
            )
        original(self, args, *rest, **options)

    subprocess.Popen.__init__ = guarded  # type: ignore[method-assign]
    config.add_cleanup(lambda: setattr(subprocess.Popen, "__init__", original))
