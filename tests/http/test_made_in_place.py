"""What the request path makes without a dataclass's or a class's __init__, every field set in place (CPython calls
a Python __init__ from C, at a cost every request paid): the Exchange and the Call (http/pipeline.py), a lookup's
Reply (http/handling.encoded_reply) and the Turn (state/sessions.Sessions.begin). Each has every field, set to what
its own __init__ (or the turn's rules) would give: a field added to one of them and not set in place fails here."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.http.handling import Call, Reply, encoded_reply
from mock_server.http.pipeline import Exchange, OperationRunner, PathEndpoint
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs
from mock_server.state.turn import Turn
from tests.default_scenario import PENDING_EVENT
from tests.helpers import ADMIN_HEADERS

LOOKUP = f"/event_conciliation/extraordinary_event/{PENDING_EVENT}"


def lookup_runner(app: Starlette) -> OperationRunner:
    for route in app.routes:
        if isinstance(route, Route) and isinstance(route.app, PathEndpoint):
            runner = route.app.runners.get("GET")
            if runner is not None and runner.operation.operation_id == "getExtraordinaryEvent":
                return runner
    raise AssertionError("no lookup route")


def test_an_encoded_reply_is_the_reply_its_init_makes() -> None:
    assert encoded_reply(200, b'{"a":1}') == Reply(200, encoded=b'{"a":1}')


def test_a_lookup_s_exchange_call_and_turn_have_every_field(specs: Specs) -> None:
    finished: list[Turn] = []
    app = create_app(Settings(), specs, turn_observers=(finished.append,))
    runner = lookup_runner(app)
    seen: dict[str, Any] = {}
    handler, answer = runner.handler, runner._answer

    def watched_answer(exchange: Exchange, body: Any, body_problems: Any) -> Any:
        seen["exchange"] = exchange
        # Every field read (an unset slot raises), as its __init__ gives it before the steps change it
        made = Exchange(exchange.scope, exchange.receive, exchange.raw_headers)
        made.turn, made.received_at = exchange.turn, exchange.received_at
        assert [getattr(exchange, f.name) for f in fields(Exchange)] == [getattr(made, f.name) for f in fields(made)]
        return answer(exchange, body, body_problems)

    def watched_handler(call: Call) -> Any:
        seen["call"] = call
        return handler(call)

    runner._answer = watched_answer  # type: ignore[method-assign]
    runner.handler = watched_handler
    assert TestClient(app, headers=ADMIN_HEADERS).get(LOOKUP).status_code == 200
    call = seen["call"]
    assert call == Call(
        call.server, call.session, call.path, call.query, None, call.now, call.scope, "default", call.turn
    )
    assert call.turn is finished[-1] and call.now == call.turn.now
    turn = finished[-1]
    assert all(hasattr(turn, slot) for slot in Turn.__slots__)
    assert (turn.fault, turn.decision, turn.fault_waits_for_body, turn.trace, turn.status) == (
        None,
        None,
        False,
        None,
        200,
    )
