"""The lean way in for a valid scenario file written in JSON syntax: its events one at a time.

Read whole, a 1M-event file is 585 MB of text and about 2.3 GB of parsed dicts at once (a 2.9 GB peak), and
the allocator keeps about 300 MB of the holes they leave for good. Here the file is read in chunks of text;
the top-level keys other than `events` are decoded whole, and each event is decoded on its own, checked
(the `ScenarioEvent` schema and the event's cross-checks), packed into the seed and dropped. The peak is then
the packed seed plus a chunk.

This path only ever says yes: at the first thing that is not a plainly valid JSON document of valid events
(a problem, a duplicate, a key given twice in any object, a surrogate escape, text that is not JSON...) it
gives up, and the full path (scenarios.py) reads the file again and reports every problem exactly as it
always has. So a valid file is loaded here, and everything else behaves as before.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from .body import SCENARIO_JSON, DuplicateKey
from .events import cross_check_event
from .models import Event
from .seed import SeedEvents
from .shapes import event_from_scenario, uuid_text
from .spec import SchemaCheck

CHUNK = 1 << 20  # characters read at a time
_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's, and only JSON's (the full path decides about any other)
# A \uD800-\uDFFF escape may make a lone surrogate, which the full path reports: it decides.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_EVENT_KEY = "extraordinary_event_conciliation_key"


class _GiveUp(Exception):
    """Not a plainly valid scenario in JSON syntax: the full path reads it."""


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
            raise _GiveUp
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
            raise _GiveUp
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
                raise _GiveUp from None
            # A number may have been cut short at the window's end ("12" of "123"): read on and decode again.
            if end == len(self._text) and self._more():
                continue
            self._at = end
            return value


def _events(reader: _Reader, event_check: SchemaCheck, conciliation_hashes: array[int]) -> Iterator[Event]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.expect("]")
        return
    while True:
        data = reader.value()
        if not isinstance(data, dict) or event_check.problems(data) or cross_check_event(data):
            raise _GiveUp
        conciliation_hashes.extend(
            hash(uuid_text(i["event_conciliation_key"])) for i in data["event_conciliation_list"]
        )
        yield event_from_scenario(data, data[_EVENT_KEY])
        if reader.expect(",", "]") == "]":
            return


def read_lean(path: Path, event_check: SchemaCheck) -> tuple[dict[str, Any], SeedEvents] | None:
    """A file in JSON syntax whose events are all valid, as (the document without its events, the seed of
    its events); or None: then the full path must read it. The caller checks the rest of the document."""
    try:
        with path.open(encoding="utf-8") as stream:
            reader = _Reader(stream)
            if reader.peek() != "{":
                return None
            reader.expect("{")
            rest: dict[str, Any] = {}
            seed: SeedEvents | None = None
            conciliation_hashes = array("q")
            if reader.peek() == "}":
                reader.expect("}")
            else:
                while True:
                    key = reader.value()
                    if not isinstance(key, str) or key in rest or (key == "events" and seed is not None):
                        raise _GiveUp  # not an object key, or given twice (JSON keeps the last: the full path decides)
                    reader.expect(":")
                    if key == "events" and reader.peek() == "[":
                        seed = SeedEvents(_events(reader, event_check, conciliation_hashes))
                    else:
                        rest[key] = reader.value()
                    if reader.expect(",", "}") == "}":
                        break
            if reader.peek() != "":
                return None  # anything after the document
    except (_GiveUp, DuplicateKey, OSError, UnicodeDecodeError, ValueError):  # ValueError: SeedEvents' duplicate key
        return None
    if "events" in rest:
        return None  # `events` that is not a list: the schema's to report
    if len(set(conciliation_hashes)) != len(conciliation_hashes):
        return None  # maybe an event_conciliation_key twice (or two keys of one hash): the full path tells
    return rest, seed if seed is not None else SeedEvents()
