"""Reading a request body into JSON, strictly: every way a body can be bad ends in a contract error."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

import jsonschema_rs
import orjson

from mock_server.domain.errors import MalformedJson, UnsupportedMediaType

MAX_BODY_BYTES = 1024 * 1024
# Levels of nesting a JSON value may have. The API's deepest body needs 7 (a state document's
# accounts[].recipient_list.limit.pix.transaction[].amount); deeper bodies are refused as malformed_json, as
# scenario files are past the same bound (scenarios/text.py). Unbounded, a body 256 to ~990 levels deep parsed
# (the json module recurses up to Python's recursion limit) and then failed in the schema engine (jsonschema-rs
# stops at 255 levels): a 500 on every JSON route.
MAX_DEPTH = 100
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


def _shallow_schema(limit: int) -> dict[str, Any]:
    """A schema only values at most `limit` levels deep satisfy: level k's items and members must satisfy
    level k - 1, and level 0 is a scalar. A chain of references, never a tree (that would be 2^limit nodes)."""
    levels: dict[str, Any] = {"0": {"not": {"type": ["array", "object"]}}}
    for level in range(1, limit + 1):
        inner = {"$ref": f"#/$defs/{level - 1}"}
        levels[str(level)] = {"items": inner, "additionalProperties": inner}
    return {"$defs": levels, "$ref": f"#/$defs/{limit}"}


_SHALLOW = jsonschema_rs.Draft202012Validator(_shallow_schema(MAX_DEPTH))
# The engine's own bound, a ValueError: it converts a value to its own form recursively, up to 255 levels.
_ENGINE_DEPTH = "Recursion limit"


def nested_too_deep(value: Any) -> bool:
    """Whether `value` nests lists and objects more than MAX_DEPTH levels deep (a scalar is 0 levels, `[]` is
    1). Judged by the schema engine, never by recursion here: a Python walk took 0.7 s for 100k events, this
    0.04 s, and a value as deep as the parser goes is judged in a moment."""
    try:
        return not _SHALLOW.is_valid(value)
    except ValueError as exc:
        if _ENGINE_DEPTH not in str(exc):
            raise
        return True


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


_TOO_DEEP = f"The body is not acceptable JSON: it nests lists and objects deeper than {MAX_DEPTH} levels."
# orjson reads a body as the json module does, in a third of the instructions, but for two kinds of numbers: one
# with a fraction or an exponent (read here by `_json_fraction`'s rules) and an integer beyond 64 bits (orjson makes
# it a float). With its digits written as 0, `.eE` as `.` and `{` as `[` (`_SHAPE`), a body holding either shows
# `0.` or 19 zeros in a row: that body is read by the json module (so is a string that looks alike, such as
# "529.982.247-25": to the same value, only slower). So is every body orjson refuses, to say why in its words.
_SHAPE = bytes.maketrans(b"0123456789.eE{", b"0000000000...[")
_LONG_INTEGER = b"0" * 19


def parse_json(raw: bytes, content_type: str | None) -> Any:
    """The JSON value of a non-empty body, or the contract error saying why there is none."""
    if content_type is None or not is_json_media_type(content_type):
        got = content_type or "no Content-Type"
        raise UnsupportedMediaType(f"Content-Type must be application/json, got {got}.")
    shape = raw.translate(_SHAPE)
    # find(), not `in`: `bytes in bytes` first tries its operand as an integer, and formats and drops a TypeError.
    if shape.find(b"0.") < 0 and shape.find(_LONG_INTEGER) < 0:
        try:
            value = orjson.loads(raw)  # valid UTF-8 and no lone surrogate, or it raises
        except orjson.JSONDecodeError:
            pass
        else:
            # Only a body with more brackets than MAX_DEPTH can nest deeper.
            if shape.count(b"[") > MAX_DEPTH and nested_too_deep(value):
                raise MalformedJson(_TOO_DEEP)
            return value
    return _parse_json(raw)


def _parse_json(raw: bytes) -> Any:
    """A body read by the json module: every number as the API reads it, every refusal in its words."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJson(f"The body is not UTF-8: byte {exc.start} is invalid.") from None
    try:
        value = decode_json_text(text)
    except json.JSONDecodeError as exc:
        raise MalformedJson(f"The body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}.") from None
    except ValueError as exc:  # NaN/Infinity, 1e400, integers over Python's digit limit
        raise MalformedJson(f"The body is not acceptable JSON: {exc}.") from None
    except RecursionError:  # deeper than the parser goes (about 1000 levels)
        raise MalformedJson(_TOO_DEEP) from None
    # Only a body with more brackets than MAX_DEPTH can nest deeper: counting them costs next to nothing.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nested_too_deep(value):
        raise MalformedJson(_TOO_DEEP)
    if _SURROGATE_ESCAPE.search(raw) and _has_lone_surrogate(value):
        raise MalformedJson("The body is not acceptable JSON: it holds a lone UTF-16 surrogate escape.")
    return value
