"""Admin handlers for scheduled transitions and for moving a frozen clock (issue 13, 4)."""

from __future__ import annotations

from datetime import datetime

from mock_server.domain.clock import local_date, timestamp
from mock_server.domain.errors import ClockNotFrozen, Detail, InvalidRequest
from mock_server.domain.events import cancel, pay
from mock_server.domain.models import ScheduledTransition
from mock_server.http.handling import Call, Handler, Reply
from mock_server.state.schedules import plan_from_json, plan_problems
from mock_server.state.sessions import Session


def _check_now(session: Session, plan: ScheduledTransition, now: datetime) -> None:
    """The transition must be possible when scheduled (404 for an unknown event, 409 for a terminal one, 400 for
    an amount over the balance); whether it still is when it applies is judged then."""
    event = session.store.event(plan.key)
    if plan.action == "pay":
        pay(event, plan.amount, local_date(now))
    else:
        cancel(event)


def schedule_transition(call: Call) -> Reply:
    body = call.body
    problems = plan_problems(body)
    if problems:
        raise InvalidRequest("The schedule is inconsistent.", problems)
    plan = plan_from_json(body, call.path["extraordinary_event_conciliation_key"])
    session = call.session
    _check_now(session, plan, call.now)
    schedule = session.add_schedule(plan)  # 409 past --max-schedules or the session's bytes
    session.apply_due(call.now)  # an instant already reached applies at once
    return Reply(201, schedule.to_json())


def list_schedules(call: Call) -> Reply:
    return Reply(200, {"schedules": [s.to_json() for s in call.session.schedules.all()]})


def clear_schedules(call: Call) -> Reply:
    call.session.schedules.clear()
    return Reply(204)


def advance_clock(call: Call) -> Reply:
    clock = call.session.clock
    if not clock.frozen:
        raise ClockNotFrozen("The session clock runs at real time: freeze it (PUT /__mock/clock) to move it.")
    try:
        now = clock.advance(call.body["seconds"])
    except ValueError as exc:
        raise InvalidRequest("The request is invalid.", [Detail(("seconds",), str(exc))]) from None
    turn = call.turn
    if turn is not None and turn.events is not None:  # before the schedules it brings due: their events follow
        attributes = {"pix_mock.clock.seconds": float(call.body["seconds"]), "pix_mock.clock.now": timestamp(now)}
        turn.note("pix_mock.clock.advanced", attributes)
    call.session.apply_due(now)
    return Reply(200, {"now": timestamp(now), "frozen": True})


HANDLERS: dict[str, Handler] = {
    "mockScheduleTransition": schedule_transition,
    "mockListSchedules": list_schedules,
    "mockClearSchedules": clear_schedules,
    "mockAdvanceClock": advance_clock,
}
