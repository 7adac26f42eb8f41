"""The span queue (telemetry/span_queue.py): the requests' facts handed on in batches by a thread of its own, by the
rules and variables of the SDK's BatchSpanProcessor."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra")

from mock_server.telemetry.span_queue import SpanQueue


class Batches:
    """What the queue's thread sends, batch by batch, and a way to wait for a number of items."""

    def __init__(self) -> None:
        self.sent: list[list[Any]] = []
        self.arrived = threading.Condition()

    def __call__(self, batch: list[Any]) -> None:
        with self.arrived:
            self.sent.append(batch)
            self.arrived.notify_all()

    def wait_for(self, items: int) -> list[list[Any]]:
        with self.arrived:
            assert self.arrived.wait_for(lambda: sum(map(len, self.sent)) >= items, timeout=5)
            return list(self.sent)


@pytest.fixture
def batches() -> Batches:
    return Batches()


def queue_of(batches: Batches, **variables: str) -> Iterator[SpanQueue]:
    queue = SpanQueue(batches, {f"OTEL_BSP_{name.upper()}": value for name, value in variables.items()})
    try:
        yield queue
    finally:
        queue.shutdown(1000)


def put(queue: SpanQueue, *items: Any) -> None:
    """What a request does (OtelTracer.record)."""
    for item in items:
        if len(queue.pending) >= queue.batch_size:
            queue.nudge()
        queue.pending.append(item)


def test_a_full_batch_wakes_the_thread_and_goes_whole(batches: Batches) -> None:
    for queue in queue_of(batches, schedule_delay="60000", max_export_batch_size="4"):
        put(queue, *range(10))
        sent = batches.wait_for(8)
        assert sent[:2] == [[0, 1, 2, 3], [4, 5, 6, 7]]  # oldest first, whole batches: the rest waits
        assert list(queue.pending) == [8, 9]


def test_after_the_delay_what_is_queued_goes(batches: Batches) -> None:
    for queue in queue_of(batches, schedule_delay="20", max_export_batch_size="4"):
        put(queue, "a", "b")
        assert batches.wait_for(2) == [["a", "b"]]


def test_a_flush_sends_everything_queued_at_once(batches: Batches) -> None:
    for queue in queue_of(batches, schedule_delay="60000", max_export_batch_size="3"):
        queue.pending.extend(range(7))  # under the thread's nose, no nudge
        assert queue.force_flush(1000)
        assert batches.sent == [[0, 1, 2], [3, 4, 5], [6]] and not queue.pending


def test_shutdown_sends_what_is_left_then_closes_the_exporter(batches: Batches) -> None:
    closed: list[bool] = []
    queue = SpanQueue(batches, {"OTEL_BSP_SCHEDULE_DELAY": "60000"}, close=lambda: closed.append(True))
    put(queue, 1, 2, 3)
    queue.shutdown(1000)
    assert batches.sent == [[1, 2, 3]] and closed == [True]
    assert not queue._thread.is_alive()
    queue.shutdown(1000)  # again: nothing more
    assert closed == [True]


def test_a_full_queue_drops_its_oldest_and_says_so_once(batches: Batches, caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()

    def stuck(batch: list[Any]) -> None:  # a collector that does not answer: the thread waits in its first send
        release.wait(5)
        batches(batch)

    queue = SpanQueue(stuck, {"OTEL_BSP_MAX_QUEUE_SIZE": "4", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2"})
    try:
        with caplog.at_level(logging.WARNING, logger="mock_server"):
            put(queue, 0, 1)
            queue.nudge()  # a batch's worth: the next request would say so
            while queue.pending:  # the thread took the first batch, and waits in it
                threading.Event().wait(0.005)
            put(queue, *range(2, 10))  # 8 more into a queue of 4: the 4 oldest dropped
            assert list(queue.pending) == [6, 7, 8, 9] and queue.dropped == 4
            release.set()
            batches.wait_for(6)
    finally:
        release.set()
        queue.shutdown(1000)
    said = [record.getMessage() for record in caplog.records]
    assert said == ["4 spans dropped: more were queued than OTEL_BSP_MAX_QUEUE_SIZE (4) holds"], said


def test_a_send_that_fails_loses_its_batch_not_the_thread(batches: Batches, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[list[Any]] = []

    def flaky(batch: list[Any]) -> None:
        calls.append(batch)
        if len(calls) == 1:
            raise RuntimeError("a bug in an exporter")
        batches(batch)

    queue = SpanQueue(flaky, {"OTEL_BSP_SCHEDULE_DELAY": "60000", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "1"})
    try:
        with caplog.at_level(logging.ERROR, logger="mock_server"):
            put(queue, "lost", "kept")
            assert batches.wait_for(1) == [["kept"]]
    finally:
        queue.shutdown(1000)
    assert "a batch of 1 spans could not be sent" in caplog.text


@pytest.mark.parametrize("value", ["0", "-5", "many", "1.5"])
def test_a_variable_that_is_no_positive_number_keeps_the_sdks_default(
    batches: Batches, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mock_server"):
        for queue in queue_of(batches, max_queue_size=value, max_export_batch_size=value, schedule_delay=value):
            assert (queue.pending.maxlen, queue.batch_size, queue.delay) == (2048, 512, 5.0)
    assert caplog.text.count("is not a positive whole number") == 3


def test_a_batch_larger_than_the_queue_is_capped(batches: Batches) -> None:
    for queue in queue_of(batches, max_queue_size="8", max_export_batch_size="100"):
        assert queue.batch_size == 8 and queue.pending.maxlen == 8


def test_drops_are_not_said_while_the_exporter_says_its_collector_is_gone(
    batches: Batches, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's "one warning" for a collector that cannot be reached: the exporter's, not one a minute more."""
    queue = SpanQueue(
        batches,
        {"OTEL_BSP_MAX_QUEUE_SIZE": "2", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2", "OTEL_BSP_SCHEDULE_DELAY": "60000"},
        failing=lambda: True,
    )
    try:
        with caplog.at_level(logging.WARNING, logger="mock_server"):
            with queue._sending:  # the woken thread waits to send: the queue overflows meanwhile
                put(queue, *range(6))
            assert queue.dropped == 4
            queue.force_flush(1000)
    finally:
        queue.shutdown(1000)
    assert batches.sent == [[4, 5]] and not caplog.records


def test_every_item_goes_once_and_in_order_while_the_thread_sends(batches: Batches) -> None:
    for queue in queue_of(batches, schedule_delay="60000", max_export_batch_size="64", max_queue_size="20000"):
        put(queue, *range(10_000))
        queue.force_flush(5000)
        sent = batches.wait_for(10_000)
        assert [item for batch in sent for item in batch] == list(range(10_000))
        assert all(len(batch) <= 64 for batch in sent) and queue.dropped == 0


def test_a_send_that_does_not_end_holds_shutdown_no_longer_than_its_timeout() -> None:
    """A collector that takes the connection and never answers: the graceful stop gives up on it, and what is still
    queued is dropped, rather than waiting for the exporter's own timeout."""
    release, sending = threading.Event(), threading.Event()
    closed: list[bool] = []

    def hangs(batch: list[Any]) -> None:
        sending.set()
        release.wait(10)

    queue = SpanQueue(
        hangs,
        {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2", "OTEL_BSP_SCHEDULE_DELAY": "60000"},
        close=lambda: closed.append(True),
    )
    try:
        put(queue, 1, 2, 3)  # the third wakes the thread, which takes [1, 2] and hangs in its send
        assert sending.wait(5)
        put(queue, 4)
        queue.shutdown(100)
        assert not release.is_set() and queue._thread.is_alive()  # returned while the send still hangs
        assert not queue.pending and closed == [True]  # [3, 4] dropped, the exporter closed (which ends its retries)
    finally:
        release.set()
