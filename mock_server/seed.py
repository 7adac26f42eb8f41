"""A scenario's events as the read-only seed holds them: one packed record per event, an Event on demand.

As objects, an event of a big scenario costs about 1.25 kB (tracemalloc, 100k generated events): its three
UUID strings (85 B each), three Decimals (104 B each), two dates, and its list of Installment objects with two
more UUID strings each (570 B for 1.5 instalments). Packed, the same event is one bytes object of about
240 B -- UUIDs as their 36 ASCII bytes, dates as ordinals, amounts as the exact text of their Decimal, the few
words (statuses, amortization types) as indexes into one table -- under an int key (the UUID's 128 bits):
about a quarter of the memory. A lookup unpacks one record into a fresh Event in about 3 microseconds.

The seed never changes: a session keeps its own changed events beside it (store.py), so nothing is ever
packed again after the load. An event this layout cannot hold exactly (a key that is not a canonical UUID,
another key that is not 36 ASCII characters, a word table past 65,535 entries, an amount's text past 255
characters) is kept as the Event it is.
"""

from __future__ import annotations

import re
import struct
import sys
from collections.abc import ItemsView, Iterable, Iterator, Mapping, ValuesView
from datetime import date
from decimal import Decimal
from typing import TypeVar, overload

from .models import Event, Installment

# security key, investment key, amortization type and status (word indexes), reference, due and paid dates
# (ordinals, 0 for no paid_at), then the lengths of the three amounts' texts. The amounts' text follows,
# then the instalments, each: event_conciliation_key, installment_key, status and type (word indexes).
_HEAD = struct.Struct("<36s36sHHIIIBBB")
_INSTALMENT = struct.Struct("<36s36sHH")
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_UUID_LENGTH = 36
_MAX_WORDS = 65535
_MAX_AMOUNT_TEXT = 255

_T = TypeVar("_T")
Key = int | str  # the UUID's 128 bits, or the text of a key that is not a canonical UUID


def _key(text: str) -> Key:
    return int(text.replace("-", ""), 16) if _CANONICAL_UUID.fullmatch(text) else text


def _uuid_from_int(value: int) -> str:
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _text_of(key: Key) -> str:
    return _uuid_from_int(key) if isinstance(key, int) else key


class _CannotPack(Exception):
    """The event is kept as an object: the packed layout cannot hold it exactly."""


class SeedEvents(Mapping[str, Event]):
    """Read-only mapping event key -> Event over packed records, built once from the scenario's events.

    The events last unpacked are kept (up to RECENT of them), so the few a test run asks for again and again
    cost a dict lookup, as before packing. They are shared, as the seed's Event objects always were: events
    are never changed in place (events.py makes new ones), so the seed stays as loaded."""

    RECENT = 4096

    __slots__ = ("_recent", "_records", "_word_index", "_words")

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._records: dict[Key, bytes | Event] = {}
        self._words: list[str] = []
        self._word_index: dict[str, int] = {}
        for event in events:
            key = _key(event.key)
            try:
                self._records[key] = self._pack(event)
            except _CannotPack:
                self._records[key] = event
        self._word_index = {}  # only needed while packing
        self._recent: dict[str, Event] = {}

    # --- packing (at load only) -----------------------------------------------------------------

    def _word(self, word: str) -> int:
        index = self._word_index.get(word)
        if index is None:
            if len(self._words) >= _MAX_WORDS:
                raise _CannotPack
            index = self._word_index[word] = len(self._words)
            self._words.append(sys.intern(word))
        return index

    @staticmethod
    def _uuid_bytes(text: str) -> bytes:
        """A UUID's 36 characters as they are: unpacked by one decode, six times faster than from 16 bytes."""
        try:
            packed = text.encode("ascii")
        except UnicodeEncodeError:
            raise _CannotPack from None
        if len(packed) != _UUID_LENGTH:
            raise _CannotPack
        return packed

    def _pack(self, event: Event) -> bytes:
        if not isinstance(event.key, str) or not _CANONICAL_UUID.fullmatch(event.key):
            raise _CannotPack
        amounts = [
            str(amount).encode("ascii")
            for amount in (event.total_expected_amount, event.total_discount_amount, event.total_paid_amount)
        ]
        if any(len(text) > _MAX_AMOUNT_TEXT for text in amounts):
            raise _CannotPack
        head = _HEAD.pack(
            self._uuid_bytes(event.security_key),
            self._uuid_bytes(event.investment_key),
            self._word(event.amortization_type),
            self._word(event.status),
            event.reference_date.toordinal(),
            event.due_date.toordinal(),
            event.paid_at.toordinal() if event.paid_at is not None else 0,
            *map(len, amounts),
        )
        instalments = [
            _INSTALMENT.pack(
                self._uuid_bytes(i.event_conciliation_key),
                self._uuid_bytes(i.installment_key),
                self._word(i.event_conciliation_status),
                self._word(i.event_conciliation_type),
            )
            for i in event.installments
        ]
        return b"".join((head, *amounts, *instalments))

    # --- reading --------------------------------------------------------------------------------

    def _unpack(self, key: str, record: bytes | Event) -> Event:
        if not isinstance(record, bytes):
            return record
        security, investment, amortization, status, reference, due, paid, n1, n2, n3 = _HEAD.unpack_from(record)
        at = _HEAD.size
        expected = Decimal(record[at : at + n1].decode("ascii"))
        at += n1
        discount = Decimal(record[at : at + n2].decode("ascii"))
        at += n2
        paid_amount = Decimal(record[at : at + n3].decode("ascii"))
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
                for conciliation, instalment, own, kind in _INSTALMENT.iter_unpack(record[at:])
            ],
        )

    def __getitem__(self, key: str) -> Event:
        event = self.get(key)
        if event is None:
            raise KeyError(key)
        return event

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
        record = self._records.get(_key(key))
        if record is None:
            return default
        if len(self._recent) >= self.RECENT:
            self._recent.clear()  # bounded, and cheaper than tracking which one is oldest
        event = self._recent[key] = self._unpack(key, record)
        return event

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _key(key) in self._records

    def __iter__(self) -> Iterator[str]:
        return map(_text_of, self._records)

    def __len__(self) -> int:
        return len(self._records)

    def _pairs(self) -> Iterator[tuple[str, Event]]:
        for key, record in self._records.items():
            text = _text_of(key)
            yield text, self._unpack(text, record)

    def items(self) -> ItemsView[str, Event]:
        return _Items(self)

    def values(self) -> ValuesView[Event]:
        return _Values(self)

    def __repr__(self) -> str:
        return f"SeedEvents({len(self)} events)"


class _Items(ItemsView[str, Event]):
    """Walks the records once (the generic view would turn each key to text and back)."""

    _mapping: SeedEvents

    def __iter__(self) -> Iterator[tuple[str, Event]]:
        return self._mapping._pairs()


class _Values(ValuesView[Event]):
    _mapping: SeedEvents

    def __iter__(self) -> Iterator[Event]:
        return (event for _, event in self._mapping._pairs())
