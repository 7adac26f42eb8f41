"""Assertions the API tests share (test modules cannot import each other under --import-mode=importlib).

`assert_error` is the one check of an error answer. The `client` fixture (conftest.py) is a `WatchedTestClient`:
it reads the session's state (GET /__mock/state) before every request and hands `assert_error` the means to
read it again, so every error a test provokes through it is also checked to have changed nothing. In a test whose
code reaches no such check (`checks_state`: no assert_error, assert_state_unchanged or STATE_WATCH in it or in a
function of its module it names), the client reads nothing: its responses carry a `StateNotRead` instead, and a
check of one fails, saying so (a read before each request was ~15% of the default tier's time).
"""

from __future__ import annotations

import functools
import inspect
import re
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2

from mock_server.spec.openapi import Operation, SchemaCheck, Specs, fast_safe_loader, load_specs
from tests.whole_answer_client import WholeAnswerTestClient

# Starlette's TestClient is an httpx2 client; a live server (MOCK_SERVER_TEST_URL) is reached with httpx.
Client = httpx.Client | httpx2.Client
Response = httpx.Response | httpx2.Response
STATE_WATCH = "tests.state_watch"  # the key of a StateWatch in response.extensions
_SESSION_HEADERS = frozenset({"x-mock-session", "authorization"})  # what picks and opens the session
# What a program's admin calls carry (http/cross_origin.py): a bodyless call that changes state needs it. The test
# clients send it; tests/http/test_cross_origin.py checks the server without it.
ADMIN_HEADERS = {"X-Mock-Admin": "1"}


@dataclass(frozen=True)
class StateNotRead:
    """In a response's extensions instead of a StateWatch: the client was told its test checks no state."""

    test: str


@dataclass(frozen=True)
class StateWatch:
    """The session's state export as it was before a request, and how to read it again."""

    before: tuple[int, bytes]  # status and body of GET /__mock/state
    read: Callable[[], tuple[int, bytes]]


def _state_request(url: Any, headers: Any) -> tuple[str, dict[Any, Any]]:
    """GET /__mock/state of the session a request goes to: the same /__session/{name} prefix, if any, and the
    same session and authorization headers."""
    path = httpx.URL(str(url)).path
    prefix = "/".join(path.split("/")[:3]) if path.startswith("/__session/") else ""
    pairs = headers.items() if isinstance(headers, Mapping) else headers or []
    kept = {name: value for name, value in pairs if _text(name).lower() in _SESSION_HEADERS}
    return f"{prefix}/__mock/state", kept


def _text(name: str | bytes) -> str:
    return name.decode("latin-1") if isinstance(name, bytes) else name


def watched(send: Callable[..., Any], method: str, url: Any, **options: Any) -> Any:
    """`send(method, url, **options)`, with a StateWatch of the request's session in the response's extensions."""
    state_path, headers = _state_request(url, options.get("headers"))

    def read() -> tuple[int, bytes]:
        state = send("GET", state_path, headers=headers)
        return state.status_code, state.content

    before = read()
    response = send(method, url, **options)
    response.extensions[STATE_WATCH] = StateWatch(before, read)
    return response


class _Unwatched:
    """`with client.unwatched():` sends the block's requests without the StateWatch, for a loop of a thousand calls
    whose answers no `assert_error` checks: the watch reads the session's whole state before each call, the journal
    included, so such a loop cost time in the square of its length."""

    watching = True
    state_not_read: StateNotRead | None = None  # set by the `client` fixture for a test that checks no state

    def _send(self, send: Callable[..., Any], method: str, url: Any, **options: Any) -> Any:
        if not self.watching:
            return send(method, url, **options)
        if self.state_not_read is not None:
            response = send(method, url, **options)
            response.extensions[STATE_WATCH] = self.state_not_read
            return response
        return watched(send, method, url, **options)

    @contextmanager
    def unwatched(self) -> Iterator[None]:
        self.watching = False
        try:
            yield
        finally:
            self.watching = True


class WatchedTestClient(_Unwatched, WholeAnswerTestClient):
    """An in-process client whose responses carry a StateWatch (see the module's docstring); each exchange one call
    into its loop (tests/whole_answer_client.py)."""

    def request(self, method: str, url: httpx2.URL | str, **options: Any) -> httpx2.Response:
        response: httpx2.Response = self._send(super().request, method, url, **options)
        return response


class WatchedLiveClient(_Unwatched, httpx.Client):
    """The same over the network, for MOCK_SERVER_TEST_URL."""

    def request(self, method: str, url: httpx.URL | str, **options: Any) -> httpx.Response:
        response: httpx.Response = self._send(super().request, method, url, **options)
        return response


@functools.cache
def _specs() -> Specs:
    return load_specs()


def error_schema() -> SchemaCheck:
    """The contract's Error schema (the admin spec refers to the same one)."""
    return _documented_errors()[1]


@functools.cache
def _documented_errors() -> tuple[list[tuple[str, re.Pattern[str], Operation]], SchemaCheck]:
    """Every operation of both specs with a pattern matching its concrete paths, and the Error schema."""
    operations = [*_specs().public.operations.values(), *_specs().admin.operations.values()]
    table = [(op.method, re.compile("^" + re.sub(r"\{[^/}]+\}", "[^/]+", op.path) + "$"), op) for op in operations]
    return table, _specs().public.check("#/components/schemas/Error")


def documented_error_schema(method: str, path: str, status: int) -> SchemaCheck:
    """The body schema the spec documents for this operation and status (e.g. the admin spec's
    VerificationFailure for the 409 of /__mock/verify); the Error schema where the spec documents none (an
    unknown path, a method the path has not, a status the operation does not list)."""
    table, error = _documented_errors()
    path = re.sub(r"^/__session/[^/]+", "", path)
    for op_method, pattern, operation in table:
        if op_method == method and pattern.match(path):
            code = str(status)
            key = code if code in operation.responses else f"{code[0]}XX"
            documented = operation.responses.get(key) or operation.responses.get("default")
            return documented or error
    return error


def error_problems(body: Any, schema: SchemaCheck | None = None) -> list[str]:
    """How `body` breaks `schema` (the Error schema by default), one line a problem; [] when it does not."""
    return [f"{d.field or '(body)'}: {d.message}" for d in (schema or error_schema()).problems(body)]


def assert_state_unchanged(response: Response) -> None:
    """The session's state export reads as it did before the request (a `client` fixture's response only)."""
    watch = response.extensions.get(STATE_WATCH)
    assert not isinstance(watch, StateNotRead), (
        f"{watch.test}: the `client` read no state before this request, as its test names no state check "
        "(tests.helpers.checks_state): name assert_error or assert_state_unchanged in the test, or in a function of "
        "its module it names"
    )
    assert isinstance(watch, StateWatch), "the response did not come through the watched `client` fixture"
    status, after = watch.read()
    assert (status, after) == watch.before, "the request changed the session's state"


def assert_error(response: Response, status: int, code: str, fields: list[str] | None = None) -> dict[str, Any]:
    """The contract's error answer, checked as strictly as a test can, and its body for further checks:

    - the `status`, and Content-Type exactly application/json;
    - the body valid against the schema the spec documents for the operation and status: the contract's Error
      schema (`code`, a `message`, `details[{field, message}]`, nothing else) but where an operation documents
      more (see `documented_error_schema`), with this `code` and a message that says something;
    - when `fields` is given, exactly these `details[].field`s, in any order;
    - the session's state unchanged, when the response came through the `client` fixture (whose responses
      carry the state as it was before); a response of another client is not checked for it.
    """
    assert response.status_code == status, response.text
    assert response.headers.get("content-type") == "application/json", response.headers
    body: dict[str, Any] = response.json()
    request = response.request
    schema = documented_error_schema(request.method, request.url.path, status)
    assert error_problems(body, schema) == [], body
    assert isinstance(body["code"], str), body
    assert body["code"] == code, body
    assert body["message"].strip(), body
    if fields is not None:
        assert sorted(d["field"] for d in body.get("details", [])) == sorted(fields), body
    if STATE_WATCH in response.extensions:
        assert_state_unchanged(response)
    return body


def add_fault(client: Client, **body: Any) -> dict[str, Any]:
    """`POST /__mock/faults`, which must answer 201: the fault armed."""
    response = client.post("/__mock/faults", json=body)
    assert response.status_code == 201, response.text
    result: dict[str, Any] = response.json()
    return result


def faults(client: Client) -> list[dict[str, Any]]:
    """The session's armed faults (`GET /__mock/faults`)."""
    result: list[dict[str, Any]] = client.get("/__mock/faults").json()["faults"]
    return result


STATE_CHECKS = frozenset({"assert_error", "assert_state_unchanged", "STATE_WATCH"})


def _names(code: types.CodeType) -> set[str]:
    """The global names a function's code reads, its nested functions, lambdas and comprehensions included."""
    found = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found |= _names(constant)
    return found


@functools.cache
def _state_checkers(module: types.ModuleType) -> frozenset[str]:
    """The names of the module's functions whose code reaches a state check, directly or through another."""
    functions = {
        name: _names(value.__code__)
        for name, value in vars(module).items()
        if inspect.isfunction(value) and value.__module__ == module.__name__
    }
    reaching: set[str] = set()
    while True:
        more = {name for name, names in functions.items() if names & (STATE_CHECKS | reaching)} - reaching
        if not more:
            return frozenset(reaching)
        reaching |= more


def checks_state(function: Callable[..., Any], arguments: Iterable[object] = ()) -> bool:
    """Whether a test may check a `client` response's state: its code, a function of its module that it names, a
    fixture of its module it takes or a function it is given as a parameter reaches a state check."""
    module = inspect.getmodule(function)
    reaching = STATE_CHECKS | (_state_checkers(module) if module is not None else frozenset())
    if _names(getattr(function, "__code__", None) or _EMPTY) & reaching:
        return True
    for argument in arguments:
        code = getattr(argument, "__code__", None)
        if code is not None and (_names(code) & reaching or getattr(argument, "__name__", "") in reaching):
            return True
    return False


_EMPTY = compile("", "<none>", "exec")


def read_yaml(text: str) -> Any:
    """YAML text read with PyYAML's safe semantics through libyaml's loader, as the server reads its specs
    (spec/openapi.py): yaml.safe_load's pure-Python reader took ~0.6 s for the admin spec, each time."""
    import yaml

    return yaml.load(text, Loader=fast_safe_loader())
