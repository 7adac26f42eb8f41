"""The request journal of one session: what the public API received and answered, the last 1000, bounded in
bytes per session and over every session together.

An entry keeps what the request already produced and is rendered only when the journal is read: the bodies as
the bytes that crossed the wire, by reference (a parsed body costs about five times the memory, and 256 sessions
of 1000 entries each add up), the headers packed into one bytes object as they were sent, the instant as a
datetime. Most entries are never read: recording one is a tuple, a join and a few additions. An entry holds no
container but its tuple, so the garbage collector stops tracking it at its first pass: a journal of 1000 entries
costs the collector nothing, where 1000 tracked lists made every full collection walk them (measured with
bench/cpu_cost.py: the journal was most of a lookup's garbage collection). A body over
JOURNAL_BODY_BYTES keeps only its first JOURNAL_BODY_BYTES, and reads back as text ending in a marker. Beyond
its own byte bound a journal drops its oldest entries; beyond the overall bound (`JournalBudget`) the oldest
entries of any session go first.
"""

from __future__ import annotations

import weakref
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from mock_server.domain.certificates import ClientCertificate
from mock_server.domain.clock import timestamp
from mock_server.domain.errors import ApiError
from mock_server.telemetry.trace_context import parent_of
from mock_server.wire.decoding import parse_json
from mock_server.wire.headers import RawHeaders, header_values

if TYPE_CHECKING:  # faults import the bounds, which import this module's defaults
    from mock_server.state.faults import FaultMark

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
FAULT_MARK_COST = 120  # a FaultMark: its slots (the fault id and the Chance are the fault's own, shared)


class _Entry(NamedTuple):
    """How an entry reads. It is *kept* as a plain tuple of these fields: the garbage collector stops tracking a
    plain tuple of untracked things at its first pass, never a NamedTuple (CPython untracks exact tuples only)."""

    received_at: datetime  # written out when read: most entries are never read
    method: str
    path: str
    operation_id: str
    status: int | None  # None: an injected reset fault dropped the connection, nothing was answered
    request_raw: bytes
    request_is_json: bool
    response_raw: bytes
    request_headers: bytes  # as received, packed (`_packed`); unpacked, decoded and redacted when read
    sizes: tuple[int, int] | None  # the bodies' sizes as received when either was cut (else their length)
    cost: int  # bytes counted against the bounds
    seq: int  # order over every journal (the overall bound drops the lowest first)
    injected: bool  # an injected fault answered, not the mock's own rules
    client_certificate: ClientCertificate | None  # the TLS client certificate the call came with (one per client)
    faults: tuple[FaultMark, ...] | None  # the armed faults decided on the call, fired or not (None: none armed)
    # (trace id, span id) of the mock's SERVER span as numbers, tracing on; None: off (the trace id is then read,
    # when the entry is, from the traceparent the call came with: nothing is paid for it at the call)
    trace: tuple[int, int] | None


_COST, _SEQ = _Entry._fields.index("cost"), _Entry._fields.index("seq")


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


def _unpacked(packed: bytes) -> list[tuple[bytes, bytes]]:
    if not packed:
        return []
    return [(name, value) for name, _, value in (line.partition(b": ") for line in packed.split(b"\r\n"))]


def _incoming_trace(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The trace id of the call's `traceparent` header (the first one), None without a valid one."""
    for name, value in headers:
        if name.lower() == b"traceparent":
            parent = parent_of(value.decode("latin-1"))
            return parent[0] if parent is not None else None
    return None


def _redacted(raw: RawHeaders) -> dict[str, str]:
    """The headers by name in the order sent (the first of a repeated one), credentials replaced: a journal is
    printed by failing tests and CI logs. (`header_values` reads them from the last to the first, so that the first
    of a repeated one wins: reversed again, they are in the order sent.)"""
    headers = header_values(raw)
    return {name: REDACTED if name in SECRET_HEADERS else value for name, value in reversed(headers.items())}


class _Usage:
    """A journal's byte count, kept apart so the budget can take it back when the journal is dropped."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class JournalBudget:
    """The overall bound: the bytes every journal holds together. Beyond `total`, the globally oldest entry
    goes first, whichever session holds it.

    The budget keeps no order of its own: every entry carries its number in the order of all (`seq`), and each
    journal's oldest entry is its first, so the globally oldest is the lowest of the journals' first entries. That
    is looked for only when the total is exceeded (rare: 256 MiB by default), over at most --max-sessions
    journals; recording an entry costs the budget two additions."""

    def __init__(self, total: int = DEFAULT_JOURNAL_TOTAL_BYTES) -> None:
        self.total = total
        self.used = 0
        self._seq = 0
        self._journals: weakref.WeakSet[Journal] = weakref.WeakSet()

    def _register(self, journal: Journal, usage: _Usage) -> None:
        self._journals.add(journal)
        weakref.finalize(journal, self._forget, usage)

    def _forget(self, usage: _Usage) -> None:
        """A journal was dropped (its session evicted) without being cleared: its bytes are free again."""
        self.used -= usage.bytes
        usage.bytes = 0

    def _fit(self) -> None:
        """Drop the globally oldest entries until the journals fit `total` together."""
        while self.used > self.total:
            oldest: Journal | None = None
            for journal in self._journals:
                if journal._entries and (oldest is None or journal._entries[0][_SEQ] < oldest._entries[0][_SEQ]):
                    oldest = journal
            if oldest is None:
                return
            oldest._drop_oldest()


class Journal:
    """One session's journal. `max_bytes` 0: off (nothing is recorded)."""

    def __init__(self, max_bytes: int = DEFAULT_JOURNAL_BYTES, budget: JournalBudget | None = None) -> None:
        self.max_bytes = max_bytes
        self._budget = budget if budget is not None else JournalBudget()
        self._entries: deque[tuple[Any, ...]] = deque()  # _Entry's fields, as plain tuples
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
        request_headers: RawHeaders = (),
        injected: bool = False,
        client_certificate: ClientCertificate | None = None,
        faults: tuple[FaultMark, ...] | None = None,
        trace: tuple[int, int] | None = None,
    ) -> None:
        """One answered call. The bodies are kept as they are (not copied): the caller hands over bytes."""
        if not self.max_bytes:
            return
        # The header pairs as one bytes object, `name: value` lines joined by CRLF, as HTTP/1.1 sent them: a name
        # holds no colon and a value no CR or LF (the parser refuses both), so the lines part again exactly
        # (`_unpacked`). One object kept per entry instead of a tuple and two bytes objects per header: a full journal
        # frees its oldest entry at each call, and the fewer and smaller the objects it frees, the less memory a call
        # touches (bench/cpu_cost.py).
        headers = b"\r\n".join(map(b": ".join, request_headers))
        request_kept, response_kept = len(request_raw), len(response_raw)
        sizes = None
        if request_kept > JOURNAL_BODY_BYTES or response_kept > JOURNAL_BODY_BYTES:  # rare: no size kept otherwise
            sizes = (request_kept, response_kept)
            request_raw, response_raw = request_raw[:JOURNAL_BODY_BYTES], response_raw[:JOURNAL_BODY_BYTES]
            request_kept, response_kept = len(request_raw), len(response_raw)
        # The head is bounded (http/connection.py: 64 KiB by default).
        cost = ENTRY_OVERHEAD + len(path) + request_kept + response_kept + len(headers)
        if client_certificate is not None:  # usually one object shared by a client's calls: counted as if not
            cost += CERTIFICATE_COST
        if faults is not None:  # only while faults are armed: up to --max-faults marks a call
            cost += FAULT_MARK_COST * len(faults) + 56
        entries, usage, budget = self._entries, self._usage, self._budget
        if len(entries) >= JOURNAL_SIZE:  # _drop_oldest, inline: a full journal drops one at each call
            dropped = entries.popleft()[_COST]
            usage.bytes -= dropped
            budget.used -= dropped
        while entries and usage.bytes + cost > self.max_bytes:
            dropped = entries.popleft()[_COST]
            usage.bytes -= dropped
            budget.used -= dropped
        budget._seq = seq = budget._seq + 1
        entries.append(
            (
                received_at,
                method,
                path,
                operation_id,
                status,
                request_raw,
                request_is_json,
                response_raw,
                headers,
                sizes,
                cost,
                seq,
                injected,
                client_certificate,
                faults,
                trace,
            )
        )
        usage.bytes += cost
        budget.used += cost
        if budget.used > budget.total:
            budget._fit()

    def _drop_oldest(self) -> None:
        entry = self._entries.popleft()
        cost = entry[_COST]
        self._usage.bytes -= cost
        self._budget.used -= cost

    def entries(
        self,
        operation_id: str | None = None,
        status: int | None = None,
        since: datetime | None = None,
        trace_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Oldest first, in the shape of the admin spec's JournalEntry; only those of `operation_id`, answered
        with `status`, received at or after `since`, in the trace `trace_id` (lower-case hex), when given."""
        out = []
        for kept in self._entries:
            e = _Entry._make(kept)
            if (
                (operation_id is not None and e.operation_id != operation_id)
                or (status is not None and e.status != status)
                or (since is not None and e.received_at < since)
            ):
                continue
            headers = _unpacked(e.request_headers)
            entry_trace: str | None
            span_id: str | None
            if e.trace is not None:  # the mock's span's ids, numbers: written as the hex that W3C headers carry
                entry_trace, span_id = f"{e.trace[0]:032x}", f"{e.trace[1]:016x}"
            else:
                entry_trace, span_id = _incoming_trace(headers), None
            if trace_id is not None and entry_trace != trace_id:
                continue
            request_size, response_size = e.sizes or (len(e.request_raw), len(e.response_raw))
            entry = {
                "received_at": timestamp(e.received_at),
                "method": e.method,
                "path": e.path,
                "operation_id": e.operation_id,
                "status": e.status,
                "request_body": _decoded(e.request_raw, e.request_is_json, request_size),
                "response_body": _decoded(e.response_raw, True, response_size),
                "request_headers": _redacted(headers),
                "trace_id": entry_trace,
                "span_id": span_id,
            }
            if e.client_certificate is not None:
                entry["client_certificate"] = e.client_certificate.to_json()
            if e.sizes is not None:
                entry["truncated"] = [
                    name
                    for name, raw, size in (
                        ("request_body", e.request_raw, request_size),
                        ("response_body", e.response_raw, response_size),
                    )
                    if size > len(raw)
                ]
            if e.injected:
                entry["injected"] = True
            if e.faults:
                entry["faults"] = [mark.to_json() for mark in e.faults]
            out.append(entry)
        return out

    def clear(self) -> None:
        while self._entries:
            self._drop_oldest()
