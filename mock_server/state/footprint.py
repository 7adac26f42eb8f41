"""What a record costs in memory: the bytes a session is held to (`--max-session-bytes`, state/bounds.py).

An estimate from `sys.getsizeof` over every object a record reaches, walked as a tree: a part reached twice is
counted twice, and so a record's footprint is the sum of its parts' (what a session adds or takes away keeps its
total exact). Objects shared with other records (a status word, the default outcomes) are counted in each: the
estimate errs high. Containers inside a record (the dict of a recipient list) grow in steps: adding an item
counts its slot as an `ENTRY` of that container.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from datetime import date, datetime
from decimal import Decimal
from operator import attrgetter
from typing import Any

from mock_server.domain import models
from mock_server.domain.models import Account, Event, Limits, LimitWindow, Proposal, Scenario

_LEAVES = (str, int, float, Decimal, date, datetime, bytes)
# The status words every record shares (interned: event_from_scenario, the domain's constants): held once.
_SHARED_WORDS = frozenset(
    id(sys.intern(word))
    for word in (
        models.PENDING,
        models.PAID,
        models.CANCELED,
        models.EXTRAORDINARY_EVENT,
        models.AUTOMATICALLY_APPROVED,
        models.AWAITING_NOTIFICATION,
        models.NOT_APPLICABLE,
        models.APPLIED,
        models.CREATED,
        models.ACCOUNT_TARGET,
        models.RECIPIENT_LIST_TARGET,
    )
)
# Objects that cost a record nothing: the singletons, and the words every record shares.
_FREE = _SHARED_WORDS | {id(None), id(True), id(False)}
_LEAF_TYPES = frozenset(_LEAVES)
_PARTS: dict[type, Callable[[Any], Iterable[Any]]] = {}
# A slot in a dict or set (its share of the table: about a third free, 8-byte hash and pointers), or a list.
DICT_ENTRY = 48
LIST_ENTRY = 8
# How many of a big seed's events or accounts are measured to estimate the whole (every one when fewer).
SAMPLE = 1000


def _parts_of(kind: type) -> Callable[[Any], Iterable[Any]]:
    """What an object of `kind` holds: its slots' values (a slotted dataclass), else its __dict__'s."""
    parts = _PARTS.get(kind)
    if parts is None:
        names: list[str] = []
        for klass in kind.__mro__:
            declared = klass.__dict__.get("__slots__", ())
            names += [declared] if isinstance(declared, str) else [n for n in declared if n != "__weakref__"]
        if not names:
            parts = _dict_values
        elif len(names) == 1:
            name = names[0]
            parts = lambda value: (getattr(value, name, None),)  # noqa: E731
        else:
            parts = attrgetter(*names)
        _PARTS[kind] = parts
    return parts


def _dict_values(value: Any) -> Iterable[Any]:
    values: Iterable[Any] = vars(value).values()
    return values


def footprint(record: Any) -> int:
    """The bytes of every object `record` reaches (None, True, False and the shared status words cost nothing)."""
    size = sys.getsizeof
    free = _FREE
    leaves = _LEAF_TYPES
    total = 0
    pending = [record]
    pop, extend = pending.pop, pending.extend
    while pending:
        value = pop()
        if id(value) in free:
            continue
        total += size(value)
        kind = type(value)
        if kind in leaves:
            continue
        if kind is dict:
            extend(value.keys())
            extend(value.values())
        elif kind is list or kind is tuple or isinstance(value, (tuple, list, set, frozenset)):
            extend(value)  # a NamedTuple (a limit window) is a tuple
        elif isinstance(value, _LEAVES):
            continue
        elif isinstance(value, dict):
            extend(value.keys())
            extend(value.values())
        else:
            extend(_parts_of(kind)(value))
    return total


def event_footprint(event: Event) -> int:
    """An event, and its slot in the session's dict of events."""
    return footprint(event) + DICT_ENTRY


def account_footprint(account: Account) -> int:
    """An account, and its slot in the session's dict of accounts."""
    return footprint(account) + DICT_ENTRY


def _estimate(records: Iterable[Any], count: int, each: Any) -> int:
    """The footprint of `count` records, from the first SAMPLE of them when there are more."""
    measured = 0
    seen = 0
    for record in records:
        if seen == SAMPLE:
            break
        measured += each(record)
        seen += 1
    return measured if seen == count or not seen else measured * count // seen


def scenario_footprint(scenario: Scenario) -> int:
    """What a scenario's events and accounts would cost as a session's own records (a big seed is packed and
    costs less; a state loaded over it costs this much). Estimated from a sample when it is big."""
    events = scenario.events
    accounts = scenario.accounts
    return _estimate(events.values(), len(events), event_footprint) + _estimate(
        accounts.values(), len(accounts), account_footprint
    )


# --- the records a limit change makes, counted without a walk ---------------------------------------------
# A limit change is the API's busiest write (and the benchmark's): walking its proposal and the old and new
# limits took longer than the rest of the change. Each window is counted at the most a window may hold (the
# spec bounds it: a start_time of at most 14 characters, an amount of at most 2^63 - 1), so these are upper
# bounds of `footprint` (tests/state hold them to it), and cost a few additions.

_LONGEST_START = "00:00:00+00:00"
_LARGEST_AMOUNT = 2**63 - 1
WINDOW_BYTES = (
    sys.getsizeof(LimitWindow(_LONGEST_START, _LARGEST_AMOUNT))
    + sys.getsizeof(_LONGEST_START)
    + sys.getsizeof(_LARGEST_AMOUNT)
    + LIST_ENTRY  # its place in its mode's tuple
)
# A mode: its name (the longest the spec has) and its tuple of windows, empty.
MODE_BYTES = sys.getsizeof(max(models.PIX_MODES, key=len)) + sys.getsizeof(())
_PROPOSAL_FIXED = (
    sys.getsizeof(Proposal("", "", {}, "", "", "", ""))
    + sys.getsizeof("00000000-0000-4000-8000-000000000000")  # its id
    + sys.getsizeof("2026-11-21T10:00:00.000-03:00")  # its event_date, as timestamp() writes it
)


# What sys.getsizeof adds to a dict's own __sizeof__ (the collector's header): called directly, __sizeof__ costs a
# tenth of getsizeof's generic lookup.
_DICT_HEADER = sys.getsizeof({}) - {}.__sizeof__()


def limits_bytes(limits: Limits) -> int:
    """At least `footprint(limits)`, counted from how many windows each mode has."""
    return limits.__sizeof__() + _DICT_HEADER + len(limits) * MODE_BYTES + sum(map(len, limits.values())) * WINDOW_BYTES


def proposal_bytes(proposal: Proposal, pix_bytes: int | None = None) -> int:
    """At least `footprint(proposal)` (its id and event_date are as long as the mock writes them; `pix_bytes`:
    `limits_bytes(proposal.pix)` when the caller has it). The status words are nearly always the shared ones,
    which cost nothing: each is looked for by itself, with no loop."""
    free = _FREE
    total = _PROPOSAL_FIXED + (limits_bytes(proposal.pix) if pix_bytes is None else pix_bytes)
    if id(proposal.target) not in free:
        total += sys.getsizeof(proposal.target)
    if id(proposal.analysis_status) not in free:
        total += sys.getsizeof(proposal.analysis_status)
    if id(proposal.client_notification_status) not in free:
        total += sys.getsizeof(proposal.client_notification_status)
    if id(proposal.status) not in free:
        total += sys.getsizeof(proposal.status)
    return total
