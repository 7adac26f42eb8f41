"""Scheduled transitions of one session, for clients that poll: pay or cancel an event after N lookups of it,
or once the session clock reaches an instant. The rules of when one is due live here; applying one is the
session's (it owns the store).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mock_server.domain.clock import parse_instant, timestamp
from mock_server.domain.conversions import money_to_json, uuid_text
from mock_server.domain.errors import Detail
from mock_server.domain.events import to_money
from mock_server.domain.models import ScheduledTransition
from mock_server.state.footprint import LIST_ENTRY, footprint

PENDING, APPLIED, FAILED = "pending", "applied", "failed"
ACTIONS = ("pay", "cancel")


def plan_problems(data: dict[str, Any]) -> list[Detail]:
    """What the schema cannot say about a schema-valid schedule: exactly one trigger, an amount only to pay,
    an instant the mock can compute with."""
    problems: list[Detail] = []
    triggers = [name for name in ("after_lookups", "at") if data.get(name) is not None]
    if not triggers:
        problems.append(Detail(("after_lookups",), "give after_lookups or at: when the transition applies"))
    elif len(triggers) == 2:
        problems.append(Detail(("at",), "cannot be given with after_lookups: give one trigger"))
    if data.get("amount") is not None and data.get("action") != "pay":
        problems.append(Detail(("amount",), "is for action pay only"))
    if isinstance(data.get("at"), str):
        try:
            parse_instant(data["at"])
        except ValueError as exc:
            problems.append(Detail(("at",), str(exc)))
    return problems


def plan_from_json(data: dict[str, Any], key: str) -> ScheduledTransition:
    """A schema-valid schedule without plan_problems -> the record."""
    amount = data.get("amount")
    at = data.get("at")
    return ScheduledTransition(
        key=uuid_text(key),
        action=data["action"],
        amount=to_money(amount) if amount is not None else None,
        after_lookups=data.get("after_lookups"),
        at=parse_instant(at) if at is not None else None,
    )


def plan_to_json(plan: ScheduledTransition) -> dict[str, Any]:
    """As a scenario file writes it (only the fields that are set)."""
    data: dict[str, Any] = {"key": plan.key, "action": plan.action}
    if plan.amount is not None:
        data["amount"] = money_to_json(plan.amount)
    if plan.after_lookups is not None:
        data["after_lookups"] = plan.after_lookups
    if plan.at is not None:
        data["at"] = timestamp(plan.at)
    return data


@dataclass(slots=True)
class Schedule:
    schedule_id: str
    plan: ScheduledTransition
    lookups: int = 0  # lookups of the event counted since it was made
    state: str = PENDING
    outcome: str | None = None  # why it failed (the event's state no longer allowed it)

    def to_json(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "schedule_id": self.schedule_id,
            "key": plan.key,
            "action": plan.action,
            "amount": money_to_json(plan.amount) if plan.amount is not None else None,
            "after_lookups": plan.after_lookups,
            "at": timestamp(plan.at) if plan.at is not None else None,
            "lookups": self.lookups,
            "state": self.state,
            "outcome": self.outcome,
        }

    def remaining(self) -> ScheduledTransition:
        """The plan as it stands: what a scenario file must say to pick up where this one is."""
        plan = self.plan
        if plan.after_lookups is None:
            return plan
        return ScheduledTransition(plan.key, plan.action, plan.amount, plan.after_lookups - self.lookups, None)


class Schedules:
    """The session's schedules, in the order they were made; applied and failed ones stay listed."""

    def __init__(self) -> None:
        self._schedules: list[Schedule] = []
        self._count = 0
        # Pending schedules with an `at`: most sessions have none, and every call asks (state/sessions.apply_due).
        self.timed_pending = 0
        # Pending schedules counted in lookups: every lookup asks (state/sessions.count_lookup), nearly always of none.
        self.lookups_pending = 0
        self.held_bytes = 0  # their footprint (state/footprint.py), counted against the session's bound

    @property
    def count(self) -> int:
        """Schedules made since the last clear: the next one's id is schedule-{count + 1}."""
        return self._count

    def restored(self, count: int) -> None:
        """After the schedules of a state file were added back as they were: the count of ids goes on from
        `count`, and the timed ones still pending are those of the ones added."""
        self._count = count
        self.timed_pending = sum(1 for s in self._schedules if s.state == PENDING and s.plan.at is not None)
        self.lookups_pending = sum(
            1 for s in self._schedules if s.state == PENDING and s.plan.after_lookups is not None
        )

    @staticmethod
    def cost(plan: ScheduledTransition) -> int:
        """The bytes a schedule of `plan` holds (its id's text is as long as the longest a count writes)."""
        return footprint(Schedule("schedule-" + "0" * 19, plan)) + LIST_ENTRY

    def add(self, plan: ScheduledTransition) -> Schedule:
        self._count += 1
        schedule = Schedule(f"schedule-{self._count}", plan)
        self._schedules.append(schedule)
        if plan.at is not None:
            self.timed_pending += 1
        if plan.after_lookups is not None:
            self.lookups_pending += 1
        self.held_bytes += self.cost(plan)
        return schedule

    def load(self, plans: tuple[ScheduledTransition, ...]) -> None:
        """Start over from a scenario's schedules."""
        self.clear()
        for plan in plans:
            self.add(plan)

    def due_by(self, now: datetime) -> list[Schedule]:
        """The pending schedules whose instant has come, earliest first."""
        if not self.timed_pending:
            return []
        due = [s for s in self._schedules if s.state == PENDING and s.plan.at is not None and s.plan.at <= now]
        return sorted(due, key=lambda s: s.plan.at or now)

    def looked_up(self, key: str) -> list[Schedule]:
        """Count one lookup of the event `key` in every pending lookup schedule of it; those that reach their
        count are due."""
        due = []
        for schedule in self._schedules:
            plan = schedule.plan
            if schedule.state == PENDING and plan.after_lookups is not None and plan.key == key:
                schedule.lookups += 1
                if schedule.lookups >= plan.after_lookups:
                    due.append(schedule)
        return due

    def settle(self, schedule: Schedule, failure: str | None) -> None:
        """Mark a due schedule applied, or failed with the reason."""
        schedule.state, schedule.outcome = (APPLIED, None) if failure is None else (FAILED, failure)
        if schedule.plan.at is not None:
            self.timed_pending -= 1
        if schedule.plan.after_lookups is not None:
            self.lookups_pending -= 1

    def __len__(self) -> int:
        """How many schedules are listed, settled or not: none, in nearly every session."""
        return len(self._schedules)

    def pending(self) -> list[Schedule]:
        return [s for s in self._schedules if s.state == PENDING]

    def all(self) -> list[Schedule]:
        return list(self._schedules)

    def copy(self) -> Schedules:
        """An independent copy (a snapshot's)."""
        other = Schedules()
        other._schedules = [replace(s) for s in self._schedules]
        other._count, other.timed_pending, other.held_bytes = self._count, self.timed_pending, self.held_bytes
        other.lookups_pending = self.lookups_pending
        return other

    def clear(self) -> None:
        self._schedules.clear()
        self._count = 0
        self.timed_pending = 0
        self.lookups_pending = 0
        self.held_bytes = 0
