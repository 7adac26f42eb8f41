"""Reading a request body into JSON, strictly: every way a body can be bad ends in a contract error."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from mock_server.domain.errors import MalformedJson, UnsupportedMediaType

MAX_BODY_BYTES = 1024 * 1024
# A `\uD800`-`\uDFFF` escape: only then can the parsed text hold a lone surrogate, which is valid JSON
# but cannot be encoded back to UTF-8 (it would fail later, when answering).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
MISSING: Any = object()  # the request carried no body at all (unlike a body of `null`)


def reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _json_fraction(text: str) -> float | int:
    """A JSON number written with a fraction or exponent.

    A float, as json has it, except: beyond a double's range (`1e400`) it would become inf, which no JSON
    answer can carry back (an error); and an integral one from 2**53 to 2**64 (`12345678901234567.0`) would
    lose digits as a float, while JSON Schema counts it an integer and the amounts' bounds (up to 2**63 - 1)
    need it exact: it is kept as the exact int instead. Beyond 2**64 a float is past every bound anyway."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text} is out of the range of a JSON number")
    if _EXACT_FROM <= abs(value) < _EXACT_UNTIL:
        exact = Decimal(text)
        if exact == exact.to_integral_value():
            return int(exact)
    return value


# Built once: json.loads with options builds a new decoder on every call.
_DECODER = json.JSONDecoder(parse_constant=reject_constant, parse_float=_json_fraction)
_EXACT_FROM, _EXACT_UNTIL = 2.0**53, 2.0**64


class DuplicateKey(Exception):
    """A JSON object names one key twice: JSON keeps the last, a scenario file must not let that pass silently."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object hook: the object, or DuplicateKey when a key is given twice."""
    mapping = dict(pairs)
    if len(mapping) != len(pairs):
        raise DuplicateKey
    return mapping


# Scenario files in JSON syntax: numbers as the API reads them, and every key of an object given once.
SCENARIO_JSON = json.JSONDecoder(
    parse_constant=reject_constant, parse_float=_json_fraction, object_pairs_hook=unique_keys
)


def decode_json_text(text: str) -> Any:
    """JSON text as the API reads it: NaN, Infinity and numbers beyond a double's range are ValueErrors.

    A document with no whitespace around it (what clients send) is read by `raw_decode` alone; `decode` adds two
    regular-expression passes for that whitespace and reads anything else, raising what it raises."""
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError:
        return _DECODER.decode(text)
    return value if end == len(text) else _DECODER.decode(text)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any string (key or value) holds a lone surrogate; iterative, as deep as the parser went."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def is_json_media_type(content_type: str) -> bool:
    """`application/json`, parameters allowed; a charset other than UTF-8 is not JSON as RFC 8259 says."""
    if content_type == "application/json":  # what nearly every client sends
        return True
    media_type, _, params = content_type.partition(";")
    if media_type.strip().lower() != "application/json":
        return False
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in ("utf-8", "utf8"):
            return False
    return True


def parse_json(raw: bytes, content_type: str | None) -> Any:
    """The JSON value of a non-empty body, or the contract error saying why there is none."""
    if content_type is None or not is_json_media_type(content_type):
        got = content_type or "no Content-Type"
        raise UnsupportedMediaType(f"Content-Type must be application/json, got {got}.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJson(f"The body is not UTF-8: byte {exc.start} is invalid.") from None
    try:
        value = decode_json_text(text)
    except json.JSONDecodeError as exc:
        raise MalformedJson(f"The body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from None
    except (ValueError, RecursionError) as exc:  # NaN/Infinity, 1e400, integers over Python's digit limit, deep nesting
        reason = str(exc) if isinstance(exc, ValueError) else "nested too deeply"
        raise MalformedJson(f"The body is not acceptable JSON: {reason}.") from None
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise MalformedJson("The body is not acceptable JSON: it holds a lone UTF-16 surrogate escape.")
    return value
