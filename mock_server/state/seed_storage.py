"""A scenario's events as the read-only seed holds them: packed records in one buffer, an Event on demand.

As objects, an event of a big scenario costs about 1.25 kB (tracemalloc, 100k generated events): its three
UUID strings (85 B each), three Decimals (104 B each), two dates, and its list of Installment objects with two
more UUID strings each (570 B for 1.5 instalments). One packed bytes object per event in a dict brought that
to 350 B, but the process still grew by 700 B an event: those small objects were made while the parsed file
was alive, and the holes the file's objects left between them are never given back (pymalloc frees an arena
only when all of it is free). So here an event is a run of bytes in one buffer -- UUIDs as their 36 ASCII
bytes, dates as ordinals, amounts as the exact text of their Decimal, the few words (statuses, amortization
types) as indexes into one table -- found through an open-addressing table of offsets (an array of 8-byte
ints): about 270 B an event, no object per event at all. A lookup unpacks one record into an Event in a few
microseconds; the last RECENT looked up stay unpacked, so the keys a test asks for again cost a dict lookup.

The seed never changes: a session keeps its own changed events beside it (state/store.py), so nothing is packed
after the load. An event this layout cannot hold exactly (a UUID field that is not 36 ASCII characters, a word
table past 65,535 entries, an amount's text past 255 characters) is kept as the Event it is, in its place.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Any, TypeVar, overload

from mock_server.domain.conversions import event_from_scenario
from mock_server.domain.models import CANCELED, EXTRAORDINARY_EVENT, PAID, PENDING, Event, Installment

_T = TypeVar("_T")

# Every record: its whole length, the length of its key, the key's UTF-8 bytes, then its kind.
_RECORD = struct.Struct("<II")
_PACKED, _OBJECT = 0, 1
_KIND = struct.Struct("<B")
_PACKED_KIND = bytes([_PACKED])
# A packed event: security key, investment key, amortization type and status (word indexes), reference, due
# and paid dates (ordinals, 0 for no paid_at), the lengths of the three amounts' texts; then those texts;
# then the instalments, each: event_conciliation_key, installment_key, status and type (word indexes).
_EVENT = struct.Struct("<36s36sHHIIIBBB")
_INSTALMENT = struct.Struct("<36s36sHH")
_CONCILIATION_KEY = struct.Struct(f"<36s{_INSTALMENT.size - 36}x")  # an instalment's first field alone
# An event kept as an object: its index in the list of such events.
_OBJECT_INDEX = struct.Struct("<I")
_UUID_LENGTH = 36
_MAX_WORDS = 65535
_MAX_AMOUNT_TEXT = 255
_EMPTY = 0  # a free slot of the table; a used slot holds the record's offset + 1


class _CannotPack(Exception):
    """The event is kept as an object: the packed layout cannot hold it exactly."""


def _uuid(text: str) -> bytes:
    """A UUID as its 36 ASCII bytes."""
    try:
        packed = text.encode("ascii")
    except UnicodeEncodeError:
        raise _CannotPack from None
    if len(packed) != _UUID_LENGTH:
        raise _CannotPack
    return packed


def _amount_text(value: object) -> bytes:
    """The text of an amount whose Decimal is the one shapes.to_money makes of it: a float through its shortest
    repr (Decimal(repr(0.1)) is 0.1), an int or a Decimal as written. Decimal(text) gives back that Decimal,
    exponent and all."""
    if type(value) is float:
        text = repr(value)
    elif type(value) is int or type(value) is Decimal:
        text = str(value)
    else:
        raise _CannotPack
    if len(text) > _MAX_AMOUNT_TEXT:
        raise _CannotPack
    return text.encode("ascii")


# Every builder starts its word table with these, in this order, so that batches packed apart (by worker
# processes) agree on their indexes and can be joined as they are.
_USUAL_WORDS = (PENDING, PAID, CANCELED, EXTRAORDINARY_EVENT, "early_amortization", "present_amount")
_EXTRAORDINARY_INDEX = _USUAL_WORDS.index(EXTRAORDINARY_EVENT)


@dataclass(frozen=True, slots=True)
class PackedBatch:
    """Records packed by a builder of their own, to be joined to another builder's (`SeedBuilder.join`)."""

    buffer: bytes
    offsets: array[int]
    key_hashes: array[int]
    words: tuple[str, ...]
    has_objects: bool


def _key_at(buffer: bytearray, offset: int) -> bytes:
    """The key bytes of the record at `offset`."""
    start = offset + _RECORD.size
    return bytes(buffer[start : start + _RECORD.unpack_from(buffer, offset)[1]])


def _table_size(entries: int) -> int:
    size = 8
    while size < 2 * entries:
        size *= 2
    return size


class _KeyTable:
    """The seed's key table, filled as records are packed: open addressing, linear probing, at most half full
    (a hit takes 1.5 probes on average), slots holding a record's offset + 1. Filled from the keys' hashes
    taken as they were packed, a slot's hash kept aside meanwhile, so keys are compared only when two hashes are
    equal; and filled while the load goes on, so no pass over a million keys is left for its end."""

    def __init__(self, buffer: bytearray, expected: int) -> None:
        self._buffer = buffer
        self.count = 0
        self._allocate(_table_size(expected))

    def _allocate(self, size: int) -> None:
        self.slots = array("Q", bytes(8 * size))
        self._hashes = array("q", bytes(8 * size))
        self._mask = size - 1

    def insert(self, offset: int, key_hash: int) -> None:
        """ValueError when the key is there already."""
        if 2 * (self.count + 1) > len(self.slots):
            self._grow()
        slots, hashes, mask, buffer = self.slots, self._hashes, self._mask, self._buffer
        index = key_hash & mask
        while slots[index] != _EMPTY:
            if hashes[index] == key_hash and _key_at(buffer, slots[index] - 1) == _key_at(buffer, offset):
                raise ValueError(f"event key {_key_at(buffer, offset).decode()} appears more than once")
            index = (index + 1) & mask
        slots[index] = offset + 1
        hashes[index] = key_hash
        self.count += 1

    def _grow(self) -> None:
        entries = [
            (slot - 1, key_hash) for slot, key_hash in zip(self.slots, self._hashes, strict=True) if slot != _EMPTY
        ]
        self._allocate(2 * len(self.slots))
        self.count = 0
        for offset, key_hash in entries:
            self.insert(offset, key_hash)


class SeedBuilder:
    """Packs events one at a time, at load only (a reader hands them over as it parses), then `build()`s the
    read-only SeedEvents. Keys must be unique: ValueError as soon as one comes again.

    `expected`: about how many events will come (the key table is sized for them and grows past them).
    `indexed=False`: no key table, only each record's offset and key hash, for a batch joined to another
    builder (`batch()`), which puts them in its table (`join`)."""

    def __init__(self, expected: int = 0, indexed: bool = True) -> None:
        self._buffer = bytearray()
        self._objects: list[Event] = []
        self._words: list[str] = list(_USUAL_WORDS)
        self._word_index: dict[str, int] = {word: index for index, word in enumerate(_USUAL_WORDS)}
        self._table = _KeyTable(self._buffer, expected) if indexed else None
        self._offsets = array("Q")  # not indexed: each record's offset, and the hash() of its key bytes
        self._key_hashes = array("q")

    def batch(self) -> PackedBatch:
        """What was packed here, to be joined to another builder (one made with `indexed=False`)."""
        if self._table is not None:
            raise TypeError("an indexed builder builds a seed; a batch to join comes from one with indexed=False")
        return PackedBatch(
            bytes(self._buffer), self._offsets, self._key_hashes, tuple(self._words), bool(self._objects)
        )

    def join(self, batch: PackedBatch) -> bool:
        """Append a batch packed by another builder, when its records mean here what they meant there: its
        words are this builder's first ones, in order, and it holds no event kept as an object (its index
        would point into the other builder's list). False, and nothing appended, otherwise."""
        if self._table is None:
            raise TypeError("batches are joined to the indexed builder that builds the seed")
        if batch.has_objects or tuple(self._words[: len(batch.words)]) != batch.words:
            return False
        base = len(self._buffer)
        self._buffer += batch.buffer
        insert = self._table.insert
        for offset, key_hash in zip(batch.offsets, batch.key_hashes, strict=True):
            insert(base + offset, key_hash)  # a forked worker's hash() is this process's: the same secret
        return True

    def _word(self, word: str) -> int:
        index = self._word_index.get(word)
        if index is None:
            if len(self._words) >= _MAX_WORDS:
                raise _CannotPack
            index = self._word_index[word] = len(self._words)
            self._words.append(sys.intern(word))
        return index

    def _record(self, key: str, body: bytes) -> None:
        encoded = key.encode("utf-8")
        offset = len(self._buffer)
        self._buffer += _RECORD.pack(_RECORD.size + len(encoded) + len(body), len(encoded))
        self._buffer += encoded
        self._buffer += body
        if self._table is None:
            self._offsets.append(offset)
            self._key_hashes.append(hash(encoded))
        else:
            self._table.insert(offset, hash(encoded))

    def _object(self, event: Event) -> None:
        self._record(event.key, _KIND.pack(_OBJECT) + _OBJECT_INDEX.pack(len(self._objects)))
        self._objects.append(event)

    def add(self, event: Event) -> None:
        try:
            amounts = [
                _amount_text(a)
                for a in (event.total_expected_amount, event.total_discount_amount, event.total_paid_amount)
            ]
            body = b"".join(
                (
                    _KIND.pack(_PACKED),
                    _EVENT.pack(
                        _uuid(event.security_key),
                        _uuid(event.investment_key),
                        self._word(event.amortization_type),
                        self._word(event.status),
                        event.reference_date.toordinal(),
                        event.due_date.toordinal(),
                        event.paid_at.toordinal() if event.paid_at is not None else 0,
                        *map(len, amounts),
                    ),
                    *amounts,
                    *(
                        _INSTALMENT.pack(
                            _uuid(i.event_conciliation_key),
                            _uuid(i.installment_key),
                            self._word(i.event_conciliation_status),
                            self._word(i.event_conciliation_type),
                        )
                        for i in event.installments
                    ),
                )
            )
        except _CannotPack:
            self._object(event)
            return
        self._record(event.key, body)

    def add_scenario_event(self, data: dict[str, Any]) -> None:
        """One event of a scenario file, as parsed, that the ScenarioEvent schema and the event's cross-checks
        accepted: packed straight from the data, the same record `add(event_from_scenario(data))` would write,
        without making the Event, its Decimals, dates and Installments first (a third of a big load's time).
        Written out flat: it runs once per event of a million-event file."""
        key = data["extraordinary_event_conciliation_key"].lower()
        word = self._word
        try:
            security = data["security_key"].lower().encode("ascii")
            investment = data["investment_key"].lower().encode("ascii")
            expected = _amount_text(data["total_expected_amount"])
            discount = _amount_text(data.get("total_discount_amount", 0))
            paid = _amount_text(data.get("total_paid_amount", 0))
            if len(security) != _UUID_LENGTH or len(investment) != _UUID_LENGTH:
                raise _CannotPack
            own = word(data.get("status", PENDING))
            paid_at = data.get("paid_at")
            parts = [
                _PACKED_KIND,
                _EVENT.pack(
                    security,
                    investment,
                    word(data["amortization_type"]),
                    own,
                    date.fromisoformat(data["reference_date"]).toordinal(),
                    date.fromisoformat(data["due_date"]).toordinal(),
                    date.fromisoformat(paid_at).toordinal() if paid_at else 0,
                    len(expected),
                    len(discount),
                    len(paid),
                ),
                expected,
                discount,
                paid,
            ]
            for instalment in data["event_conciliation_list"]:
                conciliation = instalment["event_conciliation_key"].lower().encode("ascii")
                installment = instalment["installment_key"].lower().encode("ascii")
                if len(conciliation) != _UUID_LENGTH or len(installment) != _UUID_LENGTH:
                    raise _CannotPack
                status = instalment.get("event_conciliation_status")
                parts.append(
                    _INSTALMENT.pack(
                        conciliation, installment, own if status is None else word(status), _EXTRAORDINARY_INDEX
                    )
                )
        except (_CannotPack, UnicodeEncodeError):
            self._object(event_from_scenario(data, key))
            return
        self._record(key, b"".join(parts))

    def build(self) -> SeedEvents:
        if self._table is None:
            raise TypeError("a builder without a key table packs batches to join, not a seed")
        return SeedEvents._packed(self._buffer, self._objects, self._words, self._table.count, self._table.slots)


class SeedEvents(Mapping[str, Event]):
    """Read-only mapping event key -> Event, in the order the events were given; keys must be unique."""

    __slots__ = ("__weakref__", "_buffer", "_count", "_objects", "_recent", "_slots", "_words")

    RECENT = 4096

    def __init__(self, events: Iterable[Event] = ()) -> None:
        builder = SeedBuilder()
        for event in events:  # one at a time: a caller may hand them over as it parses
            builder.add(event)
        built = builder.build()
        self._adopt(built._buffer, built._objects, built._words, built._count, built._slots)

    @classmethod
    def _packed(
        cls, buffer: bytearray, objects: list[Event], words: list[str], count: int, slots: array[int]
    ) -> SeedEvents:
        seed = cls.__new__(cls)
        seed._adopt(buffer, objects, words, count, slots)
        return seed

    def _adopt(self, buffer: bytearray, objects: list[Event], words: list[str], count: int, slots: array[int]) -> None:
        self._buffer = buffer
        self._objects = objects
        self._words = words
        self._count = count
        self._slots = slots
        self._recent: dict[str, Event] = {}

    # --- reading --------------------------------------------------------------------------------

    def _find(self, key: bytes) -> int:
        """The offset of the key's record, or -1."""
        slots, buffer, mask = self._slots, self._buffer, len(self._slots) - 1
        index = hash(key) & mask
        start = _RECORD.size
        end = start + len(key)
        while True:
            slot = slots[index]
            if slot == _EMPTY:
                return -1
            offset = slot - 1
            if buffer[offset + start : offset + end] == key and _RECORD.unpack_from(buffer, offset)[1] == len(key):
                return offset
            index = (index + 1) & mask

    def _unpack(self, key: str, offset: int) -> Event:
        buffer = self._buffer
        length, key_length = _RECORD.unpack_from(buffer, offset)
        at = offset + _RECORD.size + key_length
        if buffer[at] == _OBJECT:
            index: int = _OBJECT_INDEX.unpack_from(buffer, at + 1)[0]
            return self._objects[index]
        at += 1
        security, investment, amortization, status, reference, due, paid, n1, n2, n3 = _EVENT.unpack_from(buffer, at)
        at += _EVENT.size
        expected = Decimal(buffer[at : at + n1].decode("ascii"))
        at += n1
        discount = Decimal(buffer[at : at + n2].decode("ascii"))
        at += n2
        paid_amount = Decimal(buffer[at : at + n3].decode("ascii"))
        at += n3
        words = self._words
        # Positional, in the order of Event's fields: keywords cost 0.4 us more per lookup.
        return Event(
            key,
            security.decode("ascii"),
            investment.decode("ascii"),
            words[amortization],
            expected,
            discount,
            paid_amount,
            words[status],
            date.fromordinal(reference),
            date.fromordinal(due),
            date.fromordinal(paid) if paid else None,
            [
                Installment(conciliation.decode("ascii"), instalment.decode("ascii"), words[own], words[kind])
                for conciliation, instalment, own, kind in _INSTALMENT.iter_unpack(buffer[at : offset + length])
            ],
        )

    def _records(self) -> Iterator[tuple[str, int]]:
        """(key, offset) of every record, in order."""
        buffer, offset, end = self._buffer, 0, len(self._buffer)
        while offset < end:
            length, key_length = _RECORD.unpack_from(buffer, offset)
            start = offset + _RECORD.size
            yield buffer[start : start + key_length].decode("utf-8"), offset
            offset += length

    def _instalment_keys(self, buffer: memoryview | bytearray, offset: int) -> Iterable[tuple[bytes]]:
        """The event_conciliation_keys (UTF-8) of the record at `offset`, each in a 1-tuple."""
        length, key_length = _RECORD.unpack_from(buffer, offset)
        at = offset + _RECORD.size + key_length
        if buffer[at] == _OBJECT:
            index: int = _OBJECT_INDEX.unpack_from(buffer, at + 1)[0]
            return [
                (i.event_conciliation_key.encode("utf-8", "surrogatepass"),) for i in self._objects[index].installments
            ]
        at += 1 + _EVENT.size  # the amounts' texts follow; their lengths end the event's fields
        at += buffer[at - 3] + buffer[at - 2] + buffer[at - 1]
        return _CONCILIATION_KEY.iter_unpack(buffer[at : offset + length])

    def conciliation_keys(self) -> Iterator[tuple[int, Iterable[tuple[bytes]]]]:
        """Every record's offset and its event_conciliation_keys (UTF-8), each key in a 1-tuple (as
        struct.iter_unpack reads them out of the buffer: one object a key), in order; no Event is made. What
        state/conciliation_index.py builds its index of: a million events' keys are read in half a second."""
        view = memoryview(self._buffer)
        try:
            offset, end = 0, len(view)
            while offset < end:
                yield offset, self._instalment_keys(view, offset)
                offset += _RECORD.unpack_from(view, offset)[0]
        finally:
            view.release()

    def conciliation_keys_at(self, offset: int) -> list[bytes]:
        """The event_conciliation_keys (UTF-8) of the record at `offset` (one `conciliation_keys` gave)."""
        return [key for (key,) in self._instalment_keys(self._buffer, offset)]

    def key_at(self, offset: int) -> str:
        """The event key of the record at `offset` (one `conciliation_keys` gave)."""
        return _key_at(self._buffer, offset).decode("utf-8")

    @overload
    def get(self, key: str, /) -> Event | None: ...
    @overload
    def get(self, key: str, default: Event, /) -> Event: ...
    @overload
    def get(self, key: str, default: _T, /) -> Event | _T: ...
    def get(self, key: str, default: object = None, /) -> object:
        event = self._recent.get(key)
        if event is not None:
            return event
        try:
            offset = self._find(key.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate: no key of a scenario has one
            return default
        if offset < 0:
            return default
        if len(self._recent) >= self.RECENT:
            self._recent.clear()  # bounded, and cheaper than tracking which one is oldest
        event = self._recent[key] = self._unpack(key, offset)
        return event

    def __getitem__(self, key: str) -> Event:
        event = self.get(key)
        if event is None:
            raise KeyError(key)
        return event

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            return key in self._recent or self._find(key.encode("utf-8")) >= 0
        except UnicodeEncodeError:
            return False

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._records())

    def __len__(self) -> int:
        return self._count

    def _pairs(self) -> Iterator[tuple[str, Event]]:
        for key, offset in self._records():
            yield key, self._unpack(key, offset)

    def items(self) -> ItemsView[str, Event]:
        return _Items(self)

    def values(self) -> ValuesView[Event]:
        return _Values(self)

    def __repr__(self) -> str:
        return f"SeedEvents({len(self)} events)"


class _Items(ItemsView[str, Event]):
    """Walks the buffer once (the generic view would look every key up again)."""

    _mapping: SeedEvents

    def __iter__(self) -> Iterator[tuple[str, Event]]:
        return self._mapping._pairs()


class _Values(ValuesView[Event]):
    _mapping: SeedEvents

    def __iter__(self) -> Iterator[Event]:
        return (event for _, event in self._mapping._pairs())
