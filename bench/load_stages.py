"""Where a big scenario's load spends its CPU: each stage of the lean path timed alone, on one core.

    .venv/bin/python -m bench.load_stages FILE [--syntax json|yaml]

Runs the stages of `mock_server.scenarios.stream` one after the other over the whole file, in this process
(no workers), and prints a JSON object: stage -> CPU seconds, plus `events` and `total` (the lean path's own
serial load of the same file, timed whole). `make bench` runs it pinned to one core on the 100k-event files
and shows the table: with workers, the load's wall time is about the sum over the cores, so this is the
profile of what stands between a load and its target.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mock_server.domain.events import cross_check_event
from mock_server.scenarios import text as scenario_text
from mock_server.scenarios.batch_packing import Sink
from mock_server.scenarios.loader import ScenarioLoader
from mock_server.scenarios.stream import BATCH_CHARS, BYTES_PER_EVENT, _read, _Reader
from mock_server.scenarios.yaml_blocks import split_events
from mock_server.spec.openapi import load_specs
from mock_server.wire.decoding import SCENARIO_JSON

T = TypeVar("T")
# In the order a load goes through them; each also names what it stands for in the report.
STAGES = {
    "read and cut": "read the file and cut it into batches of whole events",
    "YAML screen": "look for text only libyaml may read (tags, anchors, comments...)",
    "rapidyaml": "parse a batch and write it as JSON (rapidyaml, C++)",
    "JSON decode": "decode a batch (json, with duplicate keys refused and PyYAML's number rules for YAML)",
    "YAML 1.1 check": "no text that YAML 1.1 would read as something else (jsonschema-rs)",
    "schema": "the events against the ScenarioEvent schema, a batch in one call (jsonschema-rs)",
    "cross-checks": "each event's consistency rules (status, amounts, dates)",
    "packing": "each event packed into the seed's buffer, its key into the key table",
    "key checks": "every event_conciliation_key once in the file",
}


class _Clock:
    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    def time(self, stage: str, work: Callable[[], T]) -> T:
        started = time.process_time()
        result = work()
        self.spent[stage] += time.process_time() - started
        return result


def _cut(path: Path, syntax: str) -> tuple[list[str], list[Any]]:
    """The batches' texts, and (JSON) the events after the last cut, decoded one by one as the reader does."""
    batches: list[str] = []
    with path.open(encoding="utf-8") as stream:
        if syntax == "yaml":
            split_events(stream, batches.append, BATCH_CHARS)
            return batches, []
        reader = _Reader(stream)
        reader.expect("{")
        while reader.value() != "events":
            reader.expect(":")
            reader.value()
            reader.expect(",")
        reader.expect(":")
        reader.expect("[")
        while (text := reader.cut(BATCH_CHARS)) is not None:
            batches.append(text)
        tail = [reader.value()]
        while reader.expect(",", "]") == ",":
            tail.append(reader.value())
        return batches, tail


def _decoded(clock: _Clock, syntax: str, text: str) -> list[Any]:
    if syntax == "json":
        events: list[Any] = clock.time("JSON decode", lambda: SCENARIO_JSON.decode(f"[{text}]"))
        return events
    encoded = text.encode("utf-8")
    clock.time("YAML screen", lambda: scenario_text.needs_reference(text, encoded))
    written = clock.time("rapidyaml", lambda: scenario_text._ryml_json(encoded))
    data: list[Any] = clock.time("JSON decode", lambda: scenario_text._FROM_RYML.decode(written))
    clock.time("YAML 1.1 check", lambda: scenario_text._UNAMBIGUOUS.is_valid(data))
    return data


def _checked_and_packed(clock: _Clock, sink: Sink, valid: Callable[[Any], bool], events: list[Any]) -> None:
    def pack() -> None:
        for event in events:
            sink._builder.add_scenario_event(event)

    def conciliation_keys() -> None:
        for event in events:
            sink._note([hash(i["event_conciliation_key"].lower()) for i in event["event_conciliation_list"]])

    clock.time("schema", lambda: valid(events))
    clock.time("cross-checks", lambda: [cross_check_event(event) for event in events])
    clock.time("packing", pack)
    clock.time("key checks", conciliation_keys)


def stages(path: Path, syntax: str) -> dict[str, Any]:
    loader = ScenarioLoader.from_specs(load_specs())
    assert loader.event_check is not None
    was_enabled = gc.isenabled()
    gc.disable()  # as the load itself runs
    try:
        return _stages(path, syntax, loader)
    finally:
        if was_enabled:
            gc.enable()


def _stages(path: Path, syntax: str, loader: ScenarioLoader) -> dict[str, Any]:
    assert loader.event_check is not None
    clock = _Clock()
    sink = Sink(loader.event_check, expected=path.stat().st_size // BYTES_PER_EVENT)
    valid = loader.event_check.of_lists().fast.is_valid  # a batch in one call, as the load does
    batches, tail = clock.time("read and cut", lambda: _cut(path, syntax))
    events = len(tail)
    for text in batches:
        data = _decoded(clock, syntax, text)
        events += len(data)
        _checked_and_packed(clock, sink, valid, data)
    _checked_and_packed(clock, sink, valid, tail)
    clock.time("key checks", sink.seed)
    started = time.process_time()
    whole = _read(path, loader.event_check, 0)  # no workers
    total = time.process_time() - started
    assert whole is not None and len(whole[1]) == events, "the file did not load the lean way"
    return {"events": events, "total": total, **clock.spent}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--syntax", choices=("json", "yaml"), default="yaml")
    args = parser.parse_args(argv)
    json.dump(stages(args.file, args.syntax), sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
