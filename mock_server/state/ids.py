"""Generated identifiers: random, or with `--seed` the same sequence for the same session every time."""

from __future__ import annotations

import os
import random
from typing import Any

# The version-4 UUID layout (RFC 9562): version nibble 4, variant bits 10.
_VERSION_MASK = ~((0xF000 << 64) | (0xC000 << 48))
_VERSION_BITS = (0x4000 << 64) | (0x8000 << 48)


class IdSource:
    def __init__(self, seed: int | None, session: str) -> None:
        self._seed = seed
        self._session = session
        self.reset()

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

    def new_uuid(self) -> str:
        """A version-4 UUID from the session's generator: the bits `uuid.UUID(int=..., version=4)` would set,
        written out directly (building the UUID object was most of an id's cost)."""
        digits = "%032x" % ((self._random.getrandbits(128) & _VERSION_MASK) | _VERSION_BITS)
        return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"

    def saved(self) -> dict[str, Any]:
        """What the state file keeps: the seed, and where a seeded sequence is (an unseeded one needs only to
        go on being random)."""
        version, internal, gauss = self._random.getstate()
        state = [version, list(internal), gauss] if self._seed is not None else None
        return {"seed": self._seed, "session": self._session, "state": state}

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from what `saved()` kept."""
        self._seed, self._session = saved["seed"], saved["session"]
        self.reset()
        state = saved["state"]
        if state is not None:
            self._random.setstate((state[0], tuple(state[1]), state[2]))
