"""`mock-server gate pact`: a consumer's Pact file (V2, V3 or V4, as pact-python, pact-js, pact-jvm or this mock's
export write it) checked against the spec, interaction by interaction: the request one the spec accepts, the status
documented for its operation, the response example valid for that status's schema and true to its own matching
rules, and every provider state one the mock knows (admin/provider_states.py)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from mock_server.admin import provider_states
from mock_server.admin.pact_matching import satisfies
from mock_server.domain.errors import FieldPath
from mock_server.gate.calls import CallProblem, GateCall, Locations, pointer, request_problems, response_problems
from mock_server.gate.inputs import GateInputError, read_mapping
from mock_server.spec.openapi import Spec

HTTP_V4 = "Synchronous/HTTP"
MAX_REGEX = 1000  # characters of a matching rule's regex evaluated (a pact is the consumer's, not ours)
_SEGMENT = re.compile(r"\.([^.\[\]]+)|\['([^']*)'\]|\[(\d+|\*)\]")


class PactFileError(GateInputError):
    """A file is JSON but not a pact."""


@dataclass(frozen=True)
class PactInteraction:
    """One HTTP interaction of a pact, read whatever the specification version."""

    index: int
    description: str
    states: tuple[str, ...]
    call: GateCall
    at: Locations
    response_rules: Mapping[str, list[dict[str, Any]]]  # JSONPath under the body -> matchers
    states_at: str


@dataclass
class InteractionVerdict:
    """One interaction's verdict: compatible when it has no problems."""

    file: str
    description: str
    problems: list[CallProblem] = field(default_factory=list)

    @property
    def compatible(self) -> bool:
        return not self.problems


def _version(document: Mapping[str, Any]) -> int:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return 2
    spec = metadata.get("pactSpecification") or metadata.get("pact-specification") or {}
    text = str(spec.get("version", "2")) if isinstance(spec, dict) else "2"
    return int(text[0]) if text[:1].isdigit() else 2


def _headers(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    headers = {}
    for name, value in raw.items():
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        headers[str(name).lower()] = str(value)
    return headers


def _query(raw: Any) -> dict[str, list[str]]:
    if isinstance(raw, str):
        return parse_qs(raw, keep_blank_values=True)
    if isinstance(raw, dict):
        return {str(k): [str(x) for x in v] if isinstance(v, list) else [str(v)] for k, v in raw.items()}
    return {}


def _body(part: Mapping[str, Any], version: int, base: str) -> tuple[Any, bool, str | None, str]:
    """(the body, whether there is one, its content type, its pointer) of a request or response."""
    content_type = _headers(part.get("headers")).get("content-type")
    if "body" not in part or part["body"] is None:
        return None, False, content_type, base + "/body"
    body = part["body"]
    if version >= 4 and isinstance(body, dict) and "content" in body:
        content_type = body.get("contentType") or content_type
        content = body["content"]
        if isinstance(content, str) and content_type and "json" in content_type and not body.get("encoded"):
            with contextlib.suppress(ValueError):  # not JSON after all: checked as the text it is
                content = json.loads(content)
        return content, True, content_type, base + "/body/content"
    return body, True, content_type or "application/json", base + "/body"


def _rules(part: Mapping[str, Any], version: int) -> dict[str, list[dict[str, Any]]]:
    """A response's body matching rules: JSONPath under the body (`$.a[*].b`) -> its matchers."""
    raw = part.get("matchingRules")
    if not isinstance(raw, dict):
        return {}
    found: dict[str, list[dict[str, Any]]] = {}
    if version <= 2:
        for path, rule in raw.items():
            if isinstance(path, str) and path.startswith("$.body") and isinstance(rule, dict):
                found["$" + path[len("$.body") :]] = [rule]
        return found
    body = raw.get("body")
    if isinstance(body, dict):
        for path, rule in body.items():
            if isinstance(rule, dict) and isinstance(rule.get("matchers"), list):
                found[str(path)] = [m for m in rule["matchers"] if isinstance(m, dict)]
    return found


def _states(interaction: Mapping[str, Any]) -> tuple[str, ...]:
    if isinstance(interaction.get("providerStates"), list):
        return tuple(str(s.get("name", "")) for s in interaction["providerStates"] if isinstance(s, dict))
    if isinstance(interaction.get("providerState"), str):
        return (interaction["providerState"],)
    return ()


def read_pact(path: Path) -> list[PactInteraction]:
    """The HTTP interactions of the pact at `path` (its message interactions have no call to check)."""
    _, document = read_mapping(path, "a pact")
    interactions = document.get("interactions")
    if not isinstance(interactions, list):
        raise PactFileError(f"{path}: is not a pact: it has no list of interactions")
    version = _version(document)
    read = []
    for index, raw in enumerate(interactions):
        base = pointer("interactions", index)
        if not isinstance(raw, dict):
            raise PactFileError(f"{path}: interaction {base} is not an object")
        if "type" in raw and raw["type"] != HTTP_V4:
            continue
        request, response = raw.get("request"), raw.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict):
            raise PactFileError(f"{path}: interaction {base} has no request and response objects")
        body, has_body, content_type, body_at = _body(request, version, base + "/request")
        answer, has_answer, _, answer_at = _body(response, version, base + "/response")
        status = response.get("status", 200)
        states_key = "providerStates" if "providerStates" in raw else "providerState"
        read.append(
            PactInteraction(
                index,
                str(raw.get("description", f"interaction {index}")),
                _states(raw),
                GateCall(
                    method=str(request.get("method", "GET")).upper(),
                    path=str(request.get("path", "/")),
                    query=_query(request.get("query")),
                    headers=_headers(request.get("headers")),
                    body=body,
                    has_body=has_body,
                    content_type=content_type,
                    status=status if isinstance(status, int) and not isinstance(status, bool) else None,
                    response_body=answer,
                    has_response_body=has_answer,
                ),
                Locations(
                    method=base + "/request/method",
                    path=base + "/request/path",
                    query=base + "/request/query",
                    headers=base + "/request/headers",
                    body=body_at,
                    status=base + "/response/status",
                    response_body=answer_at,
                ),
                _rules(response, version),
                base + "/" + states_key,
            )
        )
    return read


def _walk(value: Any, json_path: str) -> Iterator[tuple[Any, FieldPath]]:
    """The values a simple JSONPath (`$.a.b`, `$['a'][0]`, `$.a[*].b`, `$.a.*`) selects, with their fields."""
    if not json_path.startswith("$"):
        return
    rest = json_path[1:]
    parts: list[str | int | None] = []  # None: every member
    position = 0
    while position < len(rest):
        found = _SEGMENT.match(rest, position)
        if found is None:
            return  # a JSONPath this check does not read: the rule is left alone
        name, quoted, index = found.groups()
        if name == "*" or index == "*":
            parts.append(None)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(name if name is not None else quoted)
        position = found.end()
    selected: list[tuple[Any, FieldPath]] = [(value, ())]
    for part in parts:
        following: list[tuple[Any, FieldPath]] = []
        for node, at in selected:
            if part is None:
                items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
                following.extend((child, (*at, key)) for key, child in items)
            elif _has(node, part):
                following.append((node[part], (*at, part)))
        selected = following
    yield from selected


def _has(node: Any, part: str | int) -> bool:
    """Whether a list has item `part` (an index) or an object member `part` (a name)."""
    if isinstance(part, int):
        return isinstance(node, list) and part < len(node)
    return isinstance(node, dict) and part in node


def _rule_problems(interaction: PactInteraction) -> list[CallProblem]:
    """Where the response example breaks its own matching rules: the provider is asked for what the example shows
    only as the rules read it, so an example its rules refuse is a contract nobody can meet."""
    problems = []
    for json_path, matchers in interaction.response_rules.items():
        for matcher in matchers:
            kind = matcher.get("match")
            if kind == "regex" and (not isinstance(matcher.get("regex"), str) or len(matcher["regex"]) > MAX_REGEX):
                continue
            if kind not in ("regex", "integer"):
                continue
            for value, at in _walk(interaction.call.response_body, json_path):
                try:
                    ok = satisfies(value, {"matchers": [matcher]})
                except re.error:
                    ok = True  # a regex Python reads otherwise than the pact's engine: not this gate's verdict
                if not ok:
                    where = interaction.at.response_body + pointer(*at)
                    problems.append(
                        CallProblem(f"the response example breaks its own {kind} rule at {json_path}", where)
                    )
    return problems


def check_interaction(spec: Spec, interaction: PactInteraction, file: str) -> InteractionVerdict:
    verdict = InteractionVerdict(file, interaction.description)
    for number, name in enumerate(interaction.states):
        if name and provider_states.kind_of(name) is None:
            where = interaction.states_at + (f"/{number}/name" if interaction.states_at.endswith("s") else "")
            verdict.problems.append(CallProblem(f"the provider state {name!r} is not one the mock knows", where))
    operation, problems = request_problems(spec, interaction.call, interaction.at)
    verdict.problems.extend(problems)
    if operation is not None:
        verdict.problems.extend(response_problems(operation, interaction.call, interaction.at))
        verdict.problems.extend(_rule_problems(interaction))
    return verdict


def check_pact(spec: Spec, path: Path) -> list[InteractionVerdict]:
    """Every HTTP interaction of the pact at `path`, judged against `spec`; GateInputError when unreadable."""
    return [check_interaction(spec, interaction, str(path)) for interaction in read_pact(path)]
