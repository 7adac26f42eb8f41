"""The requests' spans on their way to the exporter: a queue of what each request recorded, and one thread that
hands them on in batches, by the rules and variables of the SDK's BatchSpanProcessor (OTEL_BSP_SCHEDULE_DELAY,
OTEL_BSP_MAX_QUEUE_SIZE, OTEL_BSP_MAX_EXPORT_BATCH_SIZE; their defaults 5000 ms, 2048 and 512).

Why not the BatchSpanProcessor itself: it takes span objects, and a span handed to it cost the request about 9,000
instructions of its own (a system call to compare the process id, its checks, the span's context built to read the
sampled flag) besides the span's making: a quarter of what tracing cost a lookup (bench/tracing_cost.py). Here a
request appends one tuple of its facts and compares a length; the thread makes the spans of a whole batch.

Like the SDK's processor: a full queue drops the oldest span (said at most once a minute, and not while the exporter
has said that its collector cannot be reached); the thread wakes when a batch's worth is queued, or after the
schedule delay with whatever is queued; `force_flush` sends everything queued, and `shutdown` does once more (at
most `timeout_millis`), then stops the thread. It is the tracer provider's span processor, so that the provider's
force_flush and shutdown reach it; spans the SDK's own tracer makes (the server makes none) are not its business.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor

log = logging.getLogger("mock_server")
# The SDK's names and defaults (opentelemetry.sdk.environment_variables; the specification's batching processor).
SCHEDULE_DELAY = ("OTEL_BSP_SCHEDULE_DELAY", 5000)
MAX_QUEUE_SIZE = ("OTEL_BSP_MAX_QUEUE_SIZE", 2048)
MAX_EXPORT_BATCH_SIZE = ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
DROPS_SAID_EVERY = 60.0  # seconds between two warnings of a full queue


def _setting(environ: Mapping[str, str], variable: tuple[str, int]) -> int:
    """A positive whole number from the environment, the SDK's default when unset or not one (said, as the SDK
    says it)."""
    name, default = variable
    text = environ.get(name)
    if text is None or text.strip() == "":
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        log.warning("%s=%r is not a positive whole number: %d is used instead", name, text, default)
        return default
    return value


class SpanQueue(SpanProcessor):
    """Queued facts of finished requests, sent in batches by `send` (a list of them, oldest first) from a thread of
    the queue's own; `close` called once the last is sent; `failing()` true while the exporter has said its spans
    are dropped (the queue's drops are then not said). The request's side: `nudge()` when
    `len(pending) >= batch_size`, then `pending.append(facts)`."""

    def __init__(
        self,
        send: Callable[[list[Any]], None],
        environ: Mapping[str, str] | None = None,
        close: Callable[[], None] | None = None,
        failing: Callable[[], bool] | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        self._send = send
        self._close = close  # the exporter's shutdown, once the last batch is sent
        # Whether the exporter is failing (it has said that spans are dropped until its collector answers): drops
        # are then not said again.
        self._failing = failing
        self.delay = _setting(environ, SCHEDULE_DELAY) / 1000
        self.batch_size = _setting(environ, MAX_EXPORT_BATCH_SIZE)
        max_queue = _setting(environ, MAX_QUEUE_SIZE)
        if self.batch_size > max_queue:  # the SDK refuses it; here the batch is capped, the server still starts
            log.warning(
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE %d is over OTEL_BSP_MAX_QUEUE_SIZE %d: batches of %d are sent",
                self.batch_size,
                max_queue,
                max_queue,
            )
            self.batch_size = max_queue
        self.pending: deque[Any] = deque(maxlen=max_queue)  # a full deque drops its oldest on append
        self.dropped = 0
        self._dropped_said = 0
        self._said_at = -DROPS_SAID_EVERY
        self._awake = threading.Event()
        self._sending = threading.Lock()  # one batch at a time: the thread's, or a flush's
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="mock-server-spans", daemon=True)
        self._thread.start()

    def nudge(self) -> None:
        """A batch's worth is queued (the request's side calls this when `len(pending) >= batch_size`, before it
        appends): the thread wakes; a queue at its size is about to drop its oldest span."""
        pending = self.pending
        if len(pending) == pending.maxlen:
            self.dropped += 1
        if not self._awake.is_set():
            self._awake.set()

    def _work(self) -> None:
        while not self._stopping:
            woken = self._awake.wait(self.delay)
            # Cleared before sending: a nudge while the batches go is kept, and wakes the next wait at once.
            self._awake.clear()
            if self._stopping:
                break
            # Woken by a full batch: full batches while there are; after the delay: what is queued, at least once.
            self._send_batches(whole_batches_only=woken)

    def _send_batches(self, whole_batches_only: bool = False, deadline: float | None = None) -> None:
        """Batches sent (the thread's: woken, whole batches only; else at least one). With a `deadline` (a flush):
        every batch queued, none started past it, and none at all when the thread's send under way outlasts it."""
        pending = self.pending
        size = self.batch_size
        if not self._sending.acquire(timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())):
            return
        try:
            first = True
            while pending and (len(pending) >= size or (first and not whole_batches_only) or deadline is not None):
                first = False
                if deadline is not None and time.monotonic() >= deadline:
                    break
                batch = [pending.popleft() for _ in range(min(size, len(pending)))]
                try:
                    self._send(batch)
                except Exception:  # a bug of ours or the exporter's: this batch is lost, the thread goes on
                    log.exception("a batch of %d spans could not be sent", len(batch))
            self._say_drops()
        finally:
            self._sending.release()

    def _say_drops(self) -> None:
        dropped = self.dropped
        if dropped > self._dropped_said and self._failing is not None and self._failing():
            self._dropped_said = dropped  # the exporter's one warning says it already
        elif dropped > self._dropped_said and time.monotonic() - self._said_at >= DROPS_SAID_EVERY:
            log.warning(
                "%d spans dropped: more were queued than OTEL_BSP_MAX_QUEUE_SIZE (%d) holds",
                dropped - self._dropped_said,
                self.pending.maxlen,
            )
            self._dropped_said, self._said_at = dropped, time.monotonic()

    # --- the SDK's SpanProcessor: what the tracer provider calls ----------------------------------------------

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Everything queued sent now, for at most `timeout_millis` (a batch under way is not cut short); whether
        the queue is empty."""
        self._send_batches(deadline=time.monotonic() + timeout_millis / 1000)
        return not self.pending

    def shutdown(self, timeout_millis: int = 30000) -> None:
        """The thread stopped, after what is queued is sent: at most `timeout_millis` in all, a send under way
        included (a collector that does not answer holds a graceful stop no longer); later spans are dropped."""
        if self._stopping:
            return
        deadline = time.monotonic() + timeout_millis / 1000
        self._stopping = True
        self._awake.set()
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._send_batches(deadline=deadline)
        self.pending.clear()
        if self._close is not None:
            self._close()
