"""The handler contract: what a handler of either API gets (a validated `Call`) and gives (a `Reply`), and what
an operation declares about its session and body beside its handler. api/, admin/ and the pipeline
(http/pipeline.py, which runs the road to and from a handler) all import it; it knows nothing of that road.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from mock_server.domain.errors import ApiError, Detail
from mock_server.state.sessions import DEFAULT_SESSION
from mock_server.telemetry.metrics import ServerMetrics
from mock_server.wire.headers import header_values

if TYPE_CHECKING:
    from starlette.types import Scope

    from mock_server.http.record import Recorder
    from mock_server.http.shadow import Shadow
    from mock_server.settings import Settings
    from mock_server.spec.openapi import SchemaCheck, Specs
    from mock_server.spec.served import ServedSpecs
    from mock_server.state.coverage import Coverage
    from mock_server.state.persistence import StateFile
    from mock_server.state.sessions import Session, Sessions
    from mock_server.state.turn import Turn, TurnObserver
    from mock_server.telemetry.otel import OtelTracer


@dataclass(frozen=True)
class ServerContext:
    """What every request shares: the specs, the settings and the sessions (the one owner of state)."""

    specs: Specs
    settings: Settings
    sessions: Sessions
    session_check: SchemaCheck  # the admin spec's SessionName, for the X-Mock-Session header
    coverage: Coverage  # server-wide: what the public API answered, across sessions
    served: ServedSpecs  # the documents as handed out (admin bundled, `servers` per request)
    shadow: Shadow | None = None  # shadow mode: public calls answered by a real backend, compared with the mock's
    # The public API's handlers by operationId (api/handlers.HANDLERS, handed in by the porch): the Pact export
    # replays journaled calls through them, the way the API answered them.
    public_handlers: Mapping[str, Handler] = field(default_factory=dict)
    state_file: StateFile | None = None  # --state-file's writer: health reports a write that failed
    recorder: Recorder | None = None  # record mode (with `shadow`): the session kept in step with the backend
    # Called with every finished turn of a request (state/turn.py): what must see whole requests hangs here.
    # Empty by default, which costs a request one test.
    turn_observers: tuple[TurnObserver, ...] = ()
    # Telemetry (mock_server/telemetry): the request counts GET /__mock/metrics reads (always kept), and the tracer
    # that makes each request's span (None: tracing off, nothing imported).
    metrics: ServerMetrics = field(default_factory=ServerMetrics)
    tracing: OtelTracer | None = None


class _NoSession:
    """`Call.session` of an operation that opens no session: a handler that uses it has a bug, and is told so."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError("this operation opens no session")


NO_SESSION = cast("Session", _NoSession())
_new = object.__new__  # a reply made without its __init__ (encoded_reply)


@dataclass(slots=True)
class Call:
    """A validated request, as a handler sees it. The pipeline makes one without this __init__, every field set in
    place (http/pipeline.OperationRunner._answer): a field added here is set there (tests/http/test_made_in_place.py).
    """

    server: ServerContext
    # The calling session: a plain attribute, not a property, as every handler asks (a property's frame of this
    # module at every request). An operation that opens none (SessionUse.NONE) gets NO_SESSION, which refuses use.
    session: Session
    path: dict[str, str]
    query: dict[str, str]
    body: Any  # the validated JSON body; None when the operation takes none or none was sent
    now: datetime  # the session clock's reading when the request arrived
    scope: Scope = field(default_factory=dict)  # the ASGI scope: for the handlers that say where they are served
    session_name: str = DEFAULT_SESSION  # the session the request names, opened or not
    # The request's turn in the session (state/turn.py): domain events are noted on it. None when the operation
    # opens no session, or for a call replayed outside any request (a Pact export).
    turn: Turn | None = None

    @property
    def headers(self) -> Mapping[str, str]:
        """The request's headers by lower-case name (content negotiation), decoded when a handler asks."""
        return header_values(self.scope.get("headers", ()))


@dataclass(slots=True)
class Reply:
    status: int
    body: Any = None  # JSON value; None: no body (unless `encoded`)
    headers: Mapping[str, str] | None = None  # None: none (no mapping made per answer for the many with none)
    text: str | bytes | None = None  # a non-JSON body (YAML; a shadowed backend's bytes), sent with `media_type`
    media_type: str | None = None
    off_spec: bool = False  # an injected fault: deliberately off-spec, never judged by --validate-responses
    dropped: bool = False  # an injected reset: no answer at all, the connection is dropped
    injected: bool = False  # a fault answered in the mock's place (journaled so: no contract is drawn from it)
    encoded: bytes | None = None  # the JSON body already encoded (an answer kept per version): sent as it is

    @property
    def value(self) -> Any:
        """The JSON body as a value, whichever way the reply holds it."""
        return json.loads(self.encoded) if self.encoded is not None else self.body

    @classmethod
    def error(cls, error: ApiError) -> Reply:
        return cls(error.status, error.body(), error.headers)


def encoded_reply(status: int, encoded: bytes) -> Reply:
    """`Reply(status, encoded=encoded)`, every field set here on an object made without Reply's __init__: CPython
    calls a dataclass's __init__ from C, with its keyword, which cost a lookup about 1,300 instructions more
    (callgrind)."""
    reply = _new(Reply)
    reply.status = status
    reply.body = None
    reply.headers = None
    reply.text = None
    reply.media_type = None
    reply.off_spec = False
    reply.dropped = False
    reply.injected = False
    reply.encoded = encoded
    return reply


# A handler answers at once, or (for work too slow for the event loop, such as the YAML export) awaits it.
Handler = Callable[[Call], Reply | Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class BodyRules:
    """How an operation reads its body and finds every problem of it, when not as JSON against its own schema
    (the state document: a scenario file's reader and checks, scenarios/state_body.py). `judge` takes the raw body and
    its Content-Type and answers the value read and its problems (listed beside the parameters'), or raises the
    contract's error for a body it cannot read; it is awaited, so slow judging can leave the event loop."""

    judge: Callable[[bytes, str | None], Awaitable[tuple[Any, list[Detail]]]]
    # The most bytes the body may have in the session, and the 413's message (None: MAX_BODY_BYTES, as any body).
    max_bytes: Callable[[Session], tuple[int, str]] | None = None


class SessionUse(enum.Enum):
    """What an operation does with the session the request names."""

    OPEN = "open"  # opens it, made on first use; an evicted explicit session answers 410
    CREATE = "create"  # opens it as an explicit session (a reset): made or brought back on purpose
    NONE = "none"  # never opens one (health, the session registry, spec downloads): Call.session is NO_SESSION
