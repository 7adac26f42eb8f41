"""Verification: did the journal see the calls a test expected, as many times as it expected?

Pure: an `Expectation` is judged against journal entries (the admin spec's JournalEntry shape).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mock_server.domain.documents import canonical_document, is_valid_document
from mock_server.domain.errors import Detail
from mock_server.domain.matching import contains

ABSENT: Any = object()  # no body pattern was given (a pattern of `null` is a pattern: "sent no body")


@dataclass(frozen=True, slots=True)
class Expectation:
    operation_id: str
    status: int | None = None
    body: Any = ABSENT  # a JSON subset of the request body
    at_least: int = 1
    at_most: int | None = None
    client_cnpj: Any = ABSENT  # the bare CNPJ of the client certificate; None: called with no certificate

    def matches(self, entry: dict[str, Any]) -> bool:
        return (
            entry["operation_id"] == self.operation_id
            and (self.status is None or entry["status"] == self.status)
            and (self.body is ABSENT or contains(self.body, entry["request_body"]))
            and (self.client_cnpj is ABSENT or _certificate_cnpj(entry) == self.client_cnpj)
        )

    def allows(self, count: int) -> bool:
        return count >= self.at_least and (self.at_most is None or count <= self.at_most)

    def describe(self) -> str:
        """`addRecipient with status 201 and a body containing {...}, exactly 1 time`."""
        what = self.operation_id
        conditions = []
        if self.status is not None:
            conditions.append(f"status {self.status}")
        if self.body is not ABSENT:
            conditions.append(f"a request body containing {_compact(self.body)}")
        if self.client_cnpj is not ABSENT:
            certificate = "no client certificate" if self.client_cnpj is None else f"client CNPJ {self.client_cnpj}"
            conditions.append(certificate)
        if conditions:
            what += " with " + " and ".join(conditions)
        return f"{what}, {self.count_words()}"

    def count_words(self) -> str:
        if self.at_most == self.at_least:
            return f"exactly {_times(self.at_least)}"
        if self.at_most is None:
            return f"at least {_times(self.at_least)}"
        if self.at_least == 0:
            return f"at most {_times(self.at_most)}"
        return f"from {self.at_least} to {_times(self.at_most)}"


def _certificate_cnpj(entry: dict[str, Any]) -> str | None:
    certificate = entry.get("client_certificate")
    return None if certificate is None else certificate["cnpj"]


def _times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def expectation_from(body: dict[str, Any]) -> tuple[Expectation | None, list[Detail]]:
    """The expectation a verify request states, or the problems the schema cannot say: `times` with
    `at_least`/`at_most`, both body patterns, `at_least` above `at_most`."""
    problems: list[Detail] = []
    times, at_least, at_most = body.get("times"), body.get("at_least"), body.get("at_most")
    if times is not None:
        for name in ("at_least", "at_most"):
            if name in body:
                problems.append(Detail((name,), "cannot be given with times (times is exactly that count)"))
        at_least = at_most = times
    elif at_least is not None and at_most is not None and at_least > at_most:
        problems.append(Detail(("at_least",), f"{at_least} is more than at_most {at_most}"))
    if "body_contains" in body and "body_matches" in body:
        problems.append(Detail(("body_matches",), "cannot be given with body_contains (they are one pattern)"))
    client_cnpj = body.get("client_cnpj", ABSENT)
    if isinstance(client_cnpj, str):
        if not is_valid_document(client_cnpj):
            problems.append(Detail(("client_cnpj",), f"is not a valid CNPJ: wrong check digits (got {client_cnpj!r})"))
        client_cnpj = canonical_document(client_cnpj)
    if problems:
        return None, problems
    if at_least is None:
        at_least = 1 if at_most is None else 0
    pattern = body.get("body_contains", body.get("body_matches", ABSENT))
    return Expectation(body["operation_id"], body.get("status"), pattern, at_least, at_most, client_cnpj), []


@dataclass(frozen=True, slots=True)
class ExpectationVerdict:
    holds: bool
    matched: int  # entries matching everything but the count
    calls: list[dict[str, Any]]  # every journaled call of the operation, matching or not

    def message(self, expectation: Expectation) -> str:
        seen = len(self.calls)
        of = f"{seen} call{'s' if seen != 1 else ''} of {expectation.operation_id} journaled"
        verb = "holds" if self.holds else "failed"
        return f"Verification {verb}: expected {expectation.describe()}; {self.matched} matched ({of})."


def judge(expectation: Expectation, entries: Sequence[dict[str, Any]]) -> ExpectationVerdict:
    calls = [e for e in entries if e["operation_id"] == expectation.operation_id]
    matched = sum(1 for e in calls if expectation.matches(e))
    return ExpectationVerdict(expectation.allows(matched), matched, calls)
