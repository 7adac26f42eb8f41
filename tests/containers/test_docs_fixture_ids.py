"""The Testcontainers page promises deterministic ids (`with_seed(1)`), but its fixtures named each session at random,
and the server mixes a session's name into its ids: they differed on every run (issue 43). The page's two `pix`
fixtures, run as written twice over, on a server of this process standing in for the container (the default tier:
no engine), must show the same ids; `make test-containers` runs the same pages against the real image."""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from mock_server.app import create_app
from mock_server.client import PixMock
from mock_server.settings import Settings
from tests.containers.test_docs_examples import python_blocks
from tests.threaded_server import threaded_server

ACCOUNT = {
    "account_id": "0001-000001",
    "registration_date": "2026-11-21T09:00:00-03:00",
    "limit": {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 500000}]}},
}
PROPOSAL = {"pix": {"withdraw": [{"start_time": "06:00:00-03:00", "amount": 1}]}}


class _ContainerStandIn:
    """PixMockContainer's builders and `session()` as the page uses them, served in a thread of this process."""

    def __init__(self) -> None:
        self.settings: dict[str, Any] = {}
        self._stack = contextlib.ExitStack()
        self._url = ""
        self._sessions: list[PixMock] = []

    def with_scenario(self, name: str) -> _ContainerStandIn:
        self.settings["scenario"] = name
        return self

    def with_seed(self, seed: int) -> _ContainerStandIn:
        self.settings["seed"] = seed
        return self

    def with_clock(self, instant: str) -> _ContainerStandIn:
        self.settings["clock"] = datetime.fromisoformat(instant)
        return self

    def __enter__(self) -> _ContainerStandIn:
        port = self._stack.enter_context(threaded_server(create_app(Settings(**self.settings))))
        self._url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        for session in self._sessions:  # as PixMockContainer.stop() closes them
            session.close()
        self._stack.close()

    def session(self, name: str) -> PixMock:
        self._sessions.append(PixMock(self._url, name))
        return self._sessions[-1]


def _decorator(*args: Any, **_: Any) -> Any:
    """`@pytest.fixture`, `@pytest.fixture(scope=...)`, `@pytest.hookimpl(...)`: the function itself."""
    return args[0] if args and callable(args[0]) else (lambda function: function)


def _conftest(index: int) -> dict[str, Any]:
    """The page's `index`-th conftest.py, executed with pytest's decorators and PixMockContainer stood in for."""
    stand_ins = {
        "pytest": types.SimpleNamespace(fixture=_decorator, hookimpl=_decorator),
        "mock_server.testcontainers": types.SimpleNamespace(PixMockContainer=_ContainerStandIn),
    }
    namespace: dict[str, Any] = {}
    with pytest.MonkeyPatch.context() as patch:
        for name, module in stand_ins.items():
            patch.setitem(sys.modules, name, module)
        exec(python_blocks()["conftest.py"][index], namespace)
    return namespace


def _first_id(session: PixMock) -> str:
    assert session.client.post("/limits/account", json=ACCOUNT).status_code == 201
    proposal = session.client.post(f"/limits/account/{ACCOUNT['account_id']}/limit_update_request", json=PROPOSAL)
    assert proposal.status_code == 201
    return str(proposal.json()["limit_update_request_id"])


def _one_container_run() -> str:
    """A run of the first pattern: the container fixture, then one test's `pix`, its first generated id."""
    conftest = _conftest(0)
    containers: Iterator[_ContainerStandIn] = conftest["pix_container"]()
    container = next(containers)
    try:
        sessions: Iterator[PixMock] = conftest["pix"](container)
        session = next(sessions)
        found = _first_id(session)
        with contextlib.suppress(StopIteration):
            next(sessions)  # the fixture's teardown: the session deleted
        assert session.name not in [s["name"] for s in session.sessions()["sessions"]]
        return found
    finally:
        with contextlib.suppress(StopIteration):
            next(containers)


def _xdist_run() -> str:
    """A run of the second pattern's `pix`, on a server started as its controller would start the container."""
    conftest = _conftest(1)
    with _ContainerStandIn().with_scenario("payments").with_seed(1) as container:
        request = types.SimpleNamespace(config=types.SimpleNamespace(pix_mock_url=container.session("x").server_url))
        fixture: Callable[[Any], Iterator[PixMock]] = conftest["pix"]
        sessions = fixture(request)
        found = _first_id(next(sessions))
        with contextlib.suppress(StopIteration):
            next(sessions)
        return found


@pytest.mark.parametrize("run", [_one_container_run, _xdist_run], ids=["one-container", "xdist"])
def test_the_documented_fixture_gives_the_same_ids_run_after_run(run: Callable[[], str]) -> None:
    assert run() == run()
