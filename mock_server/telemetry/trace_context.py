"""The W3C `traceparent` header read without the OpenTelemetry SDK: the journal names a request's trace whether or
not tracing is on (https://www.w3.org/TR/trace-context/#traceparent-header). Pure functions."""

from __future__ import annotations

import re

# version "-" trace-id "-" parent-id "-" flags, lower-case hex; version ff is invalid, and so are all-zero ids.
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
TRACE_ID = re.compile(r"[0-9a-f]{32}")
ZERO_TRACE = "0" * 32
ZERO_SPAN = "0" * 16
MAX_TRACEPARENT = 512  # a longer header is no traceparent this reads (a future version's may add fields)


def parent_of(traceparent: str | None) -> tuple[str, str] | None:
    """(trace id, parent span id), lower-case hex, of a valid `traceparent` value; None for none or an invalid one
    (which the specification says to ignore: the request then starts a trace of its own)."""
    if traceparent is None or len(traceparent) > MAX_TRACEPARENT:
        return None
    found = _TRACEPARENT.fullmatch(traceparent.strip())
    if found is None:
        return None
    version, trace_id, span_id, _, rest = found.groups()
    if version == "ff" or (version == "00" and rest) or trace_id == ZERO_TRACE or span_id == ZERO_SPAN:
        return None
    return trace_id, span_id


def is_trace_id(value: str) -> bool:
    """A trace id as the journal writes them: 32 lower-case hex digits."""
    return TRACE_ID.fullmatch(value) is not None and value != ZERO_TRACE
