"""The session registry's routes (/__mock/sessions): list, create explicitly, delete and create in one call, show,
delete.

They act on the registry through its one door (state/session_door.py, whose refusals the one error renderer
words), never on the calling session (SessionUse.NONE): listing or deleting makes no session.
"""

from __future__ import annotations

from typing import Any

from mock_server.http.handling import Call, Handler, Reply, SessionUse
from mock_server.state.session_door import SessionDoor
from mock_server.state.sessions import Session, wall_time


def session_info(session: Session) -> dict[str, Any]:
    return {
        "name": session.name,
        "scenario": session.scenario.name,
        "explicit": session.explicit,
        "created_at": wall_time(session.created_at),
        "last_used": wall_time(session.last_used),
        "journal_size": len(session.journal),
        "in_flight": session.in_flight,
        "state_bytes": session.meter.used,
    }


def list_sessions(call: Call) -> Reply:
    sessions = call.server.sessions
    return Reply(
        200,
        {
            "max_sessions": sessions.max_sessions,
            "max_session_bytes": sessions.bounds.max_session_bytes,
            "evictions": sessions.evictions,
            "sessions": [session_info(s) for s in SessionDoor(sessions).all()],
            "evicted": [{"name": t.name, "evicted_at": wall_time(t.evicted_at)} for t in sessions.tombstones()],
        },
    )


def create_session(call: Call) -> Reply:
    name = call.body["name"]
    body = call.body
    session = SessionDoor(call.server.sessions).create(
        name, body.get("scenario"), body.get("seed"), body.get("replacing")
    )
    return Reply(201, session_info(session), headers={"Location": f"/__mock/sessions/{name}"})


def change_sessions(call: Call) -> Reply:
    body = call.body
    create = [(item["name"], item.get("scenario"), item.get("seed")) for item in body.get("create", ())]
    made, deleted = SessionDoor(call.server.sessions).change(create, body.get("delete", ()))
    return Reply(200, {"created": [session_info(session) for session in made], "deleted": deleted})


def get_session(call: Call) -> Reply:
    return Reply(200, session_info(SessionDoor(call.server.sessions).find(call.path["name"])))


def delete_session(call: Call) -> Reply:
    SessionDoor(call.server.sessions).delete(call.path["name"])
    return Reply(204)


HANDLERS: dict[str, Handler] = {
    "mockListSessions": list_sessions,
    "mockCreateSession": create_session,
    "mockChangeSessions": change_sessions,
    "mockGetSession": get_session,
    "mockDeleteSession": delete_session,
}

# How each admin operation uses the calling session (SessionUse.OPEN unless listed).
SESSION_USE: dict[str, SessionUse] = {
    **dict.fromkeys(HANDLERS, SessionUse.NONE),
    "mockHealth": SessionUse.NONE,  # health never makes a session: polling it cannot evict anything
    "mockMetrics": SessionUse.NONE,  # a scrape reads the whole server: it makes no session either
    "mockAdminSpec": SessionUse.NONE,
    "publicSpecYaml": SessionUse.NONE,
    "publicSpecJson": SessionUse.NONE,
    "mockDashboard": SessionUse.NONE,  # pages and their assets are token-free: they must make no session
    "mockDocs": SessionUse.NONE,
    "mockAsset": SessionUse.NONE,
    "mockReset": SessionUse.CREATE,  # a reset creates its session explicitly (or brings an evicted one back)
}
# Operations that take a body but change nothing: a session that only made these calls has nothing to lose, and
# starts afresh when it was evicted (every other call with a method but GET and HEAD that answers 2xx is a write
# the session acknowledged: its eviction leaves a record, and later calls answer 410).
READS_ONLY = frozenset({"mockVerify", "mockEvaluateLimit"})
