"""The `--noise FILE` of verify-provider: per operation, the fields never compared (JSON pointers, or regular
expressions searched in a field's pointer).

    # noise.yaml: keys are operationIds, or "*" for every operation
    "*":
      pointers: [/event_date]
    getExtraordinaryEvent:
      patterns: ["^/event_conciliation_list/[0-9]+/installment_key$"]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import yaml

from mock_server.domain.answers import Noise

EVERY_OPERATION = "*"
KEYS = ("pointers", "patterns")


class NoiseFileError(Exception):
    """The noise file cannot be read or says something it should not; the message names the file."""


def _strings(path: Path, where: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise NoiseFileError(f"{path}: {where} must be a list of strings")
    return list(value)


def read_noise(path: Path, operations: Iterable[str]) -> dict[str, Noise]:
    """Noise per operationId (and EVERY_OPERATION), as the file says; NoiseFileError when it is not right."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise NoiseFileError(f"{path}: cannot be read: {exc}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise NoiseFileError(f'{path}: must be a mapping of operationId (or "*") to {{pointers, patterns}}')
    known = {*operations, EVERY_OPERATION}
    noise: dict[str, Noise] = {}
    for operation, entry in document.items():
        if operation not in known:
            raise NoiseFileError(f"{path}: {operation!r} is not an operationId (one of {', '.join(sorted(known))})")
        if not isinstance(entry, dict) or not set(entry) <= set(KEYS):
            raise NoiseFileError(f"{path}: {operation} must be a mapping with pointers and/or patterns")
        pointers = _strings(path, f"{operation}.pointers", entry.get("pointers", []))
        for text in pointers:
            if text and not text.startswith("/"):
                raise NoiseFileError(f"{path}: {operation}.pointers: {text!r} is not a JSON pointer (starts with /)")
        patterns = []
        for text in _strings(path, f"{operation}.patterns", entry.get("patterns", [])):
            try:
                patterns.append(re.compile(text))
            except re.error as exc:
                raise NoiseFileError(
                    f"{path}: {operation}.patterns: {text!r} is not a regular expression: {exc}"
                ) from None
        noise[operation] = Noise(frozenset(pointers), tuple(patterns))
    return noise
