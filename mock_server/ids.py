"""Generated identifiers: random, or with `--seed` the same sequence for the same session every time."""

from __future__ import annotations

import os
import random
import uuid


class IdSource:
    def __init__(self, seed: int | None, session: str) -> None:
        self._seed = seed
        self._session = session
        self.reset()

    def reset(self) -> None:
        """Restart the sequence: after a reset a seeded session hands out the same ids again."""
        # Unseeded, the generator is seeded once from the OS: uuid4() would make a system call per id,
        # and a mock's ids need to be unique, not unguessable.
        seed = f"{self._seed}:{self._session}" if self._seed is not None else os.urandom(32)
        self._random = random.Random(seed)

    def new_uuid(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))
