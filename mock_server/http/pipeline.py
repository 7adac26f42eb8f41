"""The road every API call takes, as named steps over one `Exchange` (the request being answered):

    authorize (admin: the cross-origin rules, the token; public: the origin) -> begin the session's turn
    -> injected fault? (http/fault_replies.py) -> shadowed? (http/shadow.py) -> read the body
    -> validate against the spec -> the handler -> respond (check against the spec, render) -> finish the turn

The session is entered through two doors only (state/turn.py): `Sessions.begin(...)` opens a request's `Turn`
(held, clock read, due schedules applied, fault decided) and `Turn.finish(...)` closes it (journal, coverage,
release, observers). Handlers see only a validated `Call` and answer a `Reply` (the contract: http/handling.py);
everything HTTP stays here.
"""

from __future__ import annotations

import json
import logging
from bisect import bisect_left
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from datetime import datetime
from time import perf_counter_ns, time_ns
from typing import TYPE_CHECKING, Any

from starlette.datastructures import QueryParams
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from mock_server.domain.errors import (
    ApiError,
    Detail,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    RequestTimeout,
    ResponseValidationFailed,
    SessionEvicted,
    TooManySessions,
    Unauthorized,
)
from mock_server.http import cross_origin, fault_replies
from mock_server.http.auth import bearer_matches
from mock_server.http.cross_origin import PAGE_HEADERS
from mock_server.http.fault_replies import DribbledResponse, DroppedConnection
from mock_server.http.handling import NO_SESSION, BodyRules, Call, Handler, Reply, ServerContext, SessionUse
from mock_server.http.request_body import read_bytes
from mock_server.http.responses import JSON_CONTENT_TYPE, NO_LENGTH, encoded_response, error_response, json_response
from mock_server.http.session_url import SESSION_KEY
from mock_server.http.tls import TLS_EXTENSION, client_certificate
from mock_server.spec.openapi import Operation
from mock_server.state.faults import NO_BODY
from mock_server.state.sessions import DEFAULT_SESSION
from mock_server.state.turn import Turn, TurnPlan
from mock_server.telemetry.metrics import DURATION_BOUNDS_NS, FIRST_BOUND_NS
from mock_server.wire.decoding import MAX_BODY_BYTES, MISSING, is_json_media_type, parse_json
from mock_server.wire.encoding import encode_json
from mock_server.wire.headers import RawHeaders, header_value, header_values, is_repeated

if TYPE_CHECKING:
    from mock_server.telemetry.otel import OtelTracer

log = logging.getLogger("mock_server")
_new = object.__new__  # an Exchange and a Call made without their __init__ (OperationRunner.__call__, _answer)
URL_SESSION_FIELD = "__session"  # what `details[].field` calls the name in /__session/{name}/...
# Verdicts kept per operation (`OperationRunner._valid_values`, `_valid_bodies`): a schema's verdict on a value is
# the same every time, and calls name the same ids and send the same bodies again and again (a test's fixtures, a
# load), so a value found valid is not judged again (a body's check was a sixth of a limit change's instructions).
# Bounded: at most MAX_VERDICTS of each, forgotten whole when full; bodies of the public operations only, each kept
# (its bytes, by reference) only up to VERDICT_BODY_BYTES: at most 1 MiB an operation.
MAX_VERDICTS = 256
VERDICT_BODY_BYTES = 4096
# Content-Length headers kept per operation (`OperationRunner._lengths`): an operation answers a few sizes again and
# again (an event's answer is the same bytes at every lookup), and writing a number out in decimal and encoding it
# costs more than finding it (about 700 instructions a call, valgrind). Bounded: forgotten whole beyond MAX_LENGTHS.
MAX_LENGTHS = 256


@dataclass(slots=True)
class Exchange:
    """One request on its way through the steps, and what they learned about it. Read from the ASGI scope
    directly: a Starlette Request would be one more object a request, for what the scope holds already.
    `OperationRunner.__call__` makes one without this __init__, every field set in place: a field added here is set
    there (tests/http/test_made_in_place.py)."""

    scope: Scope
    receive: Receive
    raw_headers: RawHeaders  # as the ASGI server gave them: read a header at a time, never all decoded
    turn: Turn | None = None  # the request's turn in its session (none for the operations that open none)
    session_name: str = DEFAULT_SESSION
    received_at: datetime | None = None  # the session clock's reading: the turn's `now`, or one read without a turn
    raw_body: bytes = b""  # as it crossed the wire, for the journal
    dribble_ms: int = 0  # a slow_body fault fired: the answer's body is spread over this long
    body_read: bool = False  # raw_body holds the whole body (a request's stream is read once)

    content_type: str | None = None  # read once the body is

    def header(self, name: bytes) -> str | None:
        """The value of the header `name` (lower case; the first, when repeated)."""
        return header_value(self.raw_headers, name)


class OperationRunner:
    """One operation of a spec bound to its handler: runs the steps for each request."""

    def __init__(
        self,
        server: ServerContext,
        operation: Operation,
        handler: Handler,
        public: bool,
        guarded: bool,
        session_use: SessionUse = SessionUse.OPEN,
        body_rules: BodyRules | None = None,
        writes: bool = False,
    ) -> None:
        self.server = server
        # What every turn of the operation shares (state/turn.py); `writes`: a 2xx answer acknowledges a write to
        # the session, whose eviction then leaves a record (410 later).
        self.plan = TurnPlan(
            operation.operation_id,
            public,
            session_use is SessionUse.CREATE,  # an explicit session: made or brought back on purpose
            writes,
            server.coverage,
            server.turn_observers,
            server.tracing is not None,  # turns keep their domain events for the span
        )
        self.meter = server.metrics.meter(operation.operation_id)  # GET /__mock/metrics' counts of it
        self._tracer = server.tracing
        self.body_rules = body_rules  # None: a JSON body, judged by the operation's schema
        self.operation = operation
        self.handler = handler
        self.session_use = session_use
        self.public = public  # journaled and open to faults
        self.guarded = guarded  # needs the admin token when one is set
        self._query = [p for p in operation.parameters if p.location == "query"]
        self._path = [(p.name, p.check, (p.name,)) for p in operation.parameters if p.location == "path"]
        self._headers = [p for p in operation.parameters if p.location == "header" and p.name != "X-Mock-Session"]
        self._header_names = [p.name.lower().encode("latin-1") for p in self._headers]
        # An operation the spec gives no request body ignores any content sent (RFC 9110: it has no defined
        # semantics there): judging it would answer a 413/415 the operation does not document.
        self.takes_body = operation.body is not None or operation.body_required
        self._authorizes = not public  # every admin call: its origin, then the token (the public API: its origin)
        # What a browser's body may be to stand in for the admin header: what this operation takes (none: the header).
        self._body_types = frozenset(media_type.lower() for media_type in operation.body_media_types)
        self._opens_none = session_use is SessionUse.NONE
        self._validates_responses = server.settings.validate_responses  # settings are frozen
        self._valid_values: set[tuple[str, str]] = set()  # (path parameter, value) found valid
        self._valid_bodies: set[bytes] = set()  # JSON bodies whose value the operation's schema found valid
        self._lengths: dict[int, tuple[bytes, bytes]] = {}  # size -> its content-length header (MAX_LENGTHS)
        self._cert_header = server.settings.client_cert_header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request: the steps below, then the response, sent."""
        started = perf_counter_ns()
        raw_headers = scope["headers"]
        # Every field of the Exchange set here, on an object made without its __init__ (which CPython calls from C:
        # about 600 instructions more at every request).
        exchange = _new(Exchange)
        exchange.scope = scope
        exchange.receive = receive
        exchange.raw_headers = raw_headers
        exchange.turn = None
        exchange.session_name = DEFAULT_SESSION
        exchange.received_at = None
        exchange.raw_body = b""
        exchange.dribble_ms = 0
        exchange.body_read = False
        exchange.content_type = None
        # One walk over the header names, read in place (a frame of http/cross_origin.py and one of wire/headers.py
        # at every call were most of what these two questions cost): whether a header cross_origin judges a page by
        # is there (without one it refuses nothing: a program, nearly every call), and whether X-Mock-Session is.
        from_page = session_header = False
        for key, _ in raw_headers:
            if key in PAGE_HEADERS:
                from_page = True
            elif key == b"x-mock-session":
                session_header = True
        try:
            if self._authorizes:
                self._authorize(exchange)
            elif from_page and (refusal := cross_origin.foreign_page(raw_headers)) is not None:
                raise refusal  # before the session is opened: a page makes none, counts no lookup, is not journaled
            turn = self._begin(exchange, session_header)
            # A fault decided (or waiting for the body): no coroutine to make for nearly every call.
            faulted = turn is not None and (turn.fault is not None or turn.fault_waits_for_body)
            reply = await fault_replies.injected(self, exchange, turn) if faulted else None  # type: ignore[arg-type]
            if reply is None and self.public and self.server.shadow is not None:
                reply = await self.server.shadow.answer(self, exchange)
            if reply is None:
                if self.takes_body:
                    reply = await self.handle(exchange)
                else:  # no body to read (every GET): no coroutine to make for it
                    answer = self._answer(exchange, MISSING, None)
                    reply = answer if isinstance(answer, Reply) else await answer
        except RequestTimeout as error:  # the connection's answer, not the operation's: never judged by the spec
            reply = Reply.error(error)
            reply.off_spec = True
        except ApiError as error:
            # The mock's own session errors (410, 429) are no part of the interface: never judged against it.
            reply = Reply.error(error)
            reply.off_spec = isinstance(error, SessionEvicted | TooManySessions)
        except ClientDisconnect:
            # The client left before its whole body came: no operation ran, nobody is there to read an answer, and
            # nothing happened to journal (it was a 500 and "unexpected error" in the log).
            if exchange.turn is not None:
                exchange.turn.leave()
            return
        except Exception as exc:  # a bug: still the contract's body, and the journal says so
            log.exception("unexpected error in %s", self.operation.operation_id)
            reply = Reply(500, {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"})
        tracer = self._tracer
        if tracer is not None:  # the span's ids drawn before the turn journals the call (it keeps them)
            trace_id, span_id, traceparent = tracer.ids(exchange.raw_headers)
            if exchange.turn is not None:
                exchange.turn.trace = (trace_id, span_id)
        try:
            status, response = self._respond(exchange, reply)  # the turn finished there, last
        except BaseException:
            if exchange.turn is not None:  # held since begin, never finished: let go, unanswered
                exchange.turn.leave()
            raise
        elapsed = perf_counter_ns() - started
        # RequestMeter.count, inline: a call less at every request (telemetry/metrics.py). Nearly every answer
        # takes less than the first bucket's bound, and its status has been answered before: no search, no miss.
        meter = self.meter
        answered = 0 if reply.dropped else status
        try:
            meter.counts[answered][0 if elapsed <= FIRST_BOUND_NS else bisect_left(DURATION_BOUNDS_NS, elapsed)] += 1
        except KeyError:  # the operation's first answer of this status
            meter.count(answered, elapsed)
        else:
            meter.total_ns += elapsed
        if tracer is not None:
            self._trace(tracer, trace_id, span_id, traceparent, exchange, reply, elapsed)
        if type(response) is bytes:  # a JSON answer with no header of its own: sent as is (see _respond)
            size = len(response)
            length = self._lengths.get(size)
            if length is None:
                if len(self._lengths) >= MAX_LENGTHS:
                    self._lengths.clear()
                length = self._lengths[size] = (b"content-length", str(size).encode("latin-1"))
            await send({"type": "http.response.start", "status": status, "headers": [length, JSON_CONTENT_TYPE]})
            await send({"type": "http.response.body", "body": response})
        else:
            await response(scope, receive, send)  # type: ignore[operator]  # a Response

    # --- the steps, in order ------------------------------------------------------------------------

    def _authorize(self, exchange: Exchange) -> None:
        """An admin call from a page on another origin, or one that changes state without what no such page can
        send, is refused (http/cross_origin.py); then, when the server has one, the admin token is checked. Admin
        calls only: the public API's hot path never decodes its headers."""
        method, headers = exchange.scope["method"], header_values(exchange.raw_headers)
        refusal = cross_origin.foreign_origin(method, headers)
        token = self.server.settings.admin_token
        bearer_checked = False
        if refusal is None and token is not None and self.guarded:
            if not bearer_matches(headers.get("authorization"), token):
                raise Unauthorized(
                    "The admin API needs Authorization: Bearer TOKEN.", headers={"WWW-Authenticate": "Bearer"}
                )
            bearer_checked = True
        refusal = refusal or cross_origin.lacks_admin_header(method, headers, bearer_checked, self._body_types)
        if refusal is not None:
            raise refusal

    def _begin(self, exchange: Exchange, session_header: bool) -> Turn | None:
        """The request's turn in the session it names (X-Mock-Session, or the URL's /__session/{name}, else
        `default`), or None for an operation that opens none (then only its clock's reading). `session_header`:
        the request carries X-Mock-Session."""
        scope = exchange.scope
        if not session_header and SESSION_KEY not in scope:
            name = DEFAULT_SESSION  # named neither way (nearly every call): nothing to check
        else:
            name = exchange.session_name = self._session_name(exchange)
        sessions = self.server.sessions
        if self._opens_none:
            exchange.received_at = sessions.now_in(name)
            return None
        turn = exchange.turn = sessions.begin(
            self.plan, name, scope["method"], scope["path"], exchange.raw_headers, scope.get("path_params")
        )
        exchange.received_at = turn.now
        return turn

    async def handle(self, exchange: Exchange) -> Reply:
        """Read the request's body, then `_answer` it."""
        await self.read_body(exchange)
        body_problems: list[Detail] | None = None  # None: the operation's schema judges the body
        if not exchange.raw_body:
            body = MISSING
        elif self.body_rules is None:
            body = parse_json(exchange.raw_body, exchange.content_type)
        else:
            body, body_problems = await self.body_rules.judge(exchange.raw_body, exchange.content_type)
        answer = self._answer(exchange, body, body_problems)
        return answer if isinstance(answer, Reply) else await answer

    def _answer(self, exchange: Exchange, body: Any, body_problems: list[Detail] | None) -> Reply | Awaitable[Reply]:
        """Validate the request (its body read already: `body`, or MISSING), then let the operation's handler
        answer it (at once, or awaited by the caller)."""
        assert exchange.received_at is not None
        path, query, body = self._validate(exchange, body, body_problems)
        turn = exchange.turn
        if turn is not None and turn.session.store.turn is not turn:  # an await since begin let another request begin
            turn.claim_store()
        # Every field of the Call set here, on an object made without its __init__ (which CPython calls from C:
        # about 1,200 instructions more at every request).
        call = _new(Call)
        call.server = self.server
        call.session = turn.session if turn is not None else NO_SESSION
        call.path = path
        call.query = query
        call.body = body
        call.now = exchange.received_at
        call.scope = exchange.scope
        call.session_name = exchange.session_name
        call.turn = turn
        return self.handler(call)

    def _respond(self, exchange: Exchange, reply: Reply) -> tuple[int, Response | bytes]:
        """The status and the response the client gets (checked against the spec when asked), and the turn finished
        with them (journaled, counted), last: nothing may fail after it. A
        JSON answer with content and no header of its own -- nearly every answer -- is its bytes alone, which
        __call__ sends with the two headers a Response would have (http/responses.encoded_response): no Response
        to make."""
        if self._validates_responses and not reply.off_spec:
            reply = self._checked(reply)
        response: Response | bytes
        if reply.dropped:
            response = DroppedConnection()
        elif reply.text is not None:
            response = Response(reply.text, reply.status, reply.headers, media_type=reply.media_type)
        elif reply.encoded is None and reply.body is None:
            response = json_response(reply.status, None, reply.headers)
        else:
            content = reply.encoded if reply.encoded is not None else encode_json(reply.body)
            plain = (
                not reply.headers and not exchange.dribble_ms and reply.status >= 200 and reply.status not in NO_LENGTH
            )
            response = content if plain else encoded_response(reply.status, content, reply.headers)
        if exchange.dribble_ms and not reply.dropped:
            assert not isinstance(response, bytes)
            response = DribbledResponse(response, exchange.dribble_ms)
        turn = exchange.turn
        if turn is not None and self.public:
            content_type = exchange.content_type
            scope = exchange.scope
            cert_header = self._cert_header
            # Plain HTTP with no --client-cert-header (nearly every call): no certificate to look for.
            certificate = (
                client_certificate(scope, cert_header)
                if cert_header is not None or TLS_EXTENSION in (scope.get("extensions") or ())
                else None
            )
            turn.finish(
                None if reply.dropped else reply.status,
                exchange.raw_body,
                content_type is not None and is_json_media_type(content_type),
                response if isinstance(response, bytes) else bytes(response.body),  # the same object: bytes
                reply.injected,
                certificate,
                reply.off_spec,
                _refused_fields(reply) if reply.status == 400 else None,
            )
        elif turn is not None:  # an admin call in a session: nothing journaled or counted
            turn.finish(reply.status, b"", False, b"", False, None, reply.off_spec, None)
        elif self.public and not reply.dropped:  # refused before its session was opened: still counted
            self.plan.count(reply.status, reply.off_spec, _refused_fields(reply) if reply.status == 400 else None)
        return reply.status, response

    def _trace(
        self,
        tracer: OtelTracer,
        trace_id: int,
        span_id: int,
        traceparent: str | None,
        exchange: Exchange,
        reply: Reply,
        elapsed_ns: int,
    ) -> None:
        """The request's SERVER span (telemetry/otel.py), from what it recorded: made once it is answered."""
        end = time_ns()
        turn = exchange.turn
        scope = exchange.scope
        fault = turn.fault if turn is not None else None
        tracer.record(
            trace_id,
            span_id,
            traceparent,
            exchange.raw_headers,
            self.operation.operation_id,
            scope["method"],
            scope["path"],
            None if reply.dropped else reply.status,
            exchange.session_name,
            turn.scenario.name if turn is not None else None,
            fault.fault_id if fault is not None else None,
            reply.off_spec or reply.injected,
            turn.events if turn is not None else None,
            end - elapsed_ns,
            end,
        )

    # --- what the steps use -------------------------------------------------------------------------

    def _session_name(self, exchange: Exchange) -> str:
        """The name of X-Mock-Session and of the URL prefix (http/session_url.py), each checked like the other;
        when both are given they must agree."""
        header = exchange.header(b"x-mock-session")
        in_url: str | None = exchange.scope.get(SESSION_KEY)
        if header is None and in_url is None:
            return DEFAULT_SESSION
        if header is not None and is_repeated(exchange.raw_headers, b"x-mock-session"):
            # Two names: taking either would act on a session the client may not mean.
            raise InvalidRequest(
                "The request is invalid.", [Detail(("X-Mock-Session",), "is sent more than once; send one session")]
            )
        problems: list[Detail] = []
        if header is not None:
            problems += [d.within("X-Mock-Session") for d in self.server.session_check.problems(header)]
        if in_url is not None:
            problems += [d.within(URL_SESSION_FIELD) for d in self.server.session_check.problems(in_url)]
        if problems:
            where = "X-Mock-Session header" if problems[0].path[0] == "X-Mock-Session" else "session name in the URL"
            raise InvalidRequest(f"The {where} is invalid.", problems)
        if header is not None and in_url is not None and header != in_url:
            raise InvalidRequest(
                "The X-Mock-Session header and the URL name different sessions.",
                [Detail(("X-Mock-Session",), f"names session {header!r}, the URL names session {in_url!r}")],
            )
        return header or in_url or DEFAULT_SESSION

    def _body_limit(self, exchange: Exchange) -> tuple[int, str | None]:
        """The most bytes the body may have, and the 413's message (None: the default one)."""
        rules = self.body_rules
        if rules is not None and rules.max_bytes is not None and exchange.turn is not None:
            return rules.max_bytes(exchange.turn.session)
        return MAX_BODY_BYTES, None

    async def read_body(self, exchange: Exchange) -> None:
        """The request's body into `exchange.raw_body`, once (a fault's match may have read it already), bounded in
        size and time."""
        if exchange.body_read:
            return
        content_type = declared = None
        for key, value in exchange.raw_headers:  # both in one walk, in place: no frame of wire/headers.py a body
            if key == b"content-type":
                if content_type is None:  # the first, when repeated (as header_value reads it)
                    content_type = value.decode("latin-1")
            elif key == b"content-length" and declared is None:
                declared = value.decode("latin-1")
        exchange.content_type = content_type
        limit, over = self._body_limit(exchange) if self.body_rules is not None else (MAX_BODY_BYTES, None)
        timeout = self.server.settings.connection.body_timeout
        exchange.raw_body = await read_bytes(exchange.receive, declared, timeout, limit, over)
        exchange.body_read = True

    @staticmethod
    def json_or_nothing(exchange: Exchange) -> Any:
        """The body's JSON value for a fault's match, or NO_BODY when none was sent or it is not JSON (the call
        itself is refused for that later, if no fault answers it)."""
        if not exchange.raw_body:
            return NO_BODY
        try:
            return parse_json(exchange.raw_body, exchange.content_type)
        except ApiError:
            return NO_BODY

    def _validate(
        self, exchange: Exchange, body: Any, body_problems: list[Detail] | None = None
    ) -> tuple[dict[str, str], dict[str, str], Any]:
        """Path, query, headers and body checked against the operation's own schemas (or the body's problems as
        its BodyRules found them): every problem at once. A path value or a JSON body found valid before is not
        judged again (MAX_VERDICTS)."""
        problems: list[Detail] = []
        path_params = exchange.scope.get("path_params") or {}
        path: dict[str, str] = {}
        valid_values = self._valid_values
        for name, check, field_path in self._path:
            path[name] = value = path_params.get(name, "")
            if (name, value) in valid_values:
                continue
            if check.fast.is_valid(value):  # the verdict first: its problems are worked out only when wrong
                if len(valid_values) >= MAX_VERDICTS:
                    valid_values.clear()
                valid_values.add((name, value))
            else:
                problems += check.problems(value, field_path)
        query: dict[str, str] = {}
        if self._query:
            given = QueryParams(exchange.scope["query_string"])
            for param in self._query:
                if param.name in given:
                    query[param.name] = given[param.name]
                    problems += param.check.problems(query[param.name], (param.name,))
                elif param.required:
                    problems.append(Detail((param.name,), "is required"))
        if self._headers:
            for param, header_name in zip(self._headers, self._header_names, strict=True):
                sent = exchange.header(header_name)
                if sent is not None:
                    problems += param.check.problems(sent, (param.name,))
                elif param.required:
                    problems.append(Detail((param.name,), "is required"))
        operation = self.operation
        if body is MISSING or operation.body is None:
            if body is MISSING and operation.body_required:
                wanted = "a JSON body" if self.body_rules is None else "a body"  # BodyRules may take YAML too
                problems.append(Detail((), f"{wanted} is required"))
            body = None
        elif body_problems is not None:
            problems += body_problems
        else:
            raw, valid_bodies = exchange.raw_body, self._valid_bodies
            known = type(raw) is bytes and raw in valid_bodies  # the same bytes read to the same value
            if not known:
                if operation.body.fast.is_valid(body):
                    if self.public and type(raw) is bytes and len(raw) <= VERDICT_BODY_BYTES:
                        if len(valid_bodies) >= MAX_VERDICTS:
                            valid_bodies.clear()
                        valid_bodies.add(raw)
                else:
                    problems += operation.body.problems(body)
        if problems:
            raise InvalidRequest("The request is invalid.", problems)
        return path, query, body

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
            if check is None and (reply.body is not None or reply.encoded is not None):
                problems.append(f"status {status} documents no body")
            elif check is not None:
                # Round-trip through JSON so the check sees exactly what the client will.
                sent = json.loads(reply.encoded if reply.encoded is not None else encode_json(reply.body))
                problems += [f"{d.field or '(body)'}: {d.message}" for d in check.problems(sent)]
        if not problems:
            return reply
        message = f"The response of {self.operation.operation_id} does not match the spec: {'; '.join(problems)}."
        log.error("%s (status %s, body %r)", message, status, reply.value)
        return Reply.error(ResponseValidationFailed(message))


def _refused_fields(reply: Reply) -> list[str]:
    """The fields a 400 refused, for coverage: those of a validation failure (only a refusal has them: the fields
    are looked for then, and only then); none for an injected 400 or another code."""
    body = reply.body
    if not reply.off_spec and isinstance(body, dict) and body.get("code") == "invalid_request":
        return [d["field"] for d in body.get("details", ())]
    return []


class PathEndpoint:
    """The ASGI app of one spec path: dispatches on the method, and answers 405 with the spec's `Allow`.

    HEAD is answered wherever GET is (RFC 9110 9.3.2: the GET's status and headers, no content; the server
    leaves the content out), journaled as HEAD. `Allow` lists the spec's methods only, as the spec states them."""

    def __init__(self, runners: Mapping[str, OperationRunner]) -> None:
        self.runners = dict(runners)  # the spec's methods
        self.allow = ", ".join(sorted(self.runners))
        # method -> its runner, HEAD included: http/application.MockApp calls the runner itself when the path
        # holds no escape, so whatever this endpoint checks beyond the method must be on a path with a `%`.
        self.dispatch: dict[str, OperationRunner] = dict(self.runners)
        if "GET" in self.runners:
            self.dispatch.setdefault("HEAD", self.runners["GET"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method = scope["method"]
        runner = self.dispatch.get(method)
        raw_path = scope.get("raw_path") or b""
        if raw_path.find(b"%") >= 0 and raw_path.lower().find(b"%2f") >= 0:  # find(): see http/application.py
            # The route was matched on the decoded path, where this `/` split an id in two: no id holds one.
            response = error_response(
                NotFound(f"No such path: {Request(scope).url.path} (an id never holds an encoded slash, %2F).")
            )
        elif runner is None:
            error = MethodNotAllowed(
                f"Method {method} is not allowed here; allowed: {self.allow}.", headers={"Allow": self.allow}
            )
            response = error_response(error)
        else:
            await runner(scope, receive, send)
            return
        await response(scope, receive, send)
