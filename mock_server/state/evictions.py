"""What is left of the evicted sessions that acknowledged a write: a record that makes a later call answer 410
`session_evicted` instead of starting afresh, which would read the acknowledged writes as never made (404).

The records are bounded by time and by bytes, never by a count a client could flush: a record is kept until its
session is made again or deleted, or for RECORD_SECONDS; while the records hold RECORD_BYTES, no session that would
need one is evicted (the registry refuses to make a session instead, 429): the server never forgets one to make
room for another. Before, the newest 4096 were kept, and 3.9 s of bodyless resets turned a test's session into a
silent 404.
"""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

RECORD_SECONDS = 24 * 3600.0
RECORD_BYTES = 16 * 1024**2


@dataclass(frozen=True, slots=True)
class Tombstone:
    """The record of one evicted session: its name, when (time.time()) and under which --max-sessions."""

    name: str
    evicted_at: float
    max_sessions: int


# A record besides its name's text: the Tombstone, its float, and its node in the ordered dict (measured with
# tracemalloc: about 230 bytes; counted high).
_RECORD_OVERHEAD = sys.getsizeof(Tombstone("", 0.0, 0)) + sys.getsizeof(0.0) + 200


def record_bytes(name: str) -> int:
    return _RECORD_OVERHEAD + sys.getsizeof(name)


class EvictionRecords:
    """The records, oldest first; each expires RECORD_SECONDS after its eviction."""

    def __init__(
        self,
        keep_seconds: float = RECORD_SECONDS,
        max_bytes: int = RECORD_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.keep_seconds = keep_seconds
        self.max_bytes = max_bytes
        self._clock = clock
        self._records: OrderedDict[str, Tombstone] = OrderedDict()
        self.bytes = 0

    def _expire(self) -> None:
        """Forget the records older than keep_seconds (the oldest are first: only those are looked at)."""
        oldest_kept = self._clock() - self.keep_seconds
        while self._records:
            name, record = next(iter(self._records.items()))
            if record.evicted_at > oldest_kept:
                return
            self.pop(name)

    def has_room_for(self, name: str) -> bool:
        self._expire()
        return self.bytes + record_bytes(name) <= self.max_bytes

    def add(self, record: Tombstone) -> None:
        """Keep `record` (the caller asked has_room_for first: the bound is never passed to drop another)."""
        self.pop(record.name)
        self._records[record.name] = record
        self.bytes += record_bytes(record.name)

    def get(self, name: str) -> Tombstone | None:
        self._expire()
        return self._records.get(name)

    def pop(self, name: str) -> Tombstone | None:
        record = self._records.pop(name, None)
        if record is not None:
            self.bytes -= record_bytes(name)
        return record

    def all(self) -> list[Tombstone]:
        self._expire()
        return list(self._records.values())

    def clear(self) -> None:
        self._records.clear()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._records)
