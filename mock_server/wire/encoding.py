"""JSON on the wire: encoding response bodies."""

from __future__ import annotations

import json
from typing import Any

import orjson


def encode_json(body: Any) -> bytes:
    """Compact UTF-8 JSON. orjson writes it much faster than the json module (encoding was the largest share
    of a lookup's own cost); it refuses integers beyond 64 bits, which only an echoed client value (a fault's
    body) can hold: those go through the json module.

    The result is copied: the bytes orjson returns keep a few kB of heap however short they are, and the
    journal keeps many responses per session (BENCHMARKS.md, 256 busy sessions; the figures are in the
    commit that made this copy). The copy is cheap."""
    try:
        return bytes(memoryview(orjson.dumps(body)))
    except orjson.JSONEncodeError:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
