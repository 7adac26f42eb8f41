"""mock_server.state.conciliation_index: which event of a seed uses an event_conciliation_key, with forced collisions,
and its build: once per seed, shared by concurrent callers, retried after a failure, dropped with its seed."""

from __future__ import annotations

import asyncio
import gc
import threading
import uuid
from datetime import date
from decimal import Decimal

import pytest

from mock_server.domain.models import PENDING, Event, Installment
from mock_server.state import conciliation_index
from mock_server.state.conciliation_index import MappingIndex, SeedIndex
from mock_server.state.seed_storage import SeedEvents


def an_event(key: str, conciliation_keys: list[str], security_key: str | None = None) -> Event:
    return Event(
        key=key,
        security_key=security_key or str(uuid.uuid4()),
        investment_key=str(uuid.uuid4()),
        amortization_type="early_amortization",
        total_expected_amount=Decimal("100.00"),
        total_discount_amount=Decimal(0),
        total_paid_amount=Decimal(0),
        status=PENDING,
        reference_date=date(2026, 11, 1),
        due_date=date(2026, 11, 30),
        paid_at=None,
        installments=[Installment(k, str(uuid.uuid4()), PENDING) for k in conciliation_keys],
    )


def a_seed(count: int = 50) -> tuple[SeedEvents, dict[str, str]]:
    """`count` packed events of 0, 1, 2 or 3 instalments, and one kept as an object (its security key is not a
    36-character UUID, and nor are its conciliation keys); and which event uses each conciliation key."""
    events, owners = [], {}
    for n in range(count):
        keys = [str(uuid.uuid4()) for _ in range(n % 4)]
        events.append(an_event(str(uuid.uuid4()), keys))
        owners.update(dict.fromkeys(keys, events[-1].key))
    odd = an_event(str(uuid.uuid4()), ["short-key", "another-odd-key"], security_key="not a uuid")
    events.append(odd)
    owners.update(dict.fromkeys(["short-key", "another-odd-key"], odd.key))
    return SeedEvents(events), owners


def test_the_walk_gives_every_conciliation_key_of_packed_and_object_records() -> None:
    seed, owners = a_seed()
    walked = {key.decode(): seed.key_at(offset) for offset, keys in seed.conciliation_keys() for (key,) in keys}
    assert walked == owners


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"hash_of": lambda key: 0},  # every key in one probe chain
        {"hash_of": lambda key: 7 if key[0] in b"0123456789" else -1},  # two chains, one of a negative hash
    ],
    ids=["real hash", "one hash for all", "two hashes"],
)
def test_every_key_finds_its_event_and_no_other_key_does(options: dict[str, object]) -> None:
    seed, owners = a_seed()
    index = SeedIndex(seed, **options)  # type: ignore[arg-type]
    assert index.count == len(owners)
    for key, event_key in owners.items():
        assert index.owner(key) == event_key
    for _ in range(100):
        assert index.owner(str(uuid.uuid4())) is None
    assert index.owner("short") is None  # a prefix of a kept key is not that key
    assert index.owner(next(iter(seed))) is None  # an event key is not a conciliation key


def test_collisions_are_confirmed_against_the_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal hashes for different keys: a probe reads the record's keys, so a key that was never indexed but
    hashes like one that was is still unknown."""
    seed, owners = a_seed(8)
    index = SeedIndex(seed, hash_of=lambda key: 42)
    asked: list[int] = []

    def no_keys(self: SeedEvents, offset: int) -> list[bytes]:
        asked.append(offset)
        return []

    monkeypatch.setattr(SeedEvents, "conciliation_keys_at", no_keys)
    assert index.owner(next(iter(owners))) is None  # the record never holds it: no answer from the hash alone
    assert len(asked) == index.count  # every slot of the one chain was confirmed


def test_the_table_is_at_most_half_full_and_counts_four_bytes_a_slot() -> None:
    seed, owners = a_seed()
    index = SeedIndex(seed)
    slots = index.nbytes() // 4
    assert 2 * len(owners) <= slots < 4 * len(owners)


def test_an_empty_seed_has_an_empty_index() -> None:
    seed = SeedEvents()
    index = SeedIndex(seed)
    assert index.count == 0
    assert index.owner(str(uuid.uuid4())) is None


def test_a_plain_mapping_is_indexed_at_once() -> None:
    event = an_event("e1", ["k1", "k2"])
    index = conciliation_index.ready({"e1": event})
    assert isinstance(index, MappingIndex)
    assert (index.owner("k2"), index.owner("k3")) == ("e1", None)


def test_concurrent_callers_share_one_build(monkeypatch: pytest.MonkeyPatch) -> None:
    seed, owners = a_seed()
    builds: list[SeedEvents] = []
    started, release = threading.Event(), threading.Event()

    class HeldIndex(SeedIndex):
        def __init__(self, seed: SeedEvents) -> None:
            builds.append(seed)
            started.set()
            assert release.wait(10)
            super().__init__(seed)

    monkeypatch.setattr(conciliation_index, "SeedIndex", HeldIndex)

    async def callers() -> None:
        assert conciliation_index.ready(seed) is None
        waiting = [asyncio.create_task(conciliation_index.build(seed)) for _ in range(3)]
        assert await asyncio.to_thread(started.wait, 10)
        assert not any(task.done() for task in waiting)
        waiting[0].cancel()  # one caller goes away: the others still get the index
        release.set()
        await asyncio.gather(*waiting[1:])

    asyncio.run(callers())
    assert builds == [seed]
    index = conciliation_index.ready(seed)
    assert isinstance(index, HeldIndex)
    key, event_key = next(iter(owners.items()))
    assert index.owner(key) == event_key


def test_a_failed_build_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    seed, _ = a_seed()
    attempts: list[int] = []

    class FailingOnce(SeedIndex):
        def __init__(self, seed: SeedEvents) -> None:
            attempts.append(1)
            if len(attempts) == 1:
                raise MemoryError
            super().__init__(seed)

    monkeypatch.setattr(conciliation_index, "SeedIndex", FailingOnce)
    with pytest.raises(MemoryError):
        asyncio.run(conciliation_index.build(seed))
    assert conciliation_index.ready(seed) is None
    asyncio.run(conciliation_index.build(seed))
    assert isinstance(conciliation_index.ready(seed), FailingOnce)
    assert len(attempts) == 2


def test_the_index_goes_with_its_seed() -> None:
    seed, _ = a_seed()
    asyncio.run(conciliation_index.build(seed))
    assert conciliation_index.ready(seed) is not None
    seed_id = id(seed)
    del seed
    # The build's worker thread lets go of its work item (the seed among its arguments) only after it handed the
    # index over: once it ran the next one, it has (under load this test could look before it did).
    conciliation_index._WORKER.submit(lambda: None).result(timeout=10)
    gc.collect()
    assert seed_id not in conciliation_index._INDEXES
