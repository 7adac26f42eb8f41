"""create_app(settings): load the specs and scenarios once, build the sessions, mount every spec route."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mock_server.admin import handlers as admin
from mock_server.admin import sessions as session_admin
from mock_server.admin import snapshots as snapshot_admin
from mock_server.api import handlers as public_api
from mock_server.domain.errors import NotFound
from mock_server.http.application import MockApp
from mock_server.http.handling import BodyRules, Handler, ServerContext, SessionUse
from mock_server.http.pipeline import OperationRunner, PathEndpoint
from mock_server.http.responses import error_response
from mock_server.http.session_url import SessionPrefix
from mock_server.mcp.endpoint import mcp_routes
from mock_server.mcp.tools import MCP_PATH
from mock_server.scenarios.loader import Problem, ScenarioError, ScenarioLoader, shown
from mock_server.settings import Settings
from mock_server.spec.openapi import Spec, Specs, load_specs
from mock_server.spec.served import ServedSpecs
from mock_server.start_freeze import freeze_start_objects
from mock_server.state.coverage import Coverage, OperationDoc
from mock_server.state.sessions import Sessions
from mock_server.telemetry.metrics import ServerMetrics
from mock_server.telemetry.tracing import start_tracing

if TYPE_CHECKING:
    from mock_server.http.shadow import Shadow
    from mock_server.state.persistence import StateFile
    from mock_server.state.turn import TurnObserver

# Served under --no-admin and without the admin token: health is what CI scripts poll before anything else,
# and the public spec describes the public API, not the test controls.
ALWAYS_OPEN = frozenset({"mockHealth", "publicSpecYaml", "publicSpecJson"})
# The pages and their files hold no data, and a browser navigating to a page cannot send a token: they need none
# (their script asks for it and sends it with every call), but are off under --no-admin like the rest of /__mock.
TOKEN_FREE = ALWAYS_OPEN | {"mockDashboard", "mockDocs", "mockAsset"}


def _routes(
    spec: Spec,
    handlers: Mapping[str, Handler],
    server: ServerContext,
    public: bool,
    keep: frozenset[str] | None,
    body_rules: Mapping[str, BodyRules] | None = None,
    elsewhere: frozenset[str] = frozenset(),
) -> list[Route]:
    """One Route per spec path, answering each of its operations with the handler of that operationId (and
    reading its body by `body_rules` of that operationId, when it has some); the paths in `elsewhere` aside."""
    table = []
    for path, operations in spec.paths().items():
        if path in elsewhere:
            continue
        runners = {
            op.method: OperationRunner(
                server,
                op,
                handlers[op.operation_id],
                public,
                op.operation_id not in TOKEN_FREE,
                session_admin.SESSION_USE.get(op.operation_id, SessionUse.OPEN),
                (body_rules or {}).get(op.operation_id),
                writes=op.method not in ("GET", "HEAD") and op.operation_id not in session_admin.READS_ONLY,
            )
            for op in operations
            if keep is None or op.operation_id in keep
        }
        if runners:
            table.append(Route(path, PathEndpoint(runners)))
    return table


def coverage_of(spec: Spec) -> Coverage:
    """Empty coverage counts for every operation of the (public) spec, with the statuses it documents."""
    return Coverage(
        OperationDoc(op.operation_id, op.method, op.path, tuple(op.responses)) for op in spec.operations.values()
    )


async def _not_found(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 (no route matches) in the contract's body. Its 405 never happens: every route is
    a PathEndpoint that answers every method itself, with the spec's `Allow`."""
    assert isinstance(exc, HTTPException)
    return error_response(NotFound(f"No such path: {request.url.path}.", headers=exc.headers))


def shadow_of(settings: Settings, specs: Specs) -> Shadow | None:
    """Shadow mode's link to the backend, when `settings.shadow` names one."""
    if settings.shadow is None:
        return None
    # Imported here, as record mode and the state file below: a server started without them never loads them.
    from mock_server.http.outbound import Outbound
    from mock_server.http.shadow import Shadow

    outbound = Outbound(
        settings.shadow.rstrip("/"),
        settings.shadow_headers,
        settings.shadow_cert,
        settings.shadow_key,
        settings.shadow_cacert,
        settings.shadow_timeout,
        settings.shadow_max_body,
        "--shadow-",
    )
    return Shadow(outbound, specs.public)


def create_app(
    settings: Settings | None = None, specs: Specs | None = None, turn_observers: tuple[TurnObserver, ...] = ()
) -> Starlette:
    """The ASGI app. Raises ScenarioError when a scenario does not validate. `turn_observers`: called with every
    finished turn of a request in a session (state/turn.py), in order.

    Built with the cyclic garbage collector paused: what is built lives as long as the app, and a full collection
    in the middle of it (a third of the build in a pytest process) walked every object of the process for nothing;
    the first app of a process is then frozen out of its reach with the rest of the start
    (freeze_start_objects), so that no collection walks it later either."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        app = _build(settings or Settings(), specs, turn_observers)
        freeze_start_objects()
    finally:
        if collecting:
            gc.enable()
    return app


def _build(settings: Settings, specs: Specs | None, turn_observers: tuple[TurnObserver, ...]) -> Starlette:
    specs = specs or load_specs()
    loader = ScenarioLoader.from_specs(specs)
    recording = settings.recording
    if recording is None:
        scenarios, start = loader.load_directory(settings.fixtures), settings.scenario
    else:  # record mode starts from nothing: the file holds only what the target showed
        from mock_server.state.recording import empty_scenario

        scenarios, start = {recording.name: empty_scenario(recording)}, recording.name
    sessions = Sessions(
        scenarios,
        start,
        seed=settings.seed,
        clock_start=settings.clock,
        max_sessions=settings.max_sessions,
        bounds=settings.bounds,
    )
    state_file = _state_file(settings, specs, loader, sessions)
    recorder = None
    if recording is not None:
        from mock_server.http.record import Recorder

        recorder = Recorder(recording, loader)
    tracing = start_tracing(settings.otel_endpoint, specs)  # None: off, and OpenTelemetry never imported
    if tracing is not None:
        sessions.noted_evictions = []
    metrics = ServerMetrics()
    metrics.sessions = sessions
    server = ServerContext(
        specs,
        settings,
        sessions,
        specs.admin.check("#/components/schemas/SessionName"),
        coverage_of(specs.public),
        ServedSpecs.build(specs),
        shadow_of(settings, specs),
        public_api.HANDLERS,
        state_file,
        recorder,
        turn_observers,
        metrics,
        tracing,
    )
    public = _routes(specs.public, public_api.HANDLERS, server, public=True, keep=None)
    table = public + _routes(
        specs.admin,
        admin.HANDLERS,
        server,
        public=False,
        keep=None if settings.admin else ALWAYS_OPEN,
        body_rules=snapshot_admin.body_rules(specs, sessions),
        elsewhere=frozenset({MCP_PATH}),
    )
    if settings.admin:
        table += mcp_routes(server, specs.admin)  # the MCP SDK is imported when the path is first called
    app = MockApp(
        direct=public,  # found before Starlette's middleware and router (http/application.py)
        routes=table,
        exception_handlers={HTTPException: _not_found},
        middleware=[Middleware(SessionPrefix)],  # /__session/{name}/... serves every route in session `name`
    )
    app.router.redirect_slashes = False  # a 307 would hide a path the spec lacks
    app.state.sessions = sessions
    app.state.specs = specs
    app.state.settings = settings
    app.state.coverage = server.coverage
    app.state.server = server  # record mode's end (admin/recording.py) reads the recorder and the sessions
    app.state.state_file = state_file  # written by the CLI's server: every --state-interval seconds, and at the end
    return app


def _state_file(settings: Settings, specs: Specs, loader: ScenarioLoader, sessions: Sessions) -> StateFile | None:
    """The state file's writer, once what it holds (if anything yet) is back in `sessions`. A file that cannot be
    read back whole is ScenarioError, every problem placed (the CLI exits 2), and is never written over."""
    path = settings.state_file
    if path is None:
        return None
    from mock_server.scenarios.state_file import check_writable, read_state_file
    from mock_server.state.persistence import StateFile, max_file_bytes, restore

    check_writable(path)
    state_check = specs.admin.check("#/components/schemas/StateFile")
    largest = max_file_bytes(settings.bounds, settings.max_sessions)
    document = read_state_file(path, state_check, loader, sessions.scenarios, largest)
    if document is not None:
        try:
            restore(sessions, document, loader.build)
        except Exception as exc:  # a state the checks let through but cannot be rebuilt: still no traceback
            raise ScenarioError(
                [Problem(shown(path), 1, 1, "", f"cannot be restored: {type(exc).__name__}: {exc}")]
            ) from exc
    return StateFile(path, sessions, settings.state_interval)
