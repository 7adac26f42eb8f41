"""Which event of a read-only seed uses an event_conciliation_key: an index built once per seed, off the loop.

`POST /__mock/events` refuses an event_conciliation_key the session already uses (CONTRACT 3, "keys unique").
It used to collect every key of every event of the session first: over a million-event seed that unpacked a
million packed records on the event loop, 7 s per create, every session stalled meanwhile. Here the seed's
keys are indexed once, the first time a create needs them, in a worker thread while the loop goes on serving
(concurrent callers wait for the same build); then a create asks a few table probes. What a session creates
itself is indexed by the session's store (at most --max-events keys); payment and cancellation never change
an instalment's keys, so the seed's index stays true for the events a session changed.

The table: open addressing with linear probing, at most half full, one slot per instalment holding its
record's offset in the seed's buffer + 1 (4 bytes while the buffer is under 4 GiB). Nothing of the key is
kept: a probe reads the record's real keys to confirm, so two keys with equal hashes cost one probe more,
never a wrong answer. The seed is not touched at load: the index costs nothing until a create needs it.
"""

from __future__ import annotations

import asyncio
import weakref
from array import array
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from mock_server.domain.models import Event
from mock_server.state.seed_storage import SeedEvents

_EMPTY = 0  # a free slot; a used one holds the record's offset + 1
_SMALL_OFFSETS = 2**32 - 2  # offsets + 1 below this fit a 4-byte slot

# One worker: builds of several seeds queue rather than share the interpreter with the loop two at a time.
_WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="conciliation-index")


class ConciliationIndex(Protocol):
    def owner(self, conciliation_key: str) -> str | None:
        """The key of the event using `conciliation_key` (lower case, as stored), or None."""


class SeedIndex:
    """The index of a SeedEvents' event_conciliation_keys. Built in two passes: the keys' hashes and offsets
    first (16 bytes a key while building), then the table, sized for them. `hash_of` and `min_size` (a power
    of two) exist for tests: a constant hash makes every key collide."""

    def __init__(self, seed: SeedEvents, hash_of: Callable[[bytes], int] = hash, min_size: int = 8) -> None:
        self._seed = weakref.ref(seed)  # weak: the index is cached for as long as the seed lives, no longer
        self._hash = hash_of
        hashes, offsets = array("q"), array("Q")
        for offset, keys in seed.conciliation_keys():
            for (key,) in keys:
                hashes.append(hash_of(key))
                offsets.append(offset)
        size = min_size
        while size < 2 * len(offsets):
            size *= 2
        kind = "I" if (offsets[-1] if offsets else 0) < _SMALL_OFFSETS else "Q"  # the last is the largest
        slots = array(kind, bytes(array(kind).itemsize * size))
        mask = size - 1
        for key_hash, offset in zip(hashes, offsets, strict=True):
            index = key_hash & mask
            while slots[index] != _EMPTY:
                index = (index + 1) & mask
            slots[index] = offset + 1
        self._slots = slots
        self.count = len(offsets)

    def owner(self, conciliation_key: str) -> str | None:
        key = conciliation_key.encode("utf-8", "surrogatepass")
        slots, seed = self._slots, self._seed()
        assert seed is not None, "asked of a seed nobody holds"
        mask = len(slots) - 1
        index = self._hash(key) & mask
        while (slot := slots[index]) != _EMPTY:
            if key in seed.conciliation_keys_at(slot - 1):
                return seed.key_at(slot - 1)
            index = (index + 1) & mask
        return None

    def nbytes(self) -> int:
        """What the table holds (the seed is the seed's)."""
        return len(self._slots) * self._slots.itemsize


class MappingIndex:
    """The index of any other mapping of events (a test's plain dict): a dict, built whenever asked."""

    def __init__(self, events: Iterable[Event]) -> None:
        self._owners = {i.event_conciliation_key: e.key for e in events for i in e.installments}

    def owner(self, conciliation_key: str) -> str | None:
        return self._owners.get(conciliation_key)


# A seed's index, or the build under way, by id(seed). Written on the event loop (a build's result is stored by
# whichever caller sees it done first), and emptied of a seed by its finalizer, wherever its last holder let go.
_INDEXES: dict[int, SeedIndex | Future[SeedIndex]] = {}


def ready(events: Mapping[str, Event]) -> ConciliationIndex | None:
    """The index of `events` if it can be had at once: a seed's once built, any other mapping's made now.
    None: `await build(events)` first."""
    if not isinstance(events, SeedEvents):
        return MappingIndex(events.values())
    found = _INDEXES.get(id(events))
    if isinstance(found, Future) and found.done() and not found.cancelled() and found.exception() is None:
        found = _INDEXES[id(events)] = found.result()  # built, and every caller that waited for it went away
    return found if isinstance(found, SeedIndex) else None


async def build(events: Mapping[str, Event]) -> None:
    """Build the seed's index in the worker thread, or wait for the build under way (one per seed). Nothing
    to do for another mapping (`ready` makes its index)."""
    if not isinstance(events, SeedEvents) or ready(events) is not None:
        return
    found = _INDEXES.get(id(events))
    if not isinstance(found, Future):
        found = _WORKER.submit(SeedIndex, events)
        _INDEXES[id(events)] = found
        weakref.finalize(events, _INDEXES.pop, id(events), None)
    try:
        # Shielded: a caller that goes away (its client hung up) must not cancel the build others wait for.
        index = await asyncio.shield(asyncio.wrap_future(found))
    except Exception:
        if _INDEXES.get(id(events)) is found:
            del _INDEXES[id(events)]  # a failed build is not kept: the next caller tries again
        raise
    if _INDEXES.get(id(events)) is found:
        _INDEXES[id(events)] = index
