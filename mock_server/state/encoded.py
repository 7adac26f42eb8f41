"""The public answers of events, encoded once per version of the event and kept for the lookups that follow.

An event is never changed in place: paying or canceling it replaces the Event (domain/events.py builds a new
one, state/store.py puts it in the old one's place), the seed's events are read-only, and a created event is a
new object. So an Event object *is* one version of its event: the bytes encoded for it hold for as long as it
is the one a store answers, and once replaced it is never asked for again. An entry keeps its Event, so the
object cannot be freed and its id given to another while the entry lasts.

Server-wide (the seed's events are shared by every session that uses the scenario) and bounded: beyond
MAX_ENTRIES the whole table is dropped, cheaper than tracking which entry is oldest.
"""

from __future__ import annotations

from mock_server.domain.conversions import event_to_public
from mock_server.domain.models import Event
from mock_server.wire.encoding import encode_json

MAX_ENTRIES = 1024  # about 1 kB each


class EncodedEvents:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._by_id: dict[int, tuple[Event, bytes]] = {}

    def public_json(self, event: Event) -> bytes:
        """The event in the shape of interface 2.1, as JSON bytes."""
        found = self._by_id.get(id(event))
        if found is not None and found[0] is event:
            return found[1]
        encoded = encode_json(event_to_public(event))
        if len(self._by_id) >= self.max_entries:
            self._by_id.clear()
        self._by_id[id(event)] = (event, encoded)
        return encoded

    def __len__(self) -> int:
        return len(self._by_id)
