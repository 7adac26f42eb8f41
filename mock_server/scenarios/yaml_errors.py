"""libyaml's refusals in plain words, at the place a person fixes them.

libyaml says what its parser was doing and what it met ("while scanning a simple key ... could not find expected
':'"), placed where it gave up, often the line after the typo. A scenario's author needs what is wrong with the
text and where to look: "expected ':' after 'bar 2'", at the line of `bar 2`. Each message names what libyaml
found (the character, the key, the unclosed bracket and where it opened) and how such text is usually mended; one
that is not known here keeps libyaml's own words. Every message starts with INVALID so a reader can tell a syntax
problem from a data one.
"""

from __future__ import annotations

from typing import Any

import yaml

INVALID = "invalid YAML"
_SHOWN_CHARS = 40  # of a line quoted in a message


def _place(mark: Any) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


def _where(mark: Any) -> str:
    line, column = _place(mark)
    return f"line {line}, column {column}"


def _char_at(text: str, mark: Any) -> str:
    index = getattr(mark, "index", None)
    return text[index] if index is not None and 0 <= index < len(text) else ""


def _line_from(text: str, mark: Any) -> str:
    """The text of the mark's line from the mark on, trimmed and cut short."""
    index = getattr(mark, "index", None)
    if index is None:
        return ""
    rest = text[index:].split("\n", 1)[0].strip()
    return rest if len(rest) <= _SHOWN_CHARS else rest[:_SHOWN_CHARS] + "..."


def _starts_its_line(text: str, mark: Any) -> bool:
    index = getattr(mark, "index", None)
    if index is None:
        return True
    return not text[text.rfind("\n", 0, index) + 1 : index].strip(" -")


def _shown_char(char: str) -> str:
    if char == "\t":
        return "a tab"
    if char and (ord(char) < 0x20 or 0x7F <= ord(char) <= 0x9F):
        return f"the control character U+{ord(char):04X}"
    return repr(char)


def describe(exc: yaml.YAMLError, text: str) -> tuple[tuple[int, int], str]:
    """(line, column) and the message for a YAML syntax error met reading `text`."""
    if isinstance(exc, yaml.reader.ReaderError):
        return _reader_error(exc, text)
    context = str(getattr(exc, "context", None) or "")
    problem = str(getattr(exc, "problem", None) or "")
    context_mark = getattr(exc, "context_mark", None)
    problem_mark = getattr(exc, "problem_mark", None) or context_mark
    found = _char_at(text, problem_mark)

    if "could not find expected ':'" in problem and "simple key" in context:
        key = _line_from(text, context_mark)
        return _place(context_mark), f"{INVALID}: expected ':' after {key!r} (a mapping's lines are `key: value`)"
    if "mapping values are not allowed" in problem:
        return _place(problem_mark), (
            f"{INVALID}: a ': ' is not allowed here: a value that holds ': ' must be in quotes, and a key must be "
            "indented like the keys beside it"
        )
    if "did not find expected key" in problem and "block mapping" in context:
        if not _starts_its_line(text, problem_mark):
            return _place(problem_mark), (
                f"{INVALID}: unexpected {_line_from(text, problem_mark)!r} after the value: put the whole value in "
                "quotes, or start a new line"
            )
        return _place(problem_mark), (
            f"{INVALID}: expected a key here, indented like the mapping that starts at {_where(context_mark)}: "
            "check this line's indentation"
        )
    if "expected '-' indicator" in problem:
        return _place(problem_mark), (
            f"{INVALID}: expected a list item ('- ...') here, indented like the list that starts at "
            f"{_where(context_mark)}: a list cannot also hold `key: value` lines; check the indentation"
        )
    for opening, closing, what in (("[", "]", "list"), ("{", "}", "mapping")):
        if f"expected ',' or '{closing}'" in problem:
            return _place(problem_mark), (
                f"{INVALID}: expected ',' or '{closing}' here: the {what} opened with '{opening}' at "
                f"{_where(context_mark)} is not closed, or two of its items have no ',' between them"
            )
    if "quoted scalar" in context and "end of stream" in problem:
        quote = _char_at(text, context_mark) or '"'
        return _place(context_mark), f"{INVALID}: the text quoted here is never closed: its closing {quote} is missing"
    if "tab character" in problem or (found == "\t" and "cannot start any token" in problem):
        return _place(problem_mark), f"{INVALID}: a tab in the indentation: YAML indents with spaces only"
    if "cannot start any token" in problem:
        return _place(problem_mark), (
            f"{INVALID}: a value cannot start with {_shown_char(found)} (YAML reserves it): put the value in quotes"
        )
    if "undefined alias" in problem:
        alias = _line_from(text, problem_mark).split(" ", 1)[0].rstrip(",]}")
        return _place(problem_mark), (
            f"{INVALID}: the alias {alias} names no anchor (&{alias[1:]}) defined before it; if the '*' is part of "
            "the text, put the value in quotes"
        )
    if "expected alphabetic or numeric character" in problem and ("alias" in context or "anchor" in context):
        sign = _char_at(text, context_mark)
        what = "an alias (*name)" if "alias" in context else "an anchor (&name)"
        return _place(context_mark), (
            f"{INVALID}: {sign!r} starts {what} in YAML, and no name follows it: put the value in quotes if the "
            f"{sign!r} is part of the text"
        )
    if "unknown escape character" in problem:
        escape = _line_from(text, problem_mark)[:2]  # libyaml marks the backslash
        return _place(problem_mark), (
            f"{INVALID}: unknown escape '{escape}' in a double-quoted text: write '\\\\' for a backslash, or use "
            "single quotes"
        )
    if "invalid Unicode character escape code" in problem:
        return _place(problem_mark), (
            f"{INVALID}: a '\\u' escape that names no character (a lone UTF-16 surrogate such as \\ud800 is none)"
        )
    if "duplicate anchor" in context:
        return _place(problem_mark), f"{INVALID}: this anchor is defined twice (first at {_where(context_mark)})"
    if "expected <document start>" in problem or "another document" in problem:
        return _place(problem_mark), (
            f"{INVALID}: a second document starts here (after a '---' or '...' line): a scenario is one document"
        )
    if "expected node content" in problem:
        if found in ",]}":
            return _place(problem_mark), f"{INVALID}: expected a value before {found!r}"
        return _place(problem_mark), (
            f"{INVALID}: a value cannot start with {_shown_char(found)} here: put the value in quotes"
        )
    if "incompatible YAML document" in problem:
        return _place(problem_mark), f"{INVALID}: the %YAML directive asks for a version other than YAML 1.x"
    words = ": ".join(part for part in (context, problem) if part) or str(exc)
    return _place(problem_mark), f"{INVALID}: {words}"


def _reader_error(exc: yaml.reader.ReaderError, text: str) -> tuple[tuple[int, int], str]:
    position = max(0, min(int(exc.position), len(text)))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    character = exc.character if isinstance(exc.character, str) else chr(exc.character)
    return (line, column), (
        f"{INVALID}: {_shown_char(character)} is not allowed in a YAML text: remove it, or write it as an escape "
        "in a double-quoted text"
    )
