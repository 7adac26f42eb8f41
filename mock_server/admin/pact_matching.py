"""The Pact export's matching rules, drawn from the spec's schemas (`rules_for`): what the provider makes up
(ids, instants, amounts unless the reader asks for exact ones) is matched by format, pattern or type; what the
client sent and the answer echoes, status words and codes stay literal; a rule the value breaks is none."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# Plain strings the provider words or makes up itself: matched by type. Every other plain string (error codes,
# status words, amortization types) is matched literally: a client branches on them.
PROVIDER_WORDED = frozenset({"message"})
PROVIDER_ASSIGNED_SUFFIX = "_id"
UUID_REGEX = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
DATE_REGEX = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATE_TIME_REGEX = "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$"
FORMAT_REGEX = {"uuid": UUID_REGEX, "date": DATE_REGEX, "date-time": DATE_TIME_REGEX}
JSON_MEDIA_TYPE_REGEX = "^application/json(;.*)?$"
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Rule = dict[str, Any]  # {"combine": "AND", "matchers": [...]}


# --- matching rules from the spec ---------------------------------------------------------------------------------


def _flat(schema: Any) -> dict[str, Any]:
    """The schema with its `allOf` members folded in (the inlined spec writes a `$ref` with siblings as one)."""
    if not isinstance(schema, dict):
        return {}
    if "allOf" not in schema:
        return schema
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for member in schema["allOf"]:
        for key, value in _flat(member).items():
            if key == "properties":
                merged["properties"] = {**merged.get("properties", {}), **value}
            else:
                merged.setdefault(key, value)
    return merged


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return {kind} if isinstance(kind, str) else set(kind or ())


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if IDENTIFIER.match(key) else f"{path}['{key}']"


def _matcher(**fields: Any) -> Rule:
    return {"combine": "AND", "matchers": [fields]}


def _scalar_rule(
    name: str | None, value: Any, schema: dict[str, Any], echoes: frozenset[str], numbers: bool = True
) -> Rule | None:
    """The rule of one value, or None to compare it literally."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        if not numbers:
            return None
        return _matcher(match="integer") if "integer" in _types(schema) else _matcher(match="number")
    if not isinstance(value, str) or value in echoes:
        return None
    regex = FORMAT_REGEX.get(schema.get("format", ""))
    if regex is not None:
        return _matcher(match="regex", regex=regex)
    if "pattern" in schema:
        return _matcher(match="regex", regex=schema["pattern"])
    if name is not None and (name in PROVIDER_WORDED or name.endswith(PROVIDER_ASSIGNED_SUFFIX)):
        return _matcher(match="type")
    return None


def satisfies(value: Any, rule: Rule) -> bool:
    """Whether `value` meets its own rule (Pact's regex must match the whole value; an integer is no fraction)."""
    matcher = rule["matchers"][0]
    if matcher["match"] == "regex":
        return isinstance(value, str) and re.fullmatch(matcher["regex"], value) is not None
    if matcher["match"] == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return True


def rules_for(value: Any, schema: Any, echoes: Iterable[str] = (), numbers: bool = True) -> dict[str, Rule]:
    """The body matching rules of `value` under `schema` (an inlined spec schema), by JSONPath: strings in
    `echoes` (what the client sent) are left literal wherever they appear, and so are numbers unless `numbers`.
    A rule the value itself breaks (a refused request's date where a date-time belongs) is no rule of it."""
    rules: dict[str, Rule] = {}
    echoed = frozenset(echoes)

    def walk(value: Any, schema: Any, path: str, name: str | None) -> None:
        flat = _flat(schema)
        if isinstance(value, dict):
            properties = flat.get("properties", {})
            extra = flat.get("additionalProperties")
            for key, item in value.items():
                child = properties.get(key, extra if isinstance(extra, dict) else {})
                if key == "details" and isinstance(item, list) and "code" in value:
                    # An error's details are the provider's own wording of each problem: a list of that shape.
                    rules[_child_path(path, key)] = _matcher(match="type", min=0)
                    continue
                walk(item, child, _child_path(path, key), key)
        elif isinstance(value, list):
            items = flat.get("items", {})
            for index, item in enumerate(value):
                walk(item, items, _child_path(path, index), name)
        else:
            rule = _scalar_rule(name, value, flat, echoed, numbers)
            if rule is not None and satisfies(value, rule):
                rules[path] = rule

    walk(value, schema, "$", None)
    return rules


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
