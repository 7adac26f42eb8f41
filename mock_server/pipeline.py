"""The road every API call takes: session, faults, body, validation against the spec, the handler,
the one error renderer, the journal and (optionally) the response check.

Handlers see only a validated `Call` and answer a `Reply`; everything HTTP stays here.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from .body import MISSING, is_json_media_type, parse_json, read_bytes
from .encoding import encode_json, error_response, json_response
from .errors import (
    ApiError,
    Detail,
    InvalidRequest,
    MethodNotAllowed,
    ResponseValidationFailed,
    Unauthorized,
)
from .sessions import DEFAULT_SESSION, Session, Sessions
from .spec import Operation, SchemaCheck

log = logging.getLogger("mock_server")
# Statuses that must not carry content (RFC 9110): an injected fault with one answers no body.
NO_CONTENT = frozenset({204, 205, 304})


@dataclass(slots=True)
class Call:
    """A validated request, as a handler sees it."""

    session: Session
    path: dict[str, str]
    query: dict[str, str]
    body: Any  # the validated JSON body; None when the operation takes none or none was sent
    now: datetime  # the session clock's reading when the request arrived


@dataclass(slots=True)
class Reply:
    status: int
    body: Any = None  # JSON value; None: no body
    headers: dict[str, str] = field(default_factory=dict)
    text: str | None = None  # a non-JSON body (YAML), sent with `media_type`
    media_type: str | None = None


Handler = Callable[[Call], Reply]


@dataclass(frozen=True)
class Pipeline:
    """What every endpoint shares: the sessions, the session-header check, and the switches."""

    sessions: Sessions
    session_check: SchemaCheck
    validate_responses: bool = False
    admin_token: str | None = None


def _header_values(scope: Scope) -> dict[str, str]:
    """The request's headers by (ASGI: lower-case) name, read in one pass; the first of a repeated header
    wins, as with Starlette's `Headers.get`, whose every call walks the whole list again."""
    return {name.decode("latin-1"): value.decode("latin-1") for name, value in reversed(scope["headers"])}


async def _body_for_journal(request: Request, declared: str | None) -> bytes:
    """What a faulted call sent, for the journal only; never an error."""
    try:
        return await read_bytes(request, declared)
    except ApiError:
        return b""


class OperationRunner:
    """One operation of a spec bound to its handler."""

    def __init__(self, pipeline: Pipeline, operation: Operation, handler: Handler, public: bool, guarded: bool) -> None:
        self.pipeline = pipeline
        self.operation = operation
        self.handler = handler
        self.public = public  # journaled and open to faults
        self.guarded = guarded  # needs the admin token when one is set
        self._query = [p for p in operation.parameters if p.location == "query"]
        self._path = [p for p in operation.parameters if p.location == "path"]
        self._headers = [p for p in operation.parameters if p.location == "header" and p.name != "X-Mock-Session"]
        self._takes_body = operation.body is not None or operation.body_required

    def _session(self, headers: dict[str, str]) -> Session:
        name = headers.get("x-mock-session")
        if name is None:
            return self.pipeline.sessions.get(DEFAULT_SESSION)
        problems = self.pipeline.session_check.problems(name)
        if problems:
            raise InvalidRequest(
                "The X-Mock-Session header is invalid.",
                [Detail(("X-Mock-Session",), p.message) for p in problems],
            )
        return self.pipeline.sessions.get(name)

    def _authorize(self, headers: dict[str, str]) -> None:
        token = self.pipeline.admin_token
        if token is None or not self.guarded:
            return
        given = headers.get("authorization", "")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(credential.strip().encode(), token.encode()):
            raise Unauthorized(
                "The admin API needs Authorization: Bearer TOKEN.", headers={"WWW-Authenticate": "Bearer"}
            )

    def _validate(
        self, request: Request, headers: dict[str, str], body: Any
    ) -> tuple[dict[str, str], dict[str, str], Any]:
        """Path, query and body checked against the operation's own schemas: every problem at once."""
        problems: list[Detail] = []
        path = {p.name: request.path_params.get(p.name, "") for p in self._path}
        for param in self._path:
            problems += param.check.problems(path[param.name], (param.name,))
        query: dict[str, str] = {}
        for param in self._query:
            if param.name in request.query_params:
                query[param.name] = request.query_params[param.name]
                problems += param.check.problems(query[param.name], (param.name,))
            elif param.required:
                problems.append(Detail((param.name,), "is required"))
        for param in self._headers:
            value = headers.get(param.name.lower())
            if value is not None:
                problems += param.check.problems(value, (param.name,))
            elif param.required:
                problems.append(Detail((param.name,), "is required"))
        operation = self.operation
        if body is MISSING or operation.body is None:
            if body is MISSING and operation.body_required:
                problems.append(Detail((), "a JSON body is required"))
            body = None
        else:
            problems += operation.body.problems(body)
        if problems:
            raise InvalidRequest("The request is invalid.", problems)
        return path, query, body

    async def __call__(self, request: Request) -> Response:
        session: Session | None = None
        raw = b""
        received_at: datetime | None = None
        headers = _header_values(request.scope)
        content_type = headers.get("content-type")
        try:
            if not self.public:
                self._authorize(headers)
            session = self._session(headers)
            received_at = now = session.clock.now()
            if self.public:
                fault = session.faults.take(self.operation.operation_id)
                if fault is not None:
                    if fault.delay_ms:
                        await asyncio.sleep(fault.delay_ms / 1000)
                    if fault.status is not None:
                        body = fault.default_body() if fault.body is None else fault.body
                        if fault.status in NO_CONTENT:
                            body = None  # HTTP forbids content with these statuses
                        # Deliberately off-spec: never replaced by --validate-responses' 500.
                        reply = Reply(fault.status, body)
                        sent = (
                            await _body_for_journal(request, headers.get("content-length")) if self._takes_body else b""
                        )
                        return self._finish(session, request, received_at, sent, content_type, reply, check=False)
            # An operation the spec gives no request body ignores any content sent (RFC 9110: it has no
            # defined semantics there): judging it would answer a 413/415 the operation does not document.
            raw = await read_bytes(request, headers.get("content-length")) if self._takes_body else b""
            body = parse_json(raw, content_type) if raw else MISSING
            path, query, body = self._validate(request, headers, body)
            reply = self.handler(Call(session, path, query, body, now))
        except ApiError as error:
            reply = Reply(error.status, error.body(), error.headers)
        except Exception as exc:  # a bug: still the contract's body, and the journal says so
            log.exception("unexpected error in %s", self.operation.operation_id)
            reply = Reply(500, {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"})
        return self._finish(session, request, received_at, raw, content_type, reply)

    def _finish(
        self,
        session: Session | None,
        request: Request,
        received_at: datetime | None,
        request_raw: bytes,
        content_type: str | None,
        reply: Reply,
        check: bool = True,
    ) -> Response:
        if check and self.pipeline.validate_responses:
            reply = self._checked(reply)
        if reply.text is not None:
            response = Response(reply.text, reply.status, reply.headers, media_type=reply.media_type)
        else:
            response = json_response(reply.status, reply.body, reply.headers)
        if self.public and session is not None and received_at is not None:
            session.journal.record(
                received_at,
                request.method,
                request.scope["path"],  # not request.url: building a URL costs more than the rest
                self.operation.operation_id,
                reply.status,
                request_raw,
                content_type is not None and is_json_media_type(content_type),
                bytes(response.body),  # the same object: Response keeps bytes
            )
        return response

    def _checked(self, reply: Reply) -> Reply:
        """The reply, or a documented 500 naming how it contradicts the spec (`--validate-responses`)."""
        responses = self.operation.responses
        status = str(reply.status)
        key = status if status in responses else f"{status[0]}XX" if f"{status[0]}XX" in responses else "default"
        problems: list[str] = []
        if key not in responses:
            problems.append(f"status {status} is not documented")
        elif reply.text is None:
            check = responses[key]
            if check is None and reply.body is not None:
                problems.append(f"status {status} documents no body")
            elif check is not None:
                # Round-trip through JSON so the check sees exactly what the client will.
                sent = json.loads(encode_json(reply.body))
                problems += [f"{d.field or '(body)'}: {d.message}" for d in check.problems(sent)]
        if not problems:
            return reply
        message = f"The response of {self.operation.operation_id} does not match the spec: {'; '.join(problems)}."
        log.error("%s (status %s, body %r)", message, status, reply.body)
        error = ResponseValidationFailed(message)
        return Reply(error.status, error.body())


class PathEndpoint:
    """The ASGI app of one spec path: dispatches on the method, and answers 405 with the spec's `Allow`."""

    def __init__(self, runners: Mapping[str, OperationRunner]) -> None:
        self.runners = dict(runners)
        self.allow = ", ".join(sorted(self.runners))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        runner = self.runners.get(request.method)
        if runner is None:
            error = MethodNotAllowed(
                f"Method {request.method} is not allowed here; allowed: {self.allow}.", headers={"Allow": self.allow}
            )
            response = error_response(error)
        else:
            response = await runner(request)
        await response(scope, receive, send)
