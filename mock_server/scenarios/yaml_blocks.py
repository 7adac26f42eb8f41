"""A block-style YAML scenario cut into pieces by its lines: the items of its top-level `events:` sequence, a
batch at a time, and the rest of the document.

Parsed whole, a 1M-event YAML file took 44 s and a 5.5 GB peak: rapidyaml's tree of the whole file, its JSON
text and the parsed dicts were all alive at once. Cut along the lines where the `events:` sequence starts its
items, each batch is an ordinary YAML document of its own (a block sequence), parsed, checked and packed while
the next one is still unread: the peak is the packed seed plus a batch.

Only the lines are looked at, never the meaning: a cut is made before a line that is the sequence's dash at
the sequence's own indentation, and the events block ends at the first line with content less indented (or,
for a sequence at column 0, a line at column 0 that is not one of its dashes). Every piece is then parsed on
its own by the caller with the same fast reader and the same refusals as a whole file (scenarios/text.py);
whatever the cut gets wrong makes a piece that does not parse (a quoted or flow text cut in two is left
open), or reads differently, which the caller's checks refuse: the full path then reads the whole file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TextIO

BLOCK = 1 << 22  # characters read at a time
BATCH_CHARS = 1 << 20  # text parsed at a time (about 1,800 events): per-batch costs vanish, the peak stays small
_EVENTS_KEY = re.compile(r"^events:[ ]*\n", re.MULTILINE)
_CONTENT_LINE = re.compile(r"^( *)(\S)", re.MULTILINE)


class NotBlockLayout(Exception):
    """The text is not laid out as this reader expects; the whole file must be read another way."""


def _block_end(indent: int) -> re.Pattern[str]:
    """A line that ends the sequence: content less indented than its dashes, or at their indentation but not
    one of them (`-x`, `key:`). Starting with the newline, the search runs at the speed of a scan for it."""
    if indent == 0:
        return re.compile(r"\n(?:[^ \n-]|-[^ \n])")
    return re.compile(rf"\n(?: {{0,{indent - 1}}}[^ \n]| {{{indent}}}(?:[^ \n-]|-[^ \n]))")


class _Splitter:
    def __init__(self, on_batch: Callable[[str], None], batch_chars: int) -> None:
        self._on_batch = on_batch
        self._batch_chars = batch_chars
        self._rest: list[str] = []
        self._state = "before"  # -> "indent" (after `events:`) -> "items" -> "after"
        self._end: re.Pattern[str] | None = None
        self._indent = 0
        self._dash = ""
        self._batch: list[str] = []  # text of the batch being gathered
        self._gathered = 0  # its length

    def lines(self, text: str) -> None:
        """Whole lines, in order."""
        at = 0
        while at < len(text):
            if self._state == "before":
                found = _EVENTS_KEY.search(text, at)
                if found is None:
                    self._rest.append(text[at:])
                    return
                self._rest.append(text[at : found.end()])
                self._state, at = "indent", found.end()
            elif self._state == "indent":
                content = _CONTENT_LINE.search(text, at)
                if content is None:
                    return  # blank lines only, so far
                if content.group(2) != "-":
                    raise NotBlockLayout  # `events:` followed by anything but a block sequence
                self._indent = len(content.group(1))
                self._end = _block_end(self._indent)
                self._dash = "\n" + " " * self._indent + "-"
                self._state, at = "items", content.start()
            elif self._state == "items":
                at = self._items_from(text, at)
            else:
                if _EVENTS_KEY.search(text, at):
                    raise NotBlockLayout  # `events:` twice: the full path says so
                self._rest.append(text[at:])
                return

    def _items_from(self, text: str, at: int) -> int:
        """Gather the items from `at` (a line start) to the end of the block or of the text; cut a batch before
        the first dash once it holds `batch_chars` characters (one search a batch, not one an item)."""
        assert self._end is not None
        ended = self._end.match("\n" + text[at : at + self._indent + 2])  # the first line has no newline before it
        end = at - 1 if ended else None
        if end is None:
            found = self._end.search(text, at)
            end = found.start() if found else None
        limit = len(text) if end is None else end + 1
        start = at
        if at == 0 and self._gathered >= self._batch_chars and self._next_dash("\n" + text[: len(self._dash)], 0) == 0:
            self._flush()  # a full batch, and a dash on the text's first line (its newline ended the text before)
        while True:
            dash = self._next_dash(text, max(start, start + self._batch_chars - self._gathered - 1), limit)
            if dash < 0:
                break
            self._batch.append(text[start : dash + 1])
            self._flush()
            start = dash + 1
        self._batch.append(text[start:limit])
        self._gathered += limit - start
        if end is None:
            return limit
        self._flush()
        self._state = "after"
        return limit

    def _next_dash(self, text: str, at: int, limit: int | None = None) -> int:
        """Where the first item's dash line from `at` begins (the position of the newline before it), or -1."""
        while True:
            dash = text.find(self._dash, at, len(text) if limit is None else limit)
            if dash < 0:
                return -1
            after = dash + len(self._dash)
            if text[after : after + 1] in (" ", "\n"):
                return dash
            at = after

    def _flush(self) -> None:
        batch = "".join(self._batch)
        self._batch, self._gathered = [], 0
        if batch:
            self._on_batch(batch)

    def end(self) -> str:
        if self._state == "indent":
            raise NotBlockLayout  # `events:` with nothing after it
        if self._state == "items":
            self._flush()
        return "".join(self._rest)


def split_events(stream: TextIO, on_batch: Callable[[str], None], batch_chars: int = BATCH_CHARS) -> str:
    """Hand the text of the top-level `events:` block sequence to `on_batch` in batches of whole items, each
    cut at the first dash after `batch_chars` characters, in order; return the rest of the document, where
    `events:` is left as a key with no value. NotBlockLayout when `events:` is followed by anything but a block
    sequence, or given twice."""
    splitter = _Splitter(on_batch, batch_chars)
    carry = ""
    while True:
        block = stream.read(BLOCK)
        if not block:
            break
        text = carry + block
        cut = text.rfind("\n") + 1
        splitter.lines(text[:cut])
        carry = text[cut:]
    if carry:
        splitter.lines(carry + "\n")
    return splitter.end()
