"""The lean way in for a valid scenario file, in JSON syntax or plain block-style YAML: its events a batch at a
time, never the whole file at once.

Read whole, a 1M-event file is 585 MB of text and about 2.3 GB of parsed dicts at once (a 2.9 GB peak; from
YAML, 5.5 GB), and the allocator keeps about 300 MB of the holes they leave for good. Here the file is read
in chunks of text; the top-level keys other than `events` are decoded whole, and the events are cut into
batches of whole events (JSON: at the `},{"extraordinary_event_conciliation_key"` between two of them;
YAML: at the dashes of the `events:` sequence, scenarios/yaml_blocks.py), each decoded in one call, checked, packed
into the seed and dropped (scenarios/batch_packing.py: on a machine with several cores, by worker processes). The peak
is then the packed seed plus a few batches.

This path only ever says yes: at the first thing that is not a plainly valid document of valid events (a
problem, a duplicate, a key given twice in any object, a surrogate escape, text that is not JSON, YAML the
fast reader does not vouch for, a cut that does not decode...) it gives up, and the full path (scenarios/loader.py)
reads the file again and reports every problem exactly as it always has. So a valid file is loaded here,
and everything else behaves as before.
"""

from __future__ import annotations

import re
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, TextIO

from mock_server.scenarios import yaml_blocks
from mock_server.scenarios.batch_packing import Batches, GiveUp, Sink, workers_for
from mock_server.scenarios.text import read_fast_yaml
from mock_server.scenarios.yaml_blocks import NotBlockLayout, split_events
from mock_server.spec.openapi import SchemaCheck
from mock_server.state.seed_storage import SeedEvents
from mock_server.wire.decoding import SCENARIO_JSON, DuplicateKey

CHUNK = 1 << 20  # characters read at a time
BYTES_PER_EVENT = 500  # about, in a file: sizes the tables the load fills (they grow past it)
BATCH_CHARS = yaml_blocks.BATCH_CHARS  # text of whole events decoded at a time
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's, and only JSON's (the full path decides about any other)
# A \uD800-\uDFFF escape may make a lone surrogate, which the full path reports: it decides.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# Between two events of the array: only an event has this key (an instalment or account with it is refused
# by the schema), and inside a JSON string the quote would be escaped. A cut anywhere else does not decode.
_NEXT_EVENT = re.compile(r'\}[ \t\n\r]*,[ \t\n\r]*(?=\{[ \t\n\r]*"extraordinary_event_conciliation_key")')


class _Reader:
    """JSON values one after the other from a text stream, through a window of the text."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._text = ""
        self._at = 0
        self._done = False

    def _more(self) -> bool:
        if self._done:
            return False
        chunk = self._stream.read(CHUNK)
        if not chunk:
            self._done = True
            return False
        if _SURROGATE_ESCAPE.search(self._text[-5:] + chunk):
            raise GiveUp
        self._text = self._text[self._at :] + chunk
        self._at = 0
        return True

    def peek(self) -> str:
        """The next character that is not whitespace ('' at the end of the file)."""
        while True:
            self._at = _WHITESPACE.match(self._text, self._at).end()  # type: ignore[union-attr]
            if self._at < len(self._text):
                return self._text[self._at]
            if not self._more():
                return ""

    def expect(self, *characters: str) -> str:
        found = self.peek()
        if found not in characters or not found:
            raise GiveUp
        self._at += 1
        return found

    def value(self) -> Any:
        self.peek()
        while True:
            try:
                value, end = SCENARIO_JSON.raw_decode(self._text, self._at)
            except (ValueError, RecursionError):
                if self._more():
                    continue  # most likely cut off at the window's end
                raise GiveUp from None
            # A number may have been cut short at the window's end ("12" of "123"): read on and decode again.
            if end == len(self._text) and self._more():
                continue
            self._at = end
            return value

    def cut(self, chars: int) -> str | None:
        """The text of whole events from here (an event's `{`), about `chars` long: up to the `}` of the last one
        before the first `},{"extraordinary_event_conciliation_key"` at or after `chars` characters; the reader is
        left at that next event. None when none is in sight: the last ones are read by `value()`."""
        while len(self._text) - self._at <= chars and self._more():
            pass
        found = _NEXT_EVENT.search(self._text, min(self._at + chars, len(self._text)))
        while found is None and self._more():  # the window ended inside an event: read on to its end
            found = _NEXT_EVENT.search(self._text, min(self._at + chars, len(self._text)))
        if found is None:
            return None
        text = self._text[self._at : found.start() + 1]
        self._at = found.end()
        return text


def _events(reader: _Reader, batches: Batches) -> None:
    """The events array: batches of whole events while another event is in sight, then the last ones."""
    reader.expect("[")
    if reader.peek() == "]":
        reader.expect("]")
        return
    while (text := reader.cut(BATCH_CHARS)) is not None:
        batches.submit("json", text)
    while True:
        batches.add(reader.value())
        if reader.expect(",", "]") == "]":
            return


def _read_json(
    stream: TextIO, event_check: SchemaCheck, workers: int, expected: int
) -> tuple[dict[str, Any], SeedEvents] | None:
    reader = _Reader(stream)
    reader.expect("{")
    rest: dict[str, Any] = {}
    sink: Sink | None = None
    if reader.peek() == "}":
        reader.expect("}")
    else:
        while True:
            key = reader.value()
            if not isinstance(key, str) or key in rest or (key == "events" and sink is not None):
                raise GiveUp  # not an object key, or given twice (JSON keeps the last: the full path decides)
            reader.expect(":")
            if key == "events" and reader.peek() == "[":
                sink = Sink(event_check, expected)
                batches = Batches(sink, event_check, workers)
                try:
                    _events(reader, batches)
                    batches.finish()
                finally:
                    batches.close()
            else:
                rest[key] = reader.value()
            if reader.expect(",", "}") == "}":
                break
    if reader.peek() != "":
        return None  # anything after the document
    if "events" in rest:
        return None  # `events` that is not a list: the schema's to report
    return rest, sink.seed() if sink is not None else SeedEvents()


def _read_block_yaml(
    stream: TextIO, event_check: SchemaCheck, workers: int, expected: int
) -> tuple[dict[str, Any], SeedEvents] | None:
    """Plain block-style YAML: the `events:` sequence a batch of items at a time (scenarios/yaml_blocks.py), each batch
    read by the same fast reader as a whole file, with the same refusals; then the rest of the document."""
    sink = Sink(event_check, expected)
    batches = Batches(sink, event_check, workers)
    try:
        rest_text = split_events(stream, lambda text: batches.submit("yaml", text), BATCH_CHARS)
        batches.finish()
    finally:
        batches.close()
    document = read_fast_yaml(rest_text)
    if document is None or type(document.data) is not dict:
        return None
    rest = document.data
    if batches.submitted:
        if "events" not in rest or rest.pop("events") is not None:
            return None
    elif "events" in rest:
        return None  # events written some other way: read whole
    return rest, sink.seed()


def read_lean(path: Path, event_check: SchemaCheck) -> tuple[dict[str, Any], SeedEvents] | None:
    """A valid file, in JSON syntax or plain block-style YAML, as (the document without its events, the seed
    of its events); or None: then the full path must read it. The caller checks the rest of the document."""
    try:
        workers = workers_for(path.stat().st_size)
        try:
            return _read(path, event_check, workers)
        except BrokenProcessPool:  # a worker died (killed, out of memory): the same file without workers
            return _read(path, event_check, 0) if workers else None
    except (GiveUp, NotBlockLayout, DuplicateKey, OSError, UnicodeDecodeError, ValueError, RecursionError):
        return None  # ValueError: an event key twice, or not JSON


def _read(path: Path, event_check: SchemaCheck, workers: int) -> tuple[dict[str, Any], SeedEvents] | None:
    with path.open(encoding="utf-8") as stream:
        head = stream.read(CHUNK)
        stream.seek(0)
        reader = _read_json if head.lstrip(" \t\n\r").startswith("{") else _read_block_yaml
        return reader(stream, event_check, workers, path.stat().st_size // BYTES_PER_EVENT)
