"""Scenario files as bench/gen_scenario.py writes them, written once a process, in process, and copied where a test
wants one: a child Python running the script for each test (~0.3 s of CPU, most of it its start and imports) was
most of what the tests of big files cost."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from bench.gen_scenario import write_scenario


@functools.cache
def _written(events: int, syntax: str) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scale.yaml"
        write_scenario(events, path, syntax)
        return path.read_bytes()


def generated(tmp_path: Path, events: int, syntax: str = "yaml") -> Path:
    """`tmp_path/scale.yaml`: `events` generated events in `syntax` (yaml or json), as
    `python bench/gen_scenario.py EVENTS PATH --syntax SYNTAX` writes them."""
    path = tmp_path / "scale.yaml"
    path.write_bytes(_written(events, syntax))
    return path
