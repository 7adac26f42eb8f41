"""What `mock-server` runs once its options are read: `check` (the scenarios judged), `serve` (the app built,
the state file read back, uvicorn run through server.py, the coverage report and the recording written at the
end), and the oracle app verify-provider compares a provider with."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import ssl
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.types import ASGIApp

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from mock_server.state.persistence import StateFile, StateFileLock

from mock_server.domain.errors import ScenarioNotFound
from mock_server.domain.models import Scenario
from mock_server.domain.words import counted
from mock_server.http.tls import TlsSetupError, server_context
from mock_server.record_command import exit_1_when_not_written, writing_recording
from mock_server.scenarios.loader import ScenarioError, ScenarioLoader
from mock_server.server import Server, port_in_use
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from mock_server.state.bounds import Bounds
from mock_server.state.coverage import Coverage, markdown

EXIT_INVALID = 2


def check(fixtures: Path) -> int:
    try:
        scenarios = ScenarioLoader.from_specs(load_specs()).load_directory(fixtures)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, flush=True)
        return EXIT_INVALID
    if not scenarios:  # nothing wrong in it, and nothing to serve either: most likely the wrong directory
        print(f"{fixtures}: {NO_SCENARIO_FILE}", flush=True)
        return EXIT_INVALID
    print(f"{counted(len(scenarios), 'scenario')} valid in {fixtures}: {', '.join(scenarios)}", flush=True)
    default = Settings().scenario
    if default not in scenarios:
        print(
            f"note: none is named {default!r}, the one `mock-server` starts from: serve these with "
            f"--scenario NAME (e.g. --scenario {next(iter(scenarios))})",
            flush=True,
        )
    return 0


NO_SCENARIO_FILE = "no scenario file (NAME.yaml or NAME.yml) in this directory"


def scenario_not_found(fixtures: Path, missing: ScenarioNotFound) -> str:
    """What `serve` says when the scenario to start from is not in the directory: which ones are, how to pick."""
    if not missing.known:
        return (
            f"{fixtures}: {NO_SCENARIO_FILE}, so there is no scenario {missing.name!r} to start from: add "
            f"{missing.name}.yaml there, or point --fixtures (MOCK_SERVER_FIXTURES) at your scenario files"
        )
    return (
        f"{fixtures}: no scenario named {missing.name!r} to start sessions from; "
        f"{counted(len(missing.known), 'scenario')} there: {', '.join(missing.known)}.\n"
        f"Pick one with --scenario NAME (or MOCK_SERVER_SCENARIO=NAME), e.g. "
        f"`mock-server --fixtures {fixtures} --scenario {missing.known[0]}`, or add {missing.name}.yaml there."
    )


def server_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The server's TLS context, None for plain HTTP; TlsSetupError names a file that cannot serve."""
    if settings.tls_cert is None:
        return None
    return server_context(settings.tls_cert, settings.tls_key, settings.client_ca, settings.client_cert)


def ready_banner(scenario: str, events: int, accounts: int) -> str:
    """The ready line's tail: `(scenario default: 4 events, 2 accounts)`, `(scenario one: 1 event, 1 account)`."""
    return f"(scenario {scenario}: {counted(events, 'event')}, {counted(accounts, 'account')})"


def serve(settings: Settings) -> int:
    logging.basicConfig(level=settings.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    if settings.state_file is None:
        return _serve(settings)
    from mock_server.scenarios.state_file import check_writable
    from mock_server.state.persistence import StateFileInUse, StateFileLock, remove_stale_temporaries

    # One server a state file, for as long as it runs (state/persistence.py): taken before the file is read.
    try:
        lock = StateFileLock.take(settings.state_file)
    except StateFileInUse as exc:
        print(f"mock-server: {exc}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    except OSError as exc:
        try:
            check_writable(settings.state_file)
        except ScenarioError:
            return _serve(settings)  # no directory, or one it cannot write: the state file's own check says which
        print(f"mock-server: {settings.state_file}: cannot take its lock: {exc}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    try:
        for temporary in remove_stale_temporaries(settings.state_file):  # a write killed halfway left it
            logging.getLogger("mock_server").info("removed %s, left by a write that never finished", temporary)
        return _serve(settings, lock)
    finally:
        lock.release()


def _app_or_exit(settings: Settings) -> tuple[Starlette, str] | int:
    """The app and its ready line's tail, or the exit status once its scenarios' problems are printed (stderr)."""
    from mock_server.app import create_app  # after argument errors are out of the way

    try:
        app = create_app(settings)
    except ScenarioError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr, flush=True)
        return EXIT_INVALID
    except ScenarioNotFound as exc:
        print(scenario_not_found(settings.fixtures, exc), file=sys.stderr, flush=True)
        return EXIT_INVALID
    # The seed never becomes garbage: out of the collector's sight, a million events cost no GC pauses.
    gc.freeze()
    scenario = app.state.sessions.scenarios[settings.scenario]
    return app, ready_banner(scenario.name, len(scenario.events), len(scenario.accounts))


def _serve(settings: Settings, lock: StateFileLock | None = None) -> int:
    try:
        context = server_tls_context(settings)
    except TlsSetupError as exc:
        print(f"mock-server: {exc}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    built = _app_or_exit(settings)
    if isinstance(built, int):
        return built
    app, banner = built
    if (busy := port_in_use(settings.host, settings.port)) is not None:  # after the scenarios' own problems
        print(f"mock-server: {busy}", file=sys.stderr, flush=True)
        return EXIT_INVALID
    report = settings.coverage_report
    coverage = app.state.coverage
    on_shutdown = (lambda: write_coverage_report(coverage, report)) if report else None
    recorder = app.state.server.recorder
    not_written: list[str] = []  # record mode: why the recording is not where asked (exit 1)
    if recorder is not None:
        on_shutdown = writing_recording(app.state.server, on_shutdown, not_written)
    state_file: StateFile | None = app.state.state_file
    if state_file is not None:
        state_file.lock = lock  # a lock file removed or replaced while it runs stops the writes (health says so)
    state_writes: list[asyncio.Task[None]] = []

    def on_start(url: str) -> None:
        if state_file is not None:
            state_writes.append(asyncio.create_task(state_file.run()))
        print(f"mock-server ready on {url} {banner}", flush=True)

    async def on_stop() -> None:
        for task in state_writes:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if state_file is not None:
            # The last requests are answered: this write holds every write acknowledged.
            try:
                state_file.save()
            except OSError as exc:
                print(f"mock-server: cannot write the state file: {exc}", file=sys.stderr, flush=True)
        if on_shutdown is not None:
            on_shutdown()
        if app.state.server.tracing is not None:  # the spans still queued sent (bounded: telemetry/otel.py)
            await asyncio.to_thread(app.state.server.tracing.shutdown)

    server = Server(app, settings, context, on_start=on_start, on_stop=on_stop)
    if recorder is not None:  # POST /__mock/record/stop: the file is written, then the server stops as on SIGTERM
        recorder.on_stop = server.stop
    try:
        with exit_1_when_not_written(recorder is not None, not_written):
            server.run()
    except KeyboardInterrupt:
        return 1 if not_written else 0  # Ctrl-C: stopped as asked, gracefully (handle_exit)
    if not_written:
        return 1
    if server.interrupted:
        return 0
    # uvicorn itself exits 3 (sys.exit) when it cannot bind the port.
    return 0 if server.started else 1


def write_coverage_report(coverage: Coverage, path: Path) -> None:
    """The coverage as CI keeps it: JSON when `path` ends in .json, else the Markdown report."""
    report = coverage.report()
    text = json.dumps(report, indent=2) + "\n" if path.suffix.lower() == ".json" else markdown(report) + "\n"
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"mock-server: cannot write the coverage report: {exc}", file=sys.stderr, flush=True)


def oracle(fixtures: Path, scenario: str, specs: Specs) -> tuple[ASGIApp, Scenario]:
    """The mock verify-provider compares a provider with: the app on `scenario`, bounded only by what one run
    registers, with no journal (nobody reads it)."""
    from mock_server.app import create_app

    bounds = Bounds(max_accounts=10**7, max_recipients=10**7, journal_bytes=0)
    app = create_app(Settings(fixtures=fixtures, scenario=scenario, bounds=bounds), specs)
    return app, app.state.sessions.scenarios[scenario]
