"""Generated identifiers: random, or with `--seed` the same sequence for the same session every time."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from functools import partial
from itertools import chain, repeat
from operator import length_hint
from typing import Any

# The version-4 UUID layout (RFC 9562): version nibble 4, variant bits 10.
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_BITS = (0x4000 << 64) | (0x8000 << 48)

# Ids are drawn in batches, the first of a session's one id, each next twice the last, up to MAX_BATCH: a busy
# session writes 64 ids' text in one go, and the code that draws and writes them then stays out of the way of the
# 63 calls after (a limit change measured about 270 fewer cache misses the size of an L2, bench/cpu_cost.py's
# harness under cachegrind), while a test's short-lived session draws no more than it uses. The bits of one
# draw of 128 * n are those of n draws of 128 in a row (the generator fills them from the lowest up), so the
# sequence is the same whatever the batches.
MAX_BATCH = 64
_BATCHES = {
    n: (
        "%0" + str(32 * n) + "x",
        sum((_VERSION_MASK & ((1 << 128) - 1)) << (128 * i) for i in range(n)),
        sum(_VERSION_BITS << (128 * i) for i in range(n)),
    )
    for n in (1 << k for k in range(MAX_BATCH.bit_length()))
}


class IdSource:
    """A session's ids. `new_uuid()` hands out the next one.

    `new_uuid` is an attribute, not a method: `next` over the batches joined (`itertools.chain`), a callable made of
    C alone, so handing out an id runs no Python frame, of this module or any, but once a batch (every 64th id in a
    busy session): a limit change entered this module for a list's pop. A subclass that hands out other ids
    overrides `_handing_out`."""

    new_uuid: Callable[[], str]

    def __init__(self, seed: int | None, session: str) -> None:
        self._seed = seed
        self._session = session
        self.reset()

    @property
    def seed(self) -> int | None:
        """The seed ids are drawn from (None: random): what a fault armed without a seed of its own draws by."""
        return self._seed

    @property
    def mixes_name(self) -> bool:
        """Whether the session's name is mixed into its seed (the server's `--seed`), so that sessions differ; a
        seed given to the session is its own alone. A fault drawing by the session's seed does as its ids do."""
        return self._seed is not None and self._session != ""

    def reseed(self, seed: int | None) -> None:
        """From now on the sequence of `seed` alone (None: random), restarted: a seed given to a session (by a
        reset or its creation) gives the same ids whatever the session's name, unlike `--seed`, which mixes the
        name in so that sessions differ."""
        self._seed = seed
        self._session = ""  # no session name is empty: never the sequence of a `--seed` session
        self.reset()

    def reset(self) -> None:
        """Restart the sequence: after a reset a seeded session hands out the same ids again."""
        # Unseeded, the generator is seeded once from the OS: uuid4() would make a system call per id,
        # and a mock's ids need to be unique, not unguessable.
        seed = f"{self._seed}:{self._session}" if self._seed is not None else os.urandom(32)
        self._random = random.Random(seed)
        self._batch = 1
        self._restored: list[str] = []  # ids a restore handed back, in the order handed out: before any drawn
        self._current: list[str] = []  # the batch being handed out, in order, and its iterator
        self._handing: Iterator[str] = iter(self._current)
        self.new_uuid = self._handing_out(partial(next, chain.from_iterable(map(self._next_batch, repeat(None)))))

    def _handing_out(self, drawn: Callable[[], str]) -> Callable[[], str]:
        """What `new_uuid` is, given the callable that hands out the next id drawn."""
        return drawn

    def _next_batch(self, _: object) -> Iterator[str]:
        """The ids handed out next (what a restore gave back, else a batch drawn), as the iterator `new_uuid` walks
        (`saved` asks it how many it has left)."""
        batch, self._restored = (self._restored, []) if self._restored else (self._draw(), [])
        self._current = batch
        self._handing = iter(batch)
        return self._handing

    def _draw(self) -> list[str]:
        """The next batch of ids, in the order handed out (the lowest bits of the draw are the first id's, and the
        last digits of its text)."""
        n = self._batch
        layout, mask, bits = _BATCHES[n]
        digits = layout % ((self._random.getrandbits(128 * n) & mask) | bits)
        self._batch = min(2 * n, MAX_BATCH)
        return [
            f"{digits[at : at + 8]}-{digits[at + 8 : at + 12]}-{digits[at + 12 : at + 16]}-"
            f"{digits[at + 16 : at + 20]}-{digits[at + 20 : at + 32]}"
            for at in range(32 * (n - 1), -1, -32)
        ]

    def _left(self) -> list[str]:
        """The ids drawn (or restored) and not handed out yet, the next one last (the state file's order)."""
        current = self._current
        return (current[len(current) - length_hint(self._handing) :] + self._restored)[::-1]

    def saved(self) -> dict[str, Any]:
        """What the state file keeps: the seed, and where a seeded sequence is (an unseeded one needs only to
        go on being random): the generator's state and the ids it drew that are not handed out yet."""
        version, internal, gauss = self._random.getstate()
        state = [version, list(internal), gauss] if self._seed is not None else None
        drawn = self._left() if self._seed is not None else []
        return {"seed": self._seed, "session": self._session, "state": state, "drawn": drawn}

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from what `saved()` kept (a file written before ids were drawn in batches has no `drawn`: its
        generator's state is that after the last id handed out)."""
        self._seed, self._session = saved["seed"], saved["session"]
        self.reset()
        state = saved["state"]
        if state is not None:
            self._random.setstate((state[0], tuple(state[1]), state[2]))
            self._restored = list(reversed(saved.get("drawn", [])))
