"""A test runner's sessions, one a test, on a mock server: made before each test and deleted after it, for the
least a test can cost. Usable without pytest (the pytest plugin's `pix_mock` is this, a test at a time):

    from mock_server.serving import InProcessServer
    from mock_server.session_supply import SessionSupply

    with InProcessServer() as server:
        supply = SessionSupply(server.url, local=server)
        mock = supply.open()                  # a PixMock on a new session of its own
        mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")
        supply.finish(mock)                   # deleted, and the next test's session made in the same trip
        supply.close()

How a session is made and deleted depends on the server: one of this process's (`local`, an InProcessServer),
through its session door in its event loop, the next test's session made in the trip that deletes the last one's;
one shared by the run's processes (`batch`), sessions made and deleted `batch` at a time by PATCH /__mock/sessions;
any other, POST /__mock/sessions with `replacing` (DELETE /__mock/sessions/NAME on a server older than it). A session
the server refuses to make is asked for over HTTP in every case, so that the refusal is the server's own answer
(`MockServerError`). One connection pool is under every session's client, built when first needed (its SSL context
is most of what an httpx.Client costs).

At import this module loads the standard library and mock_server.client only.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mock_server.client import LifecycleConnection, MockServerError, PixMock, _refusal, _segment, shared_transport

if TYPE_CHECKING:
    import ssl

    import httpx

    from mock_server.pki import TestPki
    from mock_server.serving import InProcessServer

SEED_MAX = (1 << 63) - 1  # the admin spec's bound of a session's seed
_Made = tuple[str, str | None, int | None]  # a session made ahead for the next test: (name, scenario, seed)


def _run_id() -> str:
    """This process's part of session names: the xdist worker and a random token (another CI job on the same
    external server gets another)."""
    # os.urandom, as secrets.token_hex reads it: `secrets` (and the hmac it imports) is not worth its import here.
    return f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.urandom(4).hex()}"


_RUN_ID = _run_id()
_COUNTER = iter(range(1, 1 << 62))


def session_name() -> str:
    return f"pytest-{_RUN_ID}-{next(_COUNTER)}"


def plain(scenario: str | None, seed: int | None) -> bool:
    """Arguments the admin spec accepts (others go to the server one call at a time: its validation answers)."""
    return scenario != "" and (seed is None or 0 <= seed <= SEED_MAX)


def _creation(name: str, scenario: str | None, seed: int | None, replacing: str | None = None) -> dict[str, Any]:
    """A session to make, as POST /__mock/sessions and PATCH /__mock/sessions's `create` take it: unset members
    left out (the server's defaults)."""
    given = {"name": name, "scenario": scenario, "seed": seed, "replacing": replacing}
    return {member: value for member, value in given.items() if value is not None}


def _refuses_replacing(status: int, text: str) -> bool:
    """Whether a POST /__mock/sessions was refused for its `replacing` member: a server older than it."""
    if status != 400:
        return False
    try:
        details = json.loads(text).get("details") or []
    except (ValueError, AttributeError):
        return False
    return any(isinstance(detail, dict) and detail.get("field") == "replacing" for detail in details)


class SuppliedSession(PixMock):
    """The client bound to a test's session, sending through the supply's pool; `pki` (a server over TLS of this
    process's) the test certificates' files (pki.ca, pki.client(), pki.client("expired"), ...)."""

    def __init__(self, supply: SessionSupply, name: str) -> None:
        super().__init__(supply.server_url, name, token=supply.token)
        self.name: str = name
        self._supply = supply
        self.pki = supply.pki
        self.kept = False  # left on the server when its test ended (a failed test, --mock-server-keep-failed)

    @property
    def transport(self) -> httpx.BaseTransport:
        """The connection pool `.client` sends through: the run's, the same object for every test, built when a
        test first needs it. Hand it to the code under test's own `httpx.Client(transport=...)` to spare it a
        pool and an SSL context (its close() does nothing)."""
        return self._supply.transport


class SessionSupply:
    """Sessions on the server at `server_url`, each made on `scenario` (None: the server's) with ids seeded by
    `seed` unless `open` asks otherwise; `token` the server's admin token; `local` the server when it is this
    process's; `batch` sessions made at a time on a server of the run's own (0: one a call)."""

    def __init__(
        self,
        server_url: str,
        *,
        token: str | None = None,
        scenario: str | None = None,
        seed: int | None = None,
        local: InProcessServer | None = None,
        batch: int = 0,
    ) -> None:
        self.server_url = server_url
        self._local = local
        self.in_process = local is not None
        self.scenario = scenario
        self.seed = seed
        self.token = token
        self.pki: TestPki | None = local.pki if local is not None else None
        # X-Mock-Admin: DELETE /__mock/sessions/NAME is bodyless and changes state (docs/threat-model.md).
        self._headers = {"X-Mock-Admin": "1", **({"Authorization": f"Bearer {token}"} if token else {})}
        self._lock = threading.Lock()
        # The next test's session, made in the trip that deleted the last one: in-process, a trip to the server's
        # thread less a test, which on a busy machine is a wait for the scheduler; in another process, one call
        # (POST /__mock/sessions with `replacing`) instead of a DELETE and a POST.
        self._next: _Made | None = None
        self._replacing = True  # the server knows `replacing` (an older external one answers 400 to it)
        # Sessions on the run's scenario and seed made `batch` at a time and deleted the same way, in one PATCH
        # /__mock/sessions: a test then costs the server no call of its own.
        self.batch = 0 if local is not None else batch
        self._ready: list[str] = []  # made by the last batch, for the tests to come: the oldest first
        self._ended: list[str] = []  # the sessions of tests that ended, deleted by the next batch
        self._pool: httpx.HTTPTransport | None = None
        self._transport: httpx.BaseTransport | None = None

    @property
    def transport(self) -> httpx.BaseTransport:
        """The run's pool behind a transport whose close() does nothing, built on first use."""
        with self._lock:
            if self._transport is None:
                import httpx

                # Over plain http no certificate is ever checked: no CA bundle read (a tenth of a second).
                verify = self._ssl_context() if self.pki else not self.server_url.startswith("http://")
                self._pool = httpx.HTTPTransport(verify=verify)
                self._transport = shared_transport(self._pool)
            return self._transport

    def _ssl_context(self) -> ssl.SSLContext:
        """The test CA trusted, the good client certificate presented (needed when the server is `mutual`)."""
        import ssl

        assert self.pki is not None
        context = ssl.create_default_context(cafile=self.pki.ca)
        context.load_cert_chain(*self.pki.client())
        return context

    @functools.cached_property
    def _lifecycle(self) -> LifecycleConnection:
        return LifecycleConnection(self.server_url, self._headers, lambda: self.client)

    @functools.cached_property
    def client(self) -> httpx.Client:
        """An httpx client on the server, over the run's pool: the lifecycle calls' way through TLS or a proxy."""
        import httpx

        return httpx.Client(base_url=self.server_url, headers=self._headers, timeout=30.0, transport=self.transport)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, bool]:
        """(status, text, sent twice) of an admin call on the server; MockServerError when there is no answer."""
        try:
            return self._lifecycle.call(method, path, body)
        except Exception as exc:
            raise MockServerError(
                f"{method} {self.server_url}{path}: no answer ({type(exc).__name__}: {exc}); is the mock server up?"
            ) from exc

    def _in_loop_made(self, old: str | None, new: _Made | None) -> bool:
        """In one trip to this process's server: `old` deleted (when named), and `new` made (when given); whether
        it was (not when the door refused it: the HTTP road then asks, and the server says why)."""
        from mock_server.domain.errors import ApiError

        assert self._local is not None
        try:
            if new is not None:
                made = new
                return bool(self._local.with_sessions(lambda door: door.swap(old, *made).name))
            if old is not None:
                gone = old
                self._local.with_sessions(lambda door: door.delete(gone))
        except ApiError:  # the door's one error type: `new` refused, or `old` deleted by its test already
            pass
        return False

    def open(self, scenario: str | None = None, seed: int | None = None) -> SuppliedSession:
        """A new session, made explicitly on `scenario` (None: the server's) with ids seeded by `seed` (None: the
        server's --seed, if any). Arguments the admin spec would refuse go over HTTP, so that the server's own
        validation answers."""
        __tracebackhide__ = True
        if self.batch and (scenario, seed) == (self.scenario, self.seed) and plain(scenario, seed):
            if not self._ready:
                self._change(self.batch)
            return SuppliedSession(self, self._ready.pop(0))
        ready, self._next = self._next, None
        if ready is not None and ready[1:] == (scenario, seed):
            return SuppliedSession(self, ready[0])
        name = session_name()
        replaced = None  # made for a test on the run's scenario, this one asking another: deleted
        if self._local is not None:
            wanted = (name, scenario, seed) if plain(scenario, seed) else None
            if self._in_loop_made(ready[0] if ready is not None else None, wanted):
                return SuppliedSession(self, name)
        elif ready is not None:
            replaced = ready[0]
        status, text, again = self.call("POST", "/__mock/sessions", _creation(name, scenario, seed, replaced))
        if status != 201 and not (again and status == 409):  # 409 the second time: the first one made it
            raise _refusal("POST", f"{self.server_url}/__mock/sessions", status, text)
        return SuppliedSession(self, name)

    def finish(self, mock: SuppliedSession, keep: bool = False) -> None:
        """Delete the test's session, unless `keep`; the next test's session made in the same step."""
        __tracebackhide__ = True
        mock.close()
        mock.kept = keep
        if self.batch:
            if not keep:
                self._ended.append(mock.name)
            if len(self._ended) >= 2 * self.batch:  # tests on sessions of their own: no batch has deleted them
                self._change(0)
            return
        old = None if keep else mock.name
        upcoming = (session_name(), self.scenario, self.seed)
        if self._local is not None:
            # Deleted (unless kept; not there: the test deleted it itself), and the next test's session made.
            made = self._in_loop_made(old, upcoming if plain(self.scenario, self.seed) else None)
            self._next = upcoming if made else None
            return
        if self._replacing and plain(self.scenario, self.seed):
            # Deleted (unless kept) and the next test's session made, in one call.
            body = _creation(upcoming[0], self.scenario, self.seed, old)
            status, text, again = self.call("POST", "/__mock/sessions", body)
            if status == 201 or (again and status == 409):
                self._next = upcoming
                return
            self._replacing = not _refuses_replacing(status, text)  # an older server: DELETE from now on
        if old is not None:
            self._delete(old)

    def _delete(self, name: str) -> None:
        __tracebackhide__ = True
        path = f"/__mock/sessions/{_segment(name)}"
        status, text, _ = self.call("DELETE", path)
        if status not in (204, 404):  # 404: the test deleted it itself
            raise _refusal("DELETE", f"{self.server_url}{path}", status, text)

    def _change(self, make: int) -> None:
        """One PATCH /__mock/sessions: the ended tests' sessions deleted, and `make` sessions on the run's scenario
        and seed made for the tests to come."""
        __tracebackhide__ = True
        names = [session_name() for _ in range(make)]
        body = {"create": [_creation(name, self.scenario, self.seed) for name in names], "delete": self._ended}
        status, text, again = self.call("PATCH", "/__mock/sessions", body)
        if status != 200 and not (again and status == 409):  # 409 the second time: the first one made them
            raise _refusal("PATCH", f"{self.server_url}/__mock/sessions", status, text)
        self._ended = []
        self._ready.extend(names)

    def kept_text(self, mock: SuppliedSession) -> str:
        until = " (in-process: until this pytest process ends)" if self.in_process else ""
        return (
            f"session {mock.name} is kept on {self.server_url}{until}, for --mock-server-keep-failed: its URL is "
            f"{mock.url}; delete it with DELETE {self.server_url}/__mock/sessions/{_segment(mock.name)} "
            "(and the header X-Mock-Admin: 1)"
        )

    def close(self) -> None:
        """The sessions made ahead deleted, and the pool closed."""
        if self._ready or self._ended:
            self._ended, self._ready = self._ended + self._ready, []
            with contextlib.suppress(MockServerError):  # the server may be gone already: nothing to leave behind
                self._change(0)
        ready, self._next = self._next, None
        if ready is not None and self._local is not None:
            self._in_loop_made(ready[0], None)
        elif ready is not None:
            with contextlib.suppress(MockServerError):  # the server may be gone already: nothing to leave behind
                self._delete(ready[0])
        lifecycle: LifecycleConnection | None = self.__dict__.pop("_lifecycle", None)
        if lifecycle is not None:
            lifecycle.close()
        client: httpx.Client | None = self.__dict__.pop("client", None)
        if client is not None:
            client.close()
        if self._pool is not None:
            self._pool.close()


class RunPacts:
    """The pact of a run's calls: each passed test's session's pact (GET /__mock/pact, asked before the session is
    deleted: `collect`), merged per consumer as the run goes, written as one CONSUMER-PROVIDER.json a consumer into
    `directory` (`write`). `options`: GET /__mock/pact's `amounts` and `mock_defined`, when given."""

    def __init__(self, directory: Path, consumer: str, provider: str, options: Mapping[str, str]) -> None:
        self.directory = directory
        self.consumer = consumer
        self.provider = provider
        self.options = dict(options)
        self.documents: dict[str, dict[str, Any]] = {}  # consumer -> the run's merged pact so far
        self.written: list[tuple[Path, int]] = []  # (path, interactions), for a summary

    def collect(self, supply: SessionSupply, mock: SuppliedSession, consumer: str | None = None) -> None:
        __tracebackhide__ = True
        from urllib.parse import urlencode

        query = urlencode({"consumer": consumer or self.consumer, "provider": self.provider, **self.options})
        path = f"/__session/{_segment(mock.name)}/__mock/pact?{query}"
        status, text, _ = supply.call("GET", path)
        if status != 200:
            raise _refusal("GET", f"{supply.server_url}{path}", status, text)
        self.add(json.loads(text))

    def add(self, document: dict[str, Any]) -> None:
        from mock_server.admin.pact import merge_pacts

        if not document["interactions"]:
            return
        consumer = document["consumer"]["name"]
        found = self.documents.get(consumer)
        self.documents[consumer] = document if found is None else merge_pacts([found, document])

    def write(self) -> None:
        from mock_server.admin.pact import pact_file_name

        if not self.documents:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        for consumer, document in sorted(self.documents.items()):
            path = self.directory / pact_file_name(consumer, document["provider"]["name"])
            path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            self.written.append((path, len(document["interactions"])))
