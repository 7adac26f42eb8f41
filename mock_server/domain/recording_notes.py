"""What record mode says of a call it could not record, or of an answer it would not give byte for byte, in words
that name no original identifier and quote none of the target's bytes (a CPF may sit in any field of an answer):
where the answers part as a byte offset and a JSON path, a call's account by its pseudonym, a failure by its kind.

Pure: the recorder (http/record.py) writes the notes these make."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container, Sequence
from typing import Any

from mock_server.domain.errors import ApiError

# A key the mock looked for and did not find is named when it reads as one of the interface's field names; any
# other (a target's recipient id, say) is only counted as missing.
_FIELD_NAME = re.compile(r"[a-z][a-z_]{0,63}")
LONGEST_SHOWN_ID = 64  # characters: a longer account id (a request may send any) is said by its length
# The scenario checks' rules that follow the value they quote (`1.234 has more than two decimal places`).
_VALUE_FREE_RULES = re.compile(r"has more than two decimal places|appears more than once|is more than [a-z_]+")
UNKNOWN_FIELD = "is not a known field"  # the scenario checks' message for a key the interface does not name
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def fields_of(value: Any) -> set[str]:
    """Every key of every object within `value` (the mock's own rendering: the interface's field names)."""
    found: set[str] = set()
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            found.update(k for k in item if isinstance(k, str))
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return found


def json_path_at(text: bytes, offset: int, named: Container[str]) -> str:
    """The JSON path (`$.a[2].b`) of the innermost value or key that `text`, a JSON document, holds at byte
    `offset`. Keys in `named` are written as they are; any other is written `<field N>` (its place in its object,
    from 1), as a key of the target's may itself be an identifier."""
    path: list[str | int | None] = []  # per open container: its current key (None before the first) or index
    places: list[int] = []  # per open object: how many keys were read in it
    containers: list[int] = []
    index = 0
    end = min(offset, len(text))
    while index < end:
        char = text[index]
        if char == _QUOTE:
            close = index + 1
            while close < len(text) and text[close] != _QUOTE:
                close += 2 if text[close] == _BACKSLASH else 1
            if containers and containers[-1] == ord("{") and path[-1] is None:
                places[-1] += 1
                key = _key(text[index : close + 1])
                path[-1] = key if key is not None and key in named else f"<field {places[-1]}>"
            index = close + 1
            continue
        if char in b"{[":
            containers.append(char)
            path.append(None if char == ord("{") else 0)
            if char == ord("{"):
                places.append(0)
        elif char in b"}]" and containers:
            if containers.pop() == ord("{"):
                places.pop()
            path.pop()
        elif char == ord(",") and containers:
            current = path[-1]
            path[-1] = current + 1 if isinstance(current, int) else None
        index += 1
    shown = "$"
    for part in path:
        if isinstance(part, int):
            shown += f"[{part}]"
        elif part is not None:
            shown += f".{part}"
    return shown


def _key(quoted: bytes) -> str | None:
    try:
        key = json.loads(quoted)
    except ValueError:
        return None
    return key if isinstance(key, str) else None


def where_they_part(theirs: bytes, mine: bytes, mine_decoded: Any) -> str:
    """Why the mock's bytes for an event are not the target's: the first byte where they part and the JSON path
    there in the target's answer, never the bytes themselves."""
    at = next((i for i, (a, b) in enumerate(zip(theirs, mine, strict=False)) if a != b), min(len(theirs), len(mine)))
    return (
        f"the target's answer ({len(theirs)} bytes) and the mock's ({len(mine)} bytes) part at byte {at}, "
        f"at {json_path_at(theirs, at, fields_of(mine_decoded))} of the target's answer"
    )


def failure_words(exc: BaseException) -> str:
    """What was wrong with a call that could not be recorded, in words: the kind of problem and the field the
    mock looked for when it is one of the interface's, never a value."""
    if isinstance(exc, KeyError):
        missing = exc.args[0] if exc.args else None
        if isinstance(missing, str) and _FIELD_NAME.fullmatch(missing):
            return f"the field {missing} is missing"
        return "a field it needs is missing"
    if isinstance(exc, ApiError):
        return f"the mock cannot hold what the target showed ({exc.code})"
    if isinstance(exc, (TypeError, AttributeError)):
        return "a field holds a value of another type than the interface's"
    return "a field holds a value the interface does not allow"


def field_path(path: Sequence[str | int]) -> str:
    """A path within a target's answer as a note writes it (`$.event_conciliation_list[0].status`): a key that
    reads as a field name (lower-case letters and `_`, as every name of the interface) as it is, any other (which
    may itself be an identifier) as `<field>`."""
    shown = "$"
    for part in path:
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            shown += f".{part}" if _FIELD_NAME.fullmatch(part) else ".<field>"
    return shown


def problem_words(message: str) -> str:
    """A scenario check's message without the value it quotes: `must be a string (got 5)` -> `must be a string`,
    `'x' is not one of a, b` -> `must be one of a, b` (the allowed values are the interface's)."""
    if message.startswith(UNKNOWN_FIELD):
        return "is not a field of the interface"
    if message.startswith(("must ", "is required")):
        return re.split(r" \(got |; ", message, maxsplit=1)[0]
    _, one_of, allowed = message.rpartition(" is not one of ")
    if one_of:
        return f"must be one of {allowed}"
    rule = _VALUE_FREE_RULES.search(message)
    return rule.group(0) if rule else "holds a value the interface does not allow"


def account_shown(account_id: str, pseudonym: Callable[[str], str] | None) -> str:
    """An account id as a note names it: its pseudonym (as the file and the map write it), or, with
    `--keep-identifiers` (`pseudonym` None), as it is; a longer one than any account id by its length."""
    if len(account_id) > LONGEST_SHOWN_ID:
        return f"an account id of {len(account_id)} characters"
    return pseudonym(account_id) if pseudonym is not None else account_id
