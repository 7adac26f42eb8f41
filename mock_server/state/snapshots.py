"""Named copies of one session's state (store and schedules), taken and restored on demand; bounded."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mock_server.domain.clock import timestamp
from mock_server.domain.errors import SnapshotLimitReached, SnapshotNotFound
from mock_server.state.schedules import Schedules
from mock_server.state.store import StoreCopy

MAX_SNAPSHOTS = 16  # per session: each holds a copy of every account the session changed


@dataclass(frozen=True, slots=True)
class Snapshot:
    name: str
    taken_at: datetime  # on the session clock
    store: StoreCopy
    schedules: Schedules
    events: int
    accounts: int
    held_bytes: int = 0  # what it holds, counted against the session's bound: its store's share and schedules

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "taken_at": timestamp(self.taken_at),
            "events": self.events,
            "accounts": self.accounts,
            "schedules": len(self.schedules.pending()),
        }


class Snapshots:
    def __init__(self, limit: int = MAX_SNAPSHOTS) -> None:
        self._snapshots: dict[str, Snapshot] = {}
        self._limit = limit
        self.held_bytes = 0

    def check_room(self, name: str) -> None:
        """409 when a new snapshot `name` would pass the limit (a snapshot of the same name is replaced)."""
        if name not in self._snapshots and len(self._snapshots) >= self._limit:
            raise SnapshotLimitReached(
                f"The session keeps at most {self._limit} snapshots: delete one (DELETE /__mock/snapshots/NAME)."
            )

    def held_by(self, name: str) -> int:
        """The bytes the snapshot `name` holds, 0 when there is none."""
        found = self._snapshots.get(name)
        return found.held_bytes if found is not None else 0

    def keep(self, snapshot: Snapshot) -> None:
        """Keep it under its name (replacing one of the same name); 409 beyond the limit."""
        self.check_room(snapshot.name)
        self.held_bytes += snapshot.held_bytes - self.held_by(snapshot.name)
        self._snapshots[snapshot.name] = snapshot

    def get(self, name: str) -> Snapshot:
        try:
            return self._snapshots[name]
        except KeyError:
            raise SnapshotNotFound(f"No snapshot named {name!r} in this session.") from None

    def delete(self, name: str) -> None:
        self.held_bytes -= self.get(name).held_bytes
        del self._snapshots[name]

    def all(self) -> list[Snapshot]:
        return list(self._snapshots.values())
