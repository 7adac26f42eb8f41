"""The public API's routes are found before Starlette's middleware and router (http/application.py); everything
else takes Starlette's whole road, and both roads answer alike."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from mock_server.app import create_app
from mock_server.http.application import MockApp
from mock_server.http.pipeline import PathEndpoint
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from tests.default_scenario import PENDING_EVENT_PATH

EVENT = PENDING_EVENT_PATH


def call(app: Any, path: str, root_path: str = "", method: str = "GET") -> tuple[int, bytes]:
    """One request straight into the ASGI app: its status and body."""
    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": root_path + path,
        "raw_path": (root_path + path).encode(),
        "root_path": root_path,
        "query_string": b"",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], b"".join(m.get("body", b"") for m in sent[1:])


class Counting:
    """Stands in front of Starlette's middleware stack and counts the requests that reach it."""

    def __init__(self, stack: Any) -> None:
        self.stack = stack
        self.calls = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.calls += 1
        await self.stack(scope, receive, send)


def test_a_public_call_skips_starlettes_stack_and_the_rest_take_it(specs: Specs):
    app = create_app(Settings(), specs)
    stack = app.middleware_stack = Counting(app.build_middleware_stack())
    direct = call(app, EVENT)
    assert stack.calls == 0
    assert direct[0] == 200
    assert call(app, f"/__session/default{EVENT}") == direct  # the session prefix: Starlette's road
    assert call(app, "/__mock/health")[0] == 200
    assert call(app, "/no/such/path")[0] == 404  # no route: Starlette's 404, in the contract's body
    assert stack.calls == 3


def test_under_a_root_path_the_router_finds_the_route_as_before(specs: Specs):
    app = create_app(Settings(), specs)
    stack = app.middleware_stack = Counting(app.build_middleware_stack())
    assert call(app, EVENT, root_path="/behind/a/proxy") == call(app, EVENT)
    assert stack.calls == 1


def test_a_wrong_method_on_a_public_path_is_still_the_specs_405(specs: Specs):
    app = create_app(Settings(), specs)
    status, body = call(app, EVENT, method="DELETE")
    assert status == 405
    assert b'"code":"method_not_allowed"' in body


@pytest.mark.parametrize(
    "path",
    [
        EVENT,
        "/limits/account",
        "/limits/account/0001-123456/limit_update_request",
        "/limits/account/0001-123456/recipient_list",
        "/limits/account/0001-123456/recipient_list/recipient",
        "/limits/account/0001-123456/recipient_list/recipient/r-1",
        "/limits/account/0001-123456/recipient_list/limit_update_request",
        "/limits/account/0001-123456/recipient_list/recipient/",
        "/limits/account/",
        "/limits/account/a/b/limit_update_request",
        "/limits/account/0001-123456/limit_update_request\n",
        "/event_conciliation/extraordinary_event/",
        "/nothing",
    ],
)
def test_the_direct_routes_find_what_starlettes_router_finds(specs: Specs, path: str):
    app = create_app(Settings(), specs)
    scope: Scope = {"type": "http", "path": path, "root_path": "", "method": "GET"}
    routed = next(
        (
            (route, child["path_params"])
            for route in app.routes
            for match, child in [route.matches(scope)]
            if match is Match.FULL
        ),
        None,
    )
    assert isinstance(app, MockApp)
    found = app._direct.match(path)
    assert (found and found[:2]) == routed
    if found is not None:  # and the method's runner, as the route's endpoint dispatches it
        route, _, dispatch = found
        assert isinstance(route.endpoint, PathEndpoint)
        assert dispatch == route.endpoint.dispatch
