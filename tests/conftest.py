"""Shared fixtures: the specs and the app are built once; every test gets fresh sessions.

Set MOCK_SERVER_TEST_URL=http://127.0.0.1:8000 to run the API tests against a live server instead of
in-process: each test then works in a session of its own, reset before it starts.

The `client` reads the session's state before every request it sends, so that `tests.helpers.assert_error`
can check that a rejected request changed nothing.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from tests.helpers import Client, WatchedLiveClient, WatchedTestClient

LIVE_URL = os.environ.get("MOCK_SERVER_TEST_URL")


@pytest.fixture(scope="session")
def specs() -> Specs:
    return load_specs()


@pytest.fixture(scope="session")
def app(specs: Specs) -> Starlette:
    # Every response any test provokes is checked against the spec: a deviation is a 500 and fails the test.
    return create_app(Settings(validate_responses=True), specs)


@pytest.fixture
def client(app: Starlette) -> Iterator[Client]:
    """An HTTP client on a clean server: in-process by default, or the live server at MOCK_SERVER_TEST_URL."""
    if LIVE_URL:
        session = f"test-{uuid.uuid4().hex[:12]}"
        with WatchedLiveClient(base_url=LIVE_URL, headers={"X-Mock-Session": session}) as live:
            live.post("/__mock/reset").raise_for_status()
            yield live
        return
    app.state.sessions.clear()
    with WatchedTestClient(app, raise_server_exceptions=True) as local:
        yield local


@pytest.fixture
def make_client(specs: Specs) -> Callable[..., TestClient]:
    """A client on an app built with other settings, e.g. `make_client(admin=False)`."""

    def build(**options: Any) -> TestClient:
        options.setdefault("validate_responses", True)
        return TestClient(create_app(Settings(**options), specs))

    return build
