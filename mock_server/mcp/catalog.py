"""What an agent is listed (the presets) and the three tools that reach every operation from the shortest list.

A client sends its model every tool it is listed, schemas included: 52 tools were 118 KB of JSON, and Cursor,
Windsurf and others cut a list past 40-50 tools. So the default list is small: `search_operations`,
`describe_operation` and `call_operation` reach every operation of both specs by its operationId, beside the few
operations an agent calls most as tools of their own (DIRECT: the flow "register an account, propose a limit
change, pay an event, read back what the client did" in docs/mcp.md). `api` lists one tool per public operation,
`all` one per operation of both specs. No list holds an operation answering a page, an asset or a spec (tags
`pages`, `specs`): the specs are resources (mcp/server.py).

Pure: no SDK here, so the lists are measured and tested without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mock_server.domain.errors import Detail, InvalidRequest
from mock_server.mcp.names import ALL_PRESET, API_PRESET, DEFAULT_PRESET, PRESETS
from mock_server.mcp.tools import OUTPUT_SCHEMA, Tool

DEFAULT, API, ALL = DEFAULT_PRESET, API_PRESET, ALL_PRESET
NOT_TOOLS = frozenset({"pages", "specs"})  # tags of operations whose answer is HTML, an asset or a spec
SEARCH, DESCRIBE, CALL = "search_operations", "describe_operation", "call_operation"
OPERATION_ID, QUERY, ARGUMENTS = "operation_id", "query", "arguments"
# The operations an agent needs most, each a tool of its own in the default list (measured: docs/mcp.md).
DIRECT = (
    "registerAccountLimit",
    "createLimitUpdateRequest",
    "mockPayEvent",
    "mockGetAccount",
    "mockAdvanceClock",
    "mockListRequests",
    "mockReset",
)
MAX_QUERY_CHARS = 200
MIN_SHARED_BYTES = 120  # a subschema shorter than this costs less written twice than referred to

_OPERATION_ID_SCHEMA = {
    "type": "string",
    "description": "An operationId of either spec, as search_operations answers it (e.g. mockCreateFault).",
}
META_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    SEARCH: (
        "Find operations of the API and of the mock's test controls by words (id, summary, method, path, tag); "
        "answers their operation_id and summary. Every operation can then be called with call_operation.",
        {
            "type": "object",
            "properties": {
                QUERY: {
                    "type": "string",
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "Words to find, e.g. 'fault', 'pact export', 'snapshot'. Empty: every operation.",
                }
            },
            "required": [QUERY],
            "additionalProperties": False,
        },
    ),
    DESCRIBE: (
        "The input schema of one operation: the arguments call_operation takes for it (path and query parameters "
        "by name, the JSON body as `body`, an optional `session`).",
        {
            "type": "object",
            "properties": {OPERATION_ID: _OPERATION_ID_SCHEMA},
            "required": [OPERATION_ID],
            "additionalProperties": False,
        },
    ),
    CALL: (
        "Call any operation by its operationId with its own arguments (describe_operation gives them); answers "
        "{status, body}: the HTTP status and the answer, as every tool.",
        {
            "type": "object",
            "properties": {
                OPERATION_ID: _OPERATION_ID_SCHEMA,
                ARGUMENTS: {
                    "type": "object",
                    "description": "The operation's arguments by name, its JSON body as `body`; {} when it has none.",
                },
            },
            "required": [OPERATION_ID],
            "additionalProperties": False,
        },
    ),
}


@dataclass(frozen=True, slots=True)
class Listed:
    """One tool as a list shows it: an operation's, or one of the three that reach every operation."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    operation: Tool | None  # None: a meta tool


def preset(name: str, tools: Mapping[str, Tool], public: frozenset[str]) -> list[Listed]:
    """The tools of preset `name` over `tools` (every operation), `public` the public spec's operation ids;
    ValueError naming the presets for another name."""
    if name not in PRESETS:
        raise ValueError(f"unknown tool preset {name!r}: one of {', '.join(PRESETS)}")
    listable = {n: t for n, t in tools.items() if not NOT_TOOLS & set(t.tags)}
    if name == ALL:
        chosen = list(listable)
    elif name == API:
        chosen = [n for n in listable if n in public]
    else:
        chosen = [n for n in DIRECT if n in listable]
    listed = [
        Listed(t.name, t.description, compact(t.input_schema), OUTPUT_SCHEMA, t)
        for t in map(listable.__getitem__, chosen)
    ]
    if name == DEFAULT:
        metas = [Listed(n, words, schema, OUTPUT_SCHEMA, None) for n, (words, schema) in META_TOOLS.items()]
        listed = metas + listed
    return listed


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` as a list shows it: the same rules in fewer bytes. Vendor keys (`x-...`) go; a subschema written
    more than once (the limit windows of five PIX modes) is written once under `$defs` and referred to, as the
    SDK's own servers write nested models."""
    seen: dict[str, int] = {}

    def count(node: Any) -> None:
        if isinstance(node, dict):
            text = json.dumps(node, sort_keys=True)
            seen[text] = seen.get(text, 0) + 1
            for value in node.values():
                count(value)
        elif isinstance(node, list):
            for value in node:
                count(value)

    bare = _without_vendor_keys(schema)
    count(bare)
    defs: dict[str, Any] = {}
    names: dict[str, str] = {}

    def hoisted(node: Any, top: bool = False) -> Any:
        """`node`, a schema, with its repeated subschemas referred to."""
        if not isinstance(node, dict):
            return node
        text = json.dumps(node, sort_keys=True)
        if not top and seen[text] > 1 and len(text) >= MIN_SHARED_BYTES:
            if text not in names:
                names[text] = f"d{len(names)}"
                defs[names[text]] = inside(node)
            return {"$ref": f"#/$defs/{names[text]}"}
        return inside(node)

    def inside(node: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _MAPS_OF_SCHEMAS and isinstance(value, dict):
                out[key] = {name: hoisted(schema) for name, schema in value.items()}
            elif key in _LISTS_OF_SCHEMAS and isinstance(value, list):
                out[key] = [hoisted(schema) for schema in value]
            elif key in _SCHEMAS:
                out[key] = hoisted(value)
            else:  # a value (enum, const, examples, ...) or a word: as it is
                out[key] = value
        return out

    compacted: dict[str, Any] = hoisted(bare, top=True)
    # An argument itself is never only a reference: a client shows its description beside it.
    for name, schema in bare.get("properties", {}).items():
        if isinstance(schema, dict):
            compacted["properties"][name] = inside(schema)
    if defs:
        compacted["$defs"] = defs
    return compacted


_MAPS_OF_SCHEMAS = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs"})
_LISTS_OF_SCHEMAS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMAS = frozenset(
    {"items", "not", "additionalProperties", "unevaluatedProperties", "unevaluatedItems", "contains", "if", "then"}
    | {"else", "propertyNames"}
)


def _without_vendor_keys(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_vendor_keys(v) for k, v in node.items() if not (isinstance(k, str) and k.startswith("x-"))}
    if isinstance(node, list):
        return [_without_vendor_keys(value) for value in node]
    return node


def search(tools: Mapping[str, Tool], arguments: Mapping[str, Any]) -> list[dict[str, str]]:
    """The operations every word of the `query` argument is found in (id, summary, method, path, tags; any
    case), in the specs' order; InvalidRequest for arguments that are not a query."""
    problems = [Detail((name,), "is not an argument of this tool") for name in arguments if name != QUERY]
    query = arguments.get(QUERY)
    if not isinstance(query, str) or len(query) > MAX_QUERY_CHARS:
        problems.append(Detail((QUERY,), f"is required, a string of at most {MAX_QUERY_CHARS} characters"))
    if problems:
        raise InvalidRequest("The tool's arguments cannot make a request.", problems)
    words = str(query).lower().split()
    found = []
    for tool in tools.values():
        text = " ".join((tool.name, tool.description, *tool.tags)).lower()
        if all(word in text for word in words):
            found.append({OPERATION_ID: tool.name, "summary": tool.description})
    return found


def operation_of(tools: Mapping[str, Tool], arguments: Mapping[str, Any], allowed: tuple[str, ...]) -> Tool:
    """The operation `arguments` name; InvalidRequest for an unknown id or argument."""
    problems = [Detail((name,), "is not an argument of this tool") for name in arguments if name not in allowed]
    operation_id = arguments.get(OPERATION_ID)
    if not isinstance(operation_id, str):
        problems.append(Detail((OPERATION_ID,), "is required, a string"))
    elif operation_id not in tools:
        problems.append(Detail((OPERATION_ID,), "is no operation: search_operations lists them"))
    if problems:
        raise InvalidRequest("The tool's arguments cannot make a request.", problems)
    return tools[str(operation_id)]


def described(tool: Tool) -> dict[str, Any]:
    """What describe_operation answers for `tool`."""
    return {
        OPERATION_ID: tool.name,
        "summary": tool.description,
        "method": tool.method,
        "path": tool.path,
        "input_schema": tool.input_schema,
    }
