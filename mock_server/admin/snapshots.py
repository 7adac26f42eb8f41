"""Admin handlers for loading a state document and for named snapshots of a session (issue 13, 3)."""

from __future__ import annotations

import functools
import threading
from typing import Any

from mock_server.domain.models import Scenario
from mock_server.http.handling import BodyRules, Call, Handler, Reply
from mock_server.scenarios.loader import ScenarioLoader
from mock_server.scenarios.state_body import ScenarioBody, judge_off_the_loop
from mock_server.spec.openapi import Specs
from mock_server.state.export import off_the_loop, state_document
from mock_server.state.footprint import scenario_footprint
from mock_server.state.schedules import plan_to_json
from mock_server.state.sessions import Session, Sessions
from mock_server.state.store import Events
from mock_server.wire.decoding import MAX_BODY_BYTES

_LOADERS: dict[int, ScenarioLoader] = {}


def _loader(specs: Specs) -> ScenarioLoader:
    """The scenario files' own loader, compiled once per set of specs."""
    loader = _LOADERS.get(id(specs))
    if loader is None:
        loader = _LOADERS[id(specs)] = ScenarioLoader.from_specs(specs)
    return loader


def body_rules(specs: Specs, sessions: Sessions) -> dict[str, BodyRules]:
    """The state document is read as a scenario file (JSON or YAML, as the spec lists) and judged by the
    scenario loader's own checks, every problem in one answer (scenarios/state_body.py); it may be as big as an
    export of a session within its bound (`state_body_limit`)."""
    loader = _loader(specs)
    accepted = specs.admin.operations["mockPutState"].body_media_types
    judge = functools.partial(judge_off_the_loop, loader, accepted=accepted)
    return {"mockPutState": BodyRules(judge, functools.partial(state_body_limit, sessions))}


def state_body_limit(sessions: Sessions, session: Session) -> tuple[int, str]:
    """The most bytes a state document may have in `session`, and the 413's message: twice what the session may
    hold beyond its scenario plus what the scenario's own records hold (an export takes half to four fifths of the
    bytes its records count, and a JSON export at most twice whatever its texts: what GET /__mock/state answers
    for a session within its bound always loads back), and never less than any other body may have."""
    bound = session.bounds.max_session_bytes
    limit = max(MAX_BODY_BYTES, 2 * (bound + sessions.seed_bytes(session.scenario)))
    over = (
        f"The state document is over {limit:,} bytes: twice what a session may hold beyond its scenario "
        f"(mock-server --max-session-bytes {bound:,}) and what the scenario's own records hold."
    )
    return limit, over


def _summary(session: Session) -> dict[str, int]:
    events, accounts = session.store.counts()
    return {"events": events, "accounts": accounts, "schedules": len(session.schedules.pending())}


async def put_state(call: Call) -> Reply:
    """The body was judged on its way in exactly as a scenario file (body_rules): nothing reaches here, and
    nothing is applied, unless every check passed. The state is built, and its bytes counted, off the event loop
    (a big document takes seconds); what it holds beyond the session's seed counts against the session's bound."""
    document: ScenarioBody = call.body
    session = call.session
    seed = session.scenario
    loader = _loader(call.server.specs)
    sessions = call.server.sessions

    def work(cancelled: threading.Event) -> tuple[Scenario, int]:
        state = loader.build(seed.name, document.data)
        return state, max(0, scenario_footprint(state) - sessions.seed_bytes(seed))

    state, state_bytes = await off_the_loop(work)
    session.load_state(state, state_bytes)
    return Reply(200, _summary(session))


def take_snapshot(call: Call) -> Reply:
    return Reply(201, call.session.take_snapshot(call.path["name"], call.now).to_json())


def restore_snapshot(call: Call) -> Reply:
    return Reply(200, call.session.restore_snapshot(call.path["name"]).to_json())


def list_snapshots(call: Call) -> Reply:
    return Reply(200, {"snapshots": [s.to_json() for s in call.session.snapshots.all()]})


async def get_snapshot(call: Call) -> Reply:
    """The snapshot's state as a scenario document (what restoring it would export), made off the event loop
    as the state export is: it walks the whole seed. What a snapshot holds is never changed (a restore copies
    it), so the worker may read it while the session goes on."""
    snapshot = call.session.snapshots.get(call.path["name"])
    base, events, mutable = snapshot.store.base, snapshot.store.events, snapshot.store.mutable
    description = call.session.scenario.description
    schedules = [plan_to_json(plan.remaining()) for plan in snapshot.schedules.pending()]

    def work(cancelled: threading.Event) -> dict[str, Any]:
        accounts = {**base.accounts, **mutable["_accounts"]}
        return state_document(description, Events(base.events, events), list(accounts.values()), schedules)

    return Reply(200, await off_the_loop(work))


def delete_snapshot(call: Call) -> Reply:
    call.session.snapshots.delete(call.path["name"])
    return Reply(204)


HANDLERS: dict[str, Handler] = {
    "mockPutState": put_state,
    "mockTakeSnapshot": take_snapshot,
    "mockRestoreSnapshot": restore_snapshot,
    "mockListSnapshots": list_snapshots,
    "mockGetSnapshot": get_snapshot,
    "mockDeleteSnapshot": delete_snapshot,
}
