"""The shipped scenarios' judged parse kept beside them, as the specs' parse is (spec/openapi.py's cache).

A file of the package's own fixtures directory (what a server starts on unless told otherwise: the pytest plugin's
server, `mock-server` bare) that was read whole and found valid is written as JSON to
`fixtures/__pycache__/NAME.yaml.validated.json`, when Python would write byte code, with the key it holds for: the
SHA-256 of the file's bytes, the digest of the specs the loader's checks come from, and the code that decides what
the file reads as and whether it is valid (this package's version, readers and checks, PyYAML, rapidyaml and the
schema engine: each one's file as spec/openapi.py's `file_stamp` tells it; and Python's version). A start whose
key matches builds the scenario from that JSON: it neither reads YAML (nor imports PyYAML and rapidyaml) nor judges
the document again, which was most of loading the four shipped scenarios. Any other directory's file, another key,
a cache that cannot be read: read and judged as ever.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mock_server.spec.openapi import file_stamp, library_stamp, write_cache
from mock_server.spec.resources import data_path

FORMAT = 1
MAX_BYTES = 1 << 20  # the shipped files are a few kB; a bigger one is read as any other
# What decides what a scenario file reads as, and whether it is valid: the readers (text, yaml_errors, the JSON
# decoder's refusals), the loader's checks and the cross-checks it calls, the schema checks.
_JUDGES = (
    "mock_server",  # its __init__ holds the package's version
    "mock_server.scenarios.text",
    "mock_server.scenarios.yaml_errors",
    "mock_server.scenarios.loader",
    "mock_server.wire.decoding",
    "mock_server.domain.events",
    "mock_server.domain.documents",
    "mock_server.state.schedules",
    "mock_server.spec.openapi",
)
_LIBRARIES = ("yaml", "ryml", "jsonschema_rs")


@functools.cache
def _shipped() -> Path:
    return data_path("fixtures").resolve()


@functools.cache
def _code() -> str:
    """The code a judged parse holds for, as a digest of its files' stamps (read once a process)."""
    stamps = [sys.version]
    for name in _JUDGES:
        found = importlib.util.find_spec(name)
        origin = found.origin if found is not None else None
        if origin is None:
            stamps.append(f"{name}: absent")
            continue
        stamps.append(file_stamp(origin))
    stamps += [library_stamp(name) for name in _LIBRARIES]
    return hashlib.sha256("\n".join(stamps).encode()).hexdigest()


@dataclass(frozen=True)
class Kept:
    """Where a shipped scenario file's judged parse is kept, and the key it must hold."""

    source: Path
    cache: Path
    key: dict[str, Any]

    def held(self) -> dict[str, Any] | None:
        """The judged parse kept for this key; None when there is none (or it is another key's, or unreadable)."""
        try:
            kept = orjson.loads(self.cache.read_bytes())
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict) or kept.get("key") != self.key or not isinstance(kept.get("document"), dict):
            return None
        document: dict[str, Any] = kept["document"]
        return document

    def keep(self, data: dict[str, Any]) -> None:
        """`data`, judged valid just now, kept for the next start (not under PYTHONDONTWRITEBYTECODE)."""
        if not sys.dont_write_bytecode:
            write_cache(self.cache, self.key, data, self.source)


def shipped(path: Path, size: int) -> bool:
    """Whether `path` (of `size` bytes) is one of the shipped scenarios, whose judged parse is kept."""
    return size <= MAX_BYTES and path.resolve().parent == _shipped()


def kept_for(path: Path, raw: bytes, checks: str) -> Kept:
    """The place and key of a shipped scenario's judged parse (`raw`: the file's bytes; `checks`: the digest of
    the specs the loader's checks come from)."""
    key = {"format": FORMAT, "sha256": hashlib.sha256(raw).hexdigest(), "checks": checks, "code": _code()}
    return Kept(path, path.parent / "__pycache__" / f"{path.name}.validated.json", key)
