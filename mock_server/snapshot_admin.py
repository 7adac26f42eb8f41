"""Admin handlers for loading a state document and for named snapshots of a session (issue 13, 3)."""

from __future__ import annotations

from .errors import InvalidRequest
from .export import state_document
from .pipeline import Call, Handler, Reply
from .scenarios import ScenarioLoader
from .schedules import plan_to_json
from .sessions import Session
from .spec import Specs

_LOADERS: dict[int, ScenarioLoader] = {}


def _loader(specs: Specs) -> ScenarioLoader:
    """The scenario files' own loader, compiled once per set of specs."""
    loader = _LOADERS.get(id(specs))
    if loader is None:
        loader = _LOADERS[id(specs)] = ScenarioLoader.from_specs(specs)
    return loader


def _summary(session: Session) -> dict[str, int]:
    return {
        "events": sum(1 for _ in session.store.all_events()),
        "accounts": sum(1 for _ in session.store.all_accounts()),
        "schedules": len(session.schedules.pending()),
    }


def put_state(call: Call) -> Reply:
    """The body passed the Scenario schema on its way in; the cross-checks of a scenario file come here. Nothing
    is applied unless every check passes."""
    loader = _loader(call.server.specs)
    problems = loader.problems(call.body)
    if problems:
        raise InvalidRequest("The state is not a valid scenario document.", problems)
    session = call.session
    session.load_state(loader.build(session.scenario.name, call.body))
    return Reply(200, _summary(session))


def take_snapshot(call: Call) -> Reply:
    return Reply(201, call.session.take_snapshot(call.path["name"], call.now).to_json())


def restore_snapshot(call: Call) -> Reply:
    return Reply(200, call.session.restore_snapshot(call.path["name"]).to_json())


def list_snapshots(call: Call) -> Reply:
    return Reply(200, {"snapshots": [s.to_json() for s in call.session.snapshots.all()]})


def get_snapshot(call: Call) -> Reply:
    """The snapshot's state as a scenario document (what restoring it would export)."""
    snapshot = call.session.snapshots.get(call.path["name"])
    base, events, mutable = snapshot.store.base, snapshot.store.events, snapshot.store.mutable
    accounts = {**base.accounts, **mutable["_accounts"]}
    all_events = {**base.events, **events}
    schedules = [plan.remaining() for plan in snapshot.schedules.pending()]
    return Reply(
        200,
        state_document(
            call.session.scenario.description,
            list(all_events.values()),
            list(accounts.values()),
            [plan_to_json(p) for p in schedules],
        ),
    )


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
