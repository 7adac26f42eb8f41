"""The server's Prometheus metrics (GET /__mock/metrics): counters the server keeps as plain numbers while it
answers (a `RequestMeter` per operation: one item of one list a request), turned into metric families only when
scraped, by a custom collector. prometheus_client (a base dependency: pure Python, no dependency of its own) is
imported at the first scrape, so a server that is never scraped never loads it (about 0.12 s).

Every label takes a bounded value: an operationId of the specs, a status the server can answer (three digits, or
`dropped`), a fault kind; never a session name.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mock_server.state.sessions import Sessions

# The histogram's upper bounds, in seconds (an in-memory mock answers in well under a millisecond; a fault's delay,
# a slow body or a shadowed backend take seconds), and the same in nanoseconds for the request path's comparison.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
DURATION_BOUNDS_NS = tuple(round(bound * 1e9) for bound in BUCKETS)
FIRST_BOUND_NS = DURATION_BOUNDS_NS[0]  # what nearly every answer takes at most: its bucket found without a search
DROPPED = "dropped"  # the status label of a call whose connection an injected reset dropped
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"


class RequestMeter:
    """One operation's counts: answers by status and duration (`counts`: status -> its count in each bucket of
    BUCKETS, the last one +Inf), the total of their durations, and the faults injected into it by kind.

    One item counts both what a request tells (its status, its duration's bucket): the request path finds its
    status's list and adds one to an item (http/pipeline.py, inline), where a dict entry by status and a bucket of
    its own cost two counts; the answers by status and the histogram's buckets are sums of those lists, made at
    scrape time."""

    __slots__ = ("counts", "faults", "operation_id", "total_ns")

    def __init__(self, operation_id: str) -> None:
        self.operation_id = operation_id
        self.counts: dict[int, list[int]] = {}  # status (0: dropped) -> the count of each bucket
        self.total_ns = 0
        self.faults: dict[str, int] = {}

    def count(self, status: int, elapsed_ns: int) -> None:
        """One answer (`status` 0: none, the connection dropped), `elapsed_ns` after the request came. (What
        http/pipeline.py does inline, for every request.)"""
        self.counted(status)[bucket_of(elapsed_ns)] += 1
        self.total_ns += elapsed_ns

    def counted(self, status: int) -> list[int]:
        """The bucket counts of `status`, made at its first answer."""
        found = self.counts.get(status)
        if found is None:
            found = self.counts[status] = [0] * (len(DURATION_BOUNDS_NS) + 1)
        return found

    @property
    def statuses(self) -> dict[int, int]:
        """Answers by status (0: dropped)."""
        return {status: sum(buckets) for status, buckets in self.counts.items()}

    @property
    def buckets(self) -> list[int]:
        """Answers by duration, whatever their status: the count of each bucket (not cumulative)."""
        totals = [0] * (len(DURATION_BOUNDS_NS) + 1)
        for counts in self.counts.values():
            totals = [total + count for total, count in zip(totals, counts, strict=True)]
        return totals

    def count_fault(self, kind: str) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1


def bucket_of(elapsed_ns: int) -> int:
    """The index of the first bucket that holds a duration (its bound included: Prometheus' `le`)."""
    return 0 if elapsed_ns <= FIRST_BOUND_NS else bisect_left(DURATION_BOUNDS_NS, elapsed_ns)


class ServerMetrics:
    """Every operation's meter and the sessions' own numbers, read at scrape time."""

    def __init__(self) -> None:
        self.meters: list[RequestMeter] = []
        self.sessions: Sessions | None = None  # set once the sessions exist (app.py)

    def meter(self, operation_id: str) -> RequestMeter:
        """The meter of `operation_id` (one per operation, shared by the runners of its methods)."""
        for meter in self.meters:
            if meter.operation_id == operation_id:
                return meter
        meter = RequestMeter(operation_id)
        self.meters.append(meter)
        return meter

    def families(self) -> Iterator[Any]:
        """The metric families, built now from the counts (the collector's `collect`)."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        requests = CounterMetricFamily(
            "pix_mock_requests", "Requests answered, by operation and status.", labels=("operation_id", "status")
        )
        durations = HistogramMetricFamily(
            "pix_mock_request_duration_seconds",
            "Time from a request's arrival to its answer, by operation.",
            labels=("operation_id",),
        )
        faults = CounterMetricFamily(
            "pix_mock_faults_injected",
            "Injected faults that answered a call, by operation and kind.",
            labels=("operation_id", "kind"),
        )
        for meter in sorted(self.meters, key=lambda m: m.operation_id):
            for status, count in sorted(meter.statuses.items()):
                requests.add_metric((meter.operation_id, str(status) if status else DROPPED), count)
            cumulative, buckets = 0, []
            for bound, count in zip((*(str(b) for b in BUCKETS), "+Inf"), meter.buckets, strict=True):
                cumulative += count
                buckets.append((bound, cumulative))
            if cumulative:
                durations.add_metric((meter.operation_id,), buckets, meter.total_ns / 1e9)
            for kind, count in sorted(meter.faults.items()):
                faults.add_metric((meter.operation_id, kind), count)
        yield requests
        yield durations
        yield faults
        sessions = self.sessions
        if sessions is not None:
            yield GaugeMetricFamily("pix_mock_sessions", "Sessions the server holds now.", value=len(sessions))
            yield CounterMetricFamily(
                "pix_mock_session_evictions",
                "Sessions evicted to make room (--max-sessions).",
                value=sessions.evictions,
            )
            yield GaugeMetricFamily(
                "pix_mock_journal_bytes",
                "Bytes the request journals of every session hold together.",
                value=sessions.journal_budget.used,
            )


def exposition(metrics: ServerMetrics) -> bytes:
    """The Prometheus text format of the server's metrics, written by prometheus_client."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(metrics))
    return generate_latest(registry)


class _Collector:
    def __init__(self, metrics: ServerMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Any]:
        return self.metrics.families()
