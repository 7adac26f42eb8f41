"""The one door to the session registry for its lifecycle: sessions made, deleted, swapped, found and listed.

Every refusal is one error type, `ApiError` (domain/errors: its status, code and message), which the one error
renderer (http/responses) turns into the contract's body. The /__mock/sessions handlers (admin/sessions.py) go
through this door, and so does the owner of a server in its own process (mock_server/serving.py, for the pytest
plugin's one-trip session swap), in the server's event loop: whoever changes how a session is made changes it here,
once. The registry itself (sessions.py) stays where the sessions live.
"""

from __future__ import annotations

from collections.abc import Sequence

from mock_server.domain.errors import SessionAlreadyExists, SessionEvicted, SessionNotFound
from mock_server.state.sessions import Session, Sessions, evicted_message


class SessionDoor:
    """The lifecycle of the sessions `registry` holds; each method raises `ApiError` when it is refused."""

    __slots__ = ("registry",)

    def __init__(self, registry: Sessions) -> None:
        self.registry = registry

    def create(
        self, name: str, scenario: str | None = None, seed: int | None = None, replacing: str | None = None
    ) -> Session:
        """POST /__mock/sessions: the explicit session `name` on `scenario` (None: the server's), its ids seeded
        with `seed`; `replacing` (a session's name) deleted in the same step. 409 when the name is taken, 404 for a
        scenario not found, 429 when there is no room."""
        session = self.registry.make(name, scenario, seed, replacing)
        if session is None:
            raise SessionAlreadyExists(f"Session {name!r} exists already.")
        return session

    def change(
        self, create: Sequence[tuple[str, str | None, int | None]], delete: Sequence[str]
    ) -> tuple[list[Session], list[str]]:
        """PATCH /__mock/sessions: the sessions `delete` names deleted and each of `create` (name, scenario,
        seed) made, in one step (refused whole); the sessions made and the names deleted."""
        return self.registry.change(create, delete)

    def swap(self, old: str | None, name: str, scenario: str | None = None, seed: int | None = None) -> Session:
        """`old` deleted when named (already gone: nothing to do), then `name` made as `create` makes it: a test
        runner's teardown and its next test's setup in one trip. Unlike `create(replacing=...)`, `old` is gone even
        when `name` is refused: the runner is done with it either way."""
        if old is not None:
            self.registry.delete(old)
        return self.create(name, scenario, seed)

    def delete(self, name: str) -> None:
        """DELETE /__mock/sessions/NAME: the session, or the record of its eviction, forgotten; 404 when neither."""
        if not self.registry.delete(name):
            raise SessionNotFound(f"No session named {name!r}.")

    def find(self, name: str) -> Session:
        """GET /__mock/sessions/NAME: the session, never made here; 410 when it was evicted, else 404."""
        session = self.registry.peek(name)
        if session is not None:
            return session
        tombstone = self.registry.tombstone(name)
        if tombstone is not None:
            raise SessionEvicted(evicted_message(tombstone))
        raise SessionNotFound(f"No session named {name!r}.")

    def all(self) -> list[Session]:
        """Every session the registry holds, the least recently used first."""
        return self.registry.all()

    def names(self) -> list[str]:
        return [session.name for session in self.registry.all()]
