"""The named examples of a spec, paired as Specmatic pairs them: one request and one response per name.

Specmatic builds one test per example name: the request from the parameter and body examples of that name, the
expected status from the response that has an example of that name (a bodiless status such as 204 takes the one
request example left without a response example). Used by tests/contract/test_spec_examples.py, which replays
every pair, and by scripts/interop.py, which injects the faults the 409 (capacity_exceeded), 413, 415 and 500
examples rely on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")

# Statuses no example request can provoke (a browser's call from another origin, a body over 1 MiB, a media type the
# operation does not take, a server fault, a session filled to its bound): their examples name an X-Mock-Session in
# which a fault of that status is injected first. A 409 example that names no session (account_already_registered)
# is provoked as it is.
FAULTED_STATUSES = frozenset({"403", "409", "413", "415", "429", "500"})


@dataclass
class Pair:
    """One example name of one operation: the request it builds and the response it expects."""

    operation_id: str
    method: str
    path: str
    name: str
    path_params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    has_body: bool = False
    status: str | None = None  # None: no response example of this name
    response: Any = None

    @property
    def has_request(self) -> bool:
        return bool(self.path_params or self.headers or self.has_body)

    def url(self) -> str:
        url = self.path
        for param, value in self.path_params.items():
            url = url.replace("{" + param + "}", quote(value, safe=""))
        return url

    @property
    def faulted_session(self) -> str | None:
        """The session whose injected fault answers this example, if it is one of those."""
        return self.headers.get("X-Mock-Session") if self.status in FAULTED_STATUSES else None


def resolved(document: dict[str, Any], node: Any) -> Any:
    """`node` with its `$ref`s followed; only references inside `document` (the public spec, a served spec)."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise ValueError(f"not a reference inside the document: {ref!r}")
        node = document
        for part in ref[2:].split("/"):
            node = node[unquote(part).replace("~1", "/").replace("~0", "~")]
    return node


def operations(document: dict[str, Any]) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(operationId, METHOD, path, operation object) in document order."""
    for path, item in document["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                yield item[method]["operationId"], method.upper(), path, item[method]


def _example_values(document: dict[str, Any], examples: dict[str, Any]) -> dict[str, Any]:
    return {name: resolved(document, example)["value"] for name, example in examples.items()}


@dataclass
class _PairsOf:
    """The pairs of one operation, each made on first mention of its name."""

    named: dict[str, Pair]
    operation_id: str
    method: str
    path: str

    def __call__(self, name: str) -> Pair:
        return self.named.setdefault(name, Pair(self.operation_id, self.method, self.path, name))


def pairs(document: dict[str, Any]) -> dict[str, dict[str, Pair]]:
    """operationId -> example name -> its pair."""
    found: dict[str, dict[str, Pair]] = {}
    for operation_id, method, path, op in operations(document):
        named: dict[str, Pair] = {}
        pair = _PairsOf(named, operation_id, method, path)

        for raw in op.get("parameters", []):
            param = resolved(document, raw)
            for name, value in _example_values(document, param.get("examples", {})).items():
                if param["in"] == "path":
                    pair(name).path_params[param["name"]] = value
                elif param["in"] == "header":
                    pair(name).headers[param["name"]] = value
        if "requestBody" in op:
            media = resolved(document, op["requestBody"])["content"]["application/json"]
            for name, value in _example_values(document, media.get("examples", {})).items():
                pair(name).body, pair(name).has_body = value, True
        for status, raw in op["responses"].items():
            for media in resolved(document, raw).get("content", {}).values():
                for name, value in _example_values(document, media.get("examples", {})).items():
                    pair(name).status, pair(name).response = str(status), value
        found[operation_id] = named
    return found


def all_pairs(document: dict[str, Any]) -> list[Pair]:
    return [pair for named in pairs(document).values() for pair in named.values()]


def faults_to_inject(document: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(session, operationId, status) of every fault the faulted examples rely on."""
    return sorted(
        {
            (pair.faulted_session, pair.operation_id, int(pair.status))
            for pair in all_pairs(document)
            if pair.faulted_session is not None and pair.status is not None
        }
    )


def pairing_problems(document: dict[str, Any]) -> list[str]:
    """What Specmatic would refuse or skip: an example name without its other half, a status without a pair."""
    problems = []
    by_operation = pairs(document)
    for operation_id, _, _, op in operations(document):
        named = by_operation[operation_id]
        statuses = {str(s): bool(resolved(document, raw).get("content")) for s, raw in op["responses"].items()}
        for name, pair in named.items():
            if pair.status is not None and not pair.has_request:
                problems.append(f"{operation_id}: response example {name!r} has no request example of that name")
        covered = {pair.status for pair in named.values() if pair.status is not None}
        unanswered = sorted(pair.name for pair in named.values() if pair.status is None)
        bodyless = [status for status, has_content in statuses.items() if not has_content]
        for status in statuses:
            if status not in covered and not (status in bodyless and len(unanswered) == 1):
                problems.append(f"{operation_id}: status {status} has no named example pair")
        if len(unanswered) > len(bodyless):
            problems.append(f"{operation_id}: request examples {unanswered} have no response example of their name")
    return problems
