"""The files a gate reads (specs, pacts, journals), read with bounds: at most MAX_BYTES of a file, JSON or YAML
nested at most MAX_DEPTH deep and MAX_NODES values in all (a YAML alias bomb is many values from few bytes), so an
unreadable or hostile input is one clear line and exit 2, never a traceback or a hang."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mock_server.spec.openapi import fast_safe_loader
from mock_server.wire.files import UnreadableFile, read_bounded

MAX_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 2_000_000


class GateInputError(Exception):
    """A file a gate was given cannot be used; the message names the file and why."""


def _bounded(path: Path, document: Any) -> Any:
    """`document` as it is, once its nesting and its number of values are known to be within the bounds."""
    seen = 0
    pending: list[tuple[Any, int]] = [(document, 0)]
    while pending:
        node, depth = pending.pop()
        seen += 1
        if seen > MAX_NODES:
            raise GateInputError(f"{path}: holds more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise GateInputError(f"{path}: nests lists and objects more than {MAX_DEPTH} deep")
        if isinstance(node, dict):
            pending.extend((value, depth + 1) for value in node.values())
        elif isinstance(node, list):
            pending.extend((value, depth + 1) for value in node)
    return document


def read_text(path: Path) -> str:
    try:
        data = read_bounded(path, MAX_BYTES)
    except UnreadableFile as exc:
        raise GateInputError(str(exc)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GateInputError(f"{path}: is not UTF-8 text (byte {exc.start})") from None


def read_document(path: Path) -> tuple[str, Any]:
    """The file's text and what it holds: JSON when it starts as JSON does, else YAML (safe loader only)."""
    text = read_text(path)
    if text.lstrip()[:1] in ("{", "["):
        try:
            document = json.loads(text, parse_constant=_no_constant)
        except RecursionError:
            raise GateInputError(f"{path}: nests lists and objects more than {MAX_DEPTH} deep") from None
        except ValueError as exc:
            raise GateInputError(f"{path}: is not valid JSON: {exc}") from None
        return text, _bounded(path, document)
    import yaml

    try:
        document = yaml.load(text, Loader=fast_safe_loader())
    except RecursionError:
        raise GateInputError(f"{path}: nests lists and objects more than {MAX_DEPTH} deep") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise GateInputError(f"{path}: is neither JSON nor YAML{at}: {problem}") from None
    return text, _bounded(path, document)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read_mapping(path: Path, what: str) -> tuple[str, dict[str, Any]]:
    text, document = read_document(path)
    if not isinstance(document, dict):
        raise GateInputError(f"{path}: is not {what} (an object at the top)")
    return text, document
