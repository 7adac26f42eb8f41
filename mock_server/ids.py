"""Generated identifiers: random, or with `--seed` the same sequence for the same session every time."""

from __future__ import annotations

import random
import uuid


class IdSource:
    def __init__(self, seed: int | None, session: str) -> None:
        self._seed = seed
        self._session = session
        self.reset()

    def reset(self) -> None:
        """Restart the sequence: after a reset a seeded session hands out the same ids again."""
        self._random = random.Random(f"{self._seed}:{self._session}") if self._seed is not None else None

    def new_uuid(self) -> str:
        if self._random is None:
            return str(uuid.uuid4())
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))
