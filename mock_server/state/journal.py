"""The request journal of one session: what the public API received and answered, the last 1000, bounded in
bytes per session and over every session together.

Bodies are kept as the bytes that crossed the wire and decoded only when the journal is read: a parsed
body costs about five times the memory, and 256 sessions of 1000 entries each add up. A body over
JOURNAL_BODY_BYTES keeps only its first JOURNAL_BODY_BYTES, and reads back as text ending in a marker. Beyond
its own byte bound a journal drops its oldest entries; beyond the overall bound (`JournalBudget`) the oldest
entries of any session go first.
"""

from __future__ import annotations

import weakref
from collections import deque
from datetime import datetime
from typing import Any, NamedTuple

from mock_server.domain.certificates import ClientCertificate
from mock_server.domain.clock import timestamp
from mock_server.domain.errors import ApiError
from mock_server.wire.decoding import parse_json

JOURNAL_SIZE = 1000  # entries per session
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization"})
REDACTED = "[redacted]"
JOURNAL_BODY_BYTES = 64 * 1024  # of each body kept; the rest is cut
DEFAULT_JOURNAL_BYTES = 4 * 1024 * 1024  # per session
DEFAULT_JOURNAL_TOTAL_BYTES = 256 * 1024 * 1024  # every session together
# What an entry costs besides its bodies and path: the tuple, its datetime, the bytes objects' headers, the
# deque's slot (measured with tracemalloc: about 330 bytes).
ENTRY_OVERHEAD = 400
TRUNCATED = "[truncated: {size} bytes in all]"
CERTIFICATE_COST = 800  # a ClientCertificate: its strings (subject, issuer, serial, fingerprint) and datetimes


class _Entry(NamedTuple):
    received_at: datetime  # written out when read: most entries are never read
    method: str
    path: str
    operation_id: str
    status: int | None  # None: an injected reset fault dropped the connection, nothing was answered
    request_raw: bytes
    request_is_json: bool
    response_raw: bytes
    request_headers: dict[str, str]  # by lower-case name, as received; redacted when read
    request_size: int  # as received; more than len(request_raw) when cut
    response_size: int
    cost: int  # bytes counted against the bounds
    seq: int  # order over every journal (the overall bound drops the lowest first)
    injected: bool  # an injected fault answered, not the mock's own rules
    client_certificate: ClientCertificate | None  # the TLS client certificate the call came with (one per client)


def _decoded(raw: bytes, is_json: bool, size: int) -> Any:
    """JSON when it was sent as JSON and parses (strictly, as the API reads it), else text; None when empty.
    A cut body is its text with the marker after it."""
    if size > len(raw):
        return raw.decode("utf-8", "replace") + TRUNCATED.format(size=size)
    if not raw:
        return None
    if is_json:
        try:
            return parse_json(raw, "application/json")
        except ApiError:
            pass
    return raw.decode("utf-8", "replace")


def _redacted(headers: dict[str, str]) -> dict[str, str]:
    """The headers in the order sent, credentials replaced: a journal is printed by failing tests and CI logs.
    (`headers` was built from the last header to the first, so that the first of a repeated one wins.)"""
    return {name: REDACTED if name in SECRET_HEADERS else value for name, value in reversed(headers.items())}


class _Usage:
    """A journal's byte count, kept apart so the budget can take it back when the journal is dropped."""

    __slots__ = ("bytes", "entries")

    def __init__(self) -> None:
        self.bytes = 0
        self.entries = 0


class JournalBudget:
    """The overall bound: the bytes every journal holds together. Beyond `total`, the globally oldest entry
    goes first, whichever session holds it."""

    def __init__(self, total: int = DEFAULT_JOURNAL_TOTAL_BYTES) -> None:
        self.total = total
        self.used = 0
        self._seq = 0
        # (seq, journal) per entry ever recorded, oldest first; entries a journal dropped itself stay here
        # until popped or compacted away.
        self._order: deque[tuple[int, weakref.ref[Journal]]] = deque()
        self._journals: weakref.WeakSet[Journal] = weakref.WeakSet()
        self._live = 0

    def _register(self, journal: Journal, usage: _Usage) -> None:
        self._journals.add(journal)
        weakref.finalize(journal, self._forget, usage)

    def _forget(self, usage: _Usage) -> None:
        """A journal was dropped (its session evicted) without being cleared: its bytes are free again."""
        self.used -= usage.bytes
        self._live -= usage.entries
        usage.bytes = usage.entries = 0

    def _next(self, journal: Journal) -> int:
        self._seq += 1
        self._order.append((self._seq, weakref.ref(journal)))
        return self._seq

    def _fit(self) -> None:
        while self.used > self.total and self._order:
            seq, ref = self._order.popleft()
            journal = ref()
            if journal is not None:
                journal._drop_if_oldest(seq)

    def _compact(self) -> None:
        """Forget the order of entries the journals dropped themselves (their own bound, a clear)."""
        live = sorted((e.seq, weakref.ref(j)) for j in self._journals for e in j._entries)
        self._order = deque(live)


class Journal:
    """One session's journal. `max_bytes` 0: off (nothing is recorded)."""

    def __init__(self, max_bytes: int = DEFAULT_JOURNAL_BYTES, budget: JournalBudget | None = None) -> None:
        self.max_bytes = max_bytes
        self._budget = budget if budget is not None else JournalBudget()
        self._entries: deque[_Entry] = deque()
        self._usage = _Usage()
        self._budget._register(self, self._usage)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    @property
    def size_bytes(self) -> int:
        return self._usage.bytes

    def __len__(self) -> int:
        return len(self._entries)

    def record(
        self,
        received_at: datetime,
        method: str,
        path: str,
        operation_id: str,
        status: int | None,
        request_raw: bytes,
        request_is_json: bool,
        response_raw: bytes,
        *,
        request_headers: dict[str, str] | None = None,
        injected: bool = False,
        client_certificate: ClientCertificate | None = None,
    ) -> None:
        if not self.max_bytes:
            return
        headers = request_headers or {}
        request_size, response_size = len(request_raw), len(response_raw)
        if request_size > JOURNAL_BODY_BYTES:
            request_raw = request_raw[:JOURNAL_BODY_BYTES]
        if response_size > JOURNAL_BODY_BYTES:
            response_raw = response_raw[:JOURNAL_BODY_BYTES]
        cost = ENTRY_OVERHEAD + len(path) + len(request_raw) + len(response_raw)
        if headers:  # the head is bounded (http/connection.py: 64 KiB by default); a dict slot costs about 100 bytes
            cost += sum(100 + len(name) + len(value) for name, value in headers.items())
        if client_certificate is not None:  # usually one object shared by a client's calls: counted as if not
            cost += CERTIFICATE_COST
        while self._entries and (len(self._entries) >= JOURNAL_SIZE or self._usage.bytes + cost > self.max_bytes):
            self._drop_oldest()
        budget = self._budget
        self._entries.append(
            _Entry(
                received_at,
                method,
                path,
                operation_id,
                status,
                request_raw,
                request_is_json,
                response_raw,
                headers,
                request_size,
                response_size,
                cost,
                budget._next(self),
                injected,
                client_certificate,
            )
        )
        self._usage.bytes += cost
        self._usage.entries += 1
        budget.used += cost
        budget._live += 1
        if budget.used > budget.total:
            budget._fit()
        if len(budget._order) > 2 * budget._live + 1024:
            budget._compact()

    def _drop_oldest(self) -> None:
        entry = self._entries.popleft()
        self._usage.bytes -= entry.cost
        self._usage.entries -= 1
        self._budget.used -= entry.cost
        self._budget._live -= 1

    def _drop_if_oldest(self, seq: int) -> None:
        if self._entries and self._entries[0].seq == seq:
            self._drop_oldest()

    def entries(
        self, operation_id: str | None = None, status: int | None = None, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        """Oldest first, in the shape of the admin spec's JournalEntry; only those of `operation_id`, answered
        with `status`, received at or after `since`, when given."""
        out = []
        for e in self._entries:
            if (
                (operation_id is not None and e.operation_id != operation_id)
                or (status is not None and e.status != status)
                or (since is not None and e.received_at < since)
            ):
                continue
            entry = {
                "received_at": timestamp(e.received_at),
                "method": e.method,
                "path": e.path,
                "operation_id": e.operation_id,
                "status": e.status,
                "request_body": _decoded(e.request_raw, e.request_is_json, e.request_size),
                "response_body": _decoded(e.response_raw, True, e.response_size),
                "request_headers": _redacted(e.request_headers),
            }
            if e.client_certificate is not None:
                entry["client_certificate"] = e.client_certificate.to_json()
            if e.request_size > len(e.request_raw) or e.response_size > len(e.response_raw):
                entry["truncated"] = [
                    name
                    for name, raw, size in (
                        ("request_body", e.request_raw, e.request_size),
                        ("response_body", e.response_raw, e.response_size),
                    )
                    if size > len(raw)
                ]
            if e.injected:
                entry["injected"] = True
            out.append(entry)
        return out

    def clear(self) -> None:
        while self._entries:
            self._drop_oldest()
