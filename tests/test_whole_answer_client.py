"""tests/whole_answer_client.py answers as Starlette's TestClient does: the same requests through both, the same
scope seen by the app, the same answers and the same exceptions."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.testclient import TestClient
from starlette.types import Receive, Scope, Send

from mock_server.app import create_app
from mock_server.settings import Settings
from tests.default_scenario import PENDING_EVENT_PATH
from tests.helpers import ADMIN_HEADERS
from tests.whole_answer_client import WholeAnswerTestClient

CLIENTS = [TestClient, WholeAnswerTestClient]


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers what it was given: the scope's parts, the body, and what receive gives after the answer."""
    if scope["type"] == "lifespan":  # an entered client's
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    request = await receive()
    seen = {
        key: scope[key] for key in ("type", "http_version", "method", "path", "root_path", "scheme", "client", "server")
    }
    seen["raw_path"] = scope["raw_path"].decode()
    seen["query_string"] = scope["query_string"].decode()
    seen["headers"] = [[name.decode(), value.decode()] for name, value in scope["headers"]]
    seen["extensions"] = sorted(scope["extensions"])
    seen["request"] = [request["type"], request["body"].decode(), request.get("more_body", False)]
    if scope["path"] == "/no-content":
        await send({"type": "http.response.start", "status": 204, "headers": [(b"x-kind", b"none")]})
        await send({"type": "http.response.body", "body": b""})
        return
    payload = json.dumps(seen).encode()
    await send({"type": "http.response.start", "status": 201, "headers": [(b"content-type", b"application/json")]})
    half = len(payload) // 2
    await send({"type": "http.response.body", "body": payload[:half], "more_body": True})
    await send({"type": "http.response.body", "body": payload[half:]})
    assert await receive() == {"type": "http.disconnect"}


def answer(client: TestClient, method: str, url: str, **options: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    response = client.request(method, url, **options)
    return response.status_code, response.headers.multi_items(), response.content


@pytest.mark.parametrize("entered", [True, False], ids=["entered", "not-entered"])
@pytest.mark.parametrize(
    ("method", "url", "options"),
    [
        ("GET", "/a%20b/c?x=1&y=%C3%A9", {}),
        ("POST", "/things", {"json": {"amount": 1}, "headers": {"X-One": "1"}}),
        ("PUT", "/things/1", {"content": b"raw bytes"}),
        ("HEAD", "/things", {}),
        ("DELETE", "/no-content", {}),
    ],
)
def test_an_app_sees_and_answers_the_same(entered: bool, method: str, url: str, options: dict[str, Any]) -> None:
    answers = []
    for kind in CLIENTS:
        client = kind(echo, root_path="/root")
        if entered:
            with client:
                answers.append(answer(client, method, url, **options))
        else:
            answers.append(answer(client, method, url, **options))
    assert answers[0] == answers[1]


async def fails_before_answering(scope: Scope, receive: Receive, send: Send) -> None:
    raise RuntimeError("before")


async def fails_after_answering(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"partial", "more_body": True})
    raise RuntimeError("after")


async def answers_nothing(scope: Scope, receive: Receive, send: Send) -> None:
    return


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("app", [fails_before_answering, fails_after_answering])
def test_what_the_app_raises_is_raised_in_the_test(kind: type[TestClient], app: Any) -> None:
    with pytest.raises(RuntimeError, match=r"before|after"):
        kind(app).get("/")


@pytest.mark.parametrize(
    "app", [fails_before_answering, fails_after_answering, answers_nothing], ids=["before", "after", "nothing"]
)
def test_without_raising_the_answers_are_the_same(app: Any) -> None:
    answers = [answer(kind(app, raise_server_exceptions=False), "GET", "/") for kind in CLIENTS]
    assert answers[0] == answers[1]
    with pytest.raises(AssertionError, match="did not receive any response"):
        WholeAnswerTestClient(answers_nothing).get("/")


def test_the_mock_answers_the_same() -> None:
    app = create_app(Settings(validate_responses=True))
    calls = [
        ("GET", "/__mock/health", {}),
        ("GET", PENDING_EVENT_PATH, {}),
        ("POST", "/limits/account", {"content": b"{not json", "headers": {"Content-Type": "application/json"}}),
        ("POST", "/__mock/reset", {}),
        ("GET", "/__mock/state", {}),
    ]
    answers = []
    for kind in CLIENTS:
        app.state.sessions.clear()
        with kind(app, headers=ADMIN_HEADERS) as client:
            answers.append([answer(client, method, url, **options) for method, url, options in calls])
    assert answers[0] == answers[1]
