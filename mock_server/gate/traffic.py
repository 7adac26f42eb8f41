"""Recorded calls (a Pact file, or the journal as `GET /__mock/requests` exports it: a record session's calls are
its journal) replayed through the new spec's validation, and the breaking changes each one meets: the consumer
impact of a spec change, call by call."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from mock_server.gate.calls import CallProblem, GateCall, Locations, match_operation, pointer, request_problems
from mock_server.gate.diff import SpecChange
from mock_server.gate.inputs import GateInputError, read_document
from mock_server.gate.pact import read_pact
from mock_server.spec.openapi import Spec

# Where a replayed call's problems are placed: pointers into the call itself, which a change's `target` names too.
IN_CALL = Locations("/method", "/path", "/query", "/headers", "/body", "/status", "/response/body")


@dataclass(frozen=True)
class RecordedCall:
    name: str  # how the report names it: its file and where in it, its method, path and status
    call: GateCall


@dataclass
class Impact:
    """What the new spec does to the recorded calls."""

    by_change: dict[SpecChange, list[RecordedCall]] = field(default_factory=dict)
    rejected: list[tuple[RecordedCall, CallProblem]] = field(default_factory=list)  # refused, by no change listed
    replayed: int = 0
    not_operations: int = 0  # calls of no operation of the old spec (admin calls, typos): not the client's contract

    @property
    def broken(self) -> set[str]:
        names = {c.name for calls in self.by_change.values() for c in calls}
        return names | {c.name for c, _ in self.rejected}


def _journal_call(path: Path, index: int, entry: Mapping[str, Any]) -> RecordedCall | None:
    if entry.get("injected") or entry.get("status") is None or entry.get("truncated"):
        return None  # the mock's own fault, no answer, or a body cut: not a call the client's contract made
    raw_path = str(entry.get("path", "/"))
    route, _, query = raw_path.partition("?")
    raw_headers = entry.get("request_headers")
    headers: dict[str, Any] = raw_headers if isinstance(raw_headers, dict) else {}
    body = entry.get("request_body")
    answer = entry.get("response_body")
    call = GateCall(
        method=str(entry.get("method", "GET")).upper(),
        path=route,
        query=parse_qs(query, keep_blank_values=True),
        headers={str(k).lower(): str(v) for k, v in headers.items()},
        body=body,
        has_body=body is not None,
        content_type=headers.get("content-type"),
        status=entry["status"] if isinstance(entry["status"], int) else None,
        response_body=answer,
        has_response_body=answer is not None,
    )
    return RecordedCall(f"{path}#{pointer('requests', index)} {call.method} {raw_path} -> {call.status}", call)


def read_traffic(path: Path) -> list[RecordedCall]:
    """The calls a traffic file holds: a pact's interactions, or a journal's entries."""
    _, document = read_document(path)
    if isinstance(document, dict) and "interactions" in document:
        return [
            RecordedCall(f'{path} "{i.description}" {i.call.method} {i.call.path} -> {i.call.status}', i.call)
            for i in read_pact(path)
        ]
    entries = document.get("requests") if isinstance(document, dict) else document
    if not isinstance(entries, list) or not all(isinstance(e, dict) and "method" in e and "path" in e for e in entries):
        raise GateInputError(
            f"{path}: is neither a pact (interactions) nor a journal (GET /__mock/requests: requests with method, path)"
        )
    calls = (_journal_call(path, index, entry) for index, entry in enumerate(entries))
    return [call for call in calls if call is not None]


def _parts(where: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in where.split("/")[1:]]


def _overlap(problem: str, target: str) -> bool:
    """Whether a problem's place and a change's target are one within the other (`*` is any item)."""
    found, wanted = _parts(problem), _parts(target)
    if not wanted:
        return False
    if found and found[0] == "headers":
        found = [found[0], *(p.lower() for p in found[1:2]), *found[2:]]
    return all(a == b or b == "*" or a == "*" for a, b in zip(found, wanted, strict=False))


def _present(call: GateCall, target: str, response: bool = False) -> bool:
    """Whether the call carries what `target` names (in its answer when `response`)."""
    parts = _parts(target)
    if not parts:
        return False
    if parts[0] == "query":
        return len(parts) > 1 and parts[1] in call.query
    if parts[0] == "headers":
        return len(parts) > 1 and parts[1].lower() in call.headers
    if parts[0] != "body":
        return False
    has, body = (call.has_response_body, call.response_body) if response else (call.has_body, call.body)
    if not has:
        return False
    nodes = [body]
    for part in parts[1:]:
        following: list[Any] = []
        for node in nodes:
            if part == "*" and isinstance(node, list):
                following.extend(node)
            elif isinstance(node, dict) and part in node:
                following.append(node[part])
        nodes = following
    return bool(nodes)


def _meets(change: SpecChange, call: GateCall, problems: Sequence[CallProblem]) -> bool:
    if change.side in ("operation", "security"):
        return True
    if change.side == "response":
        if change.status is not None and str(call.status) != change.status:
            return False
        return not change.target or _present(call, change.target, response=True)
    if any(_explains(change, p) for p in problems):
        return True
    return bool(change.renamed_to) and _present(call, change.target)


def _explains(change: SpecChange, problem: CallProblem) -> bool:
    if change.side in ("operation", "security"):
        return True
    return any(_overlap(problem.where, target) for target in (change.target, change.renamed_to) if target)


def replay(old: Spec, new: Spec, changes: Iterable[SpecChange], calls: Iterable[RecordedCall]) -> Impact:
    """Which recorded calls each breaking change breaks; and the calls the new spec refuses for no listed change."""
    impact = Impact()
    by_operation: dict[str, list[SpecChange]] = {}
    for change in changes:
        if change.breaking:
            by_operation.setdefault(change.operation, []).append(change)
            impact.by_change.setdefault(change, [])
    for recorded in calls:
        operation, _, _ = match_operation(old, recorded.call.method, recorded.call.path)
        if operation is None:
            impact.not_operations += 1
            continue
        impact.replayed += 1
        _, problems = request_problems(new, recorded.call, IN_CALL)
        explained = set()
        for change in by_operation.get(f"{operation.method} {operation.path}", []):
            if _meets(change, recorded.call, problems):
                impact.by_change[change].append(recorded)
                explained |= {p for p in problems if _explains(change, p)}
        impact.rejected.extend((recorded, p) for p in problems if p not in explained)
    return impact
