"""What the Pact export reads of each journaled call (`JournaledCall`): the provider's records as they stood
before it, the session replayed through the public API's handlers (`Replay`); the provider states it relied on and
the words that describe it, from its operation's declaration (domain/operations.py); and the calls no contract is
drawn from (`_left_out`)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from mock_server.admin import provider_states as states
from mock_server.domain.clock import parse_instant
from mock_server.domain.conversions import account_to_scenario, limits_to_json
from mock_server.domain.documents import canonical_document
from mock_server.domain.errors import ApiError
from mock_server.domain.models import Scenario
from mock_server.domain.operations import Fact, facts_of
from mock_server.http.handling import Call as HandlerCall
from mock_server.http.handling import ServerContext
from mock_server.http.session_url import split_session_path
from mock_server.spec.openapi import Operation
from mock_server.state.ids import IdSource
from mock_server.state.sessions import Session
from mock_server.state.store import Store

# Answers no contract should be drawn from: the server's own bounds and refusals of the transport, not the API's.
BOUND_STATUSES = frozenset({408, 413, 415, 429, 431})
BOUND_CODES = frozenset({"capacity_exceeded"})


# --- the session's records before each call -----------------------------------------------------------------------


class _AnsweredIds(IdSource):
    """The session's ids in a replay: the id the journaled answer showed, so the replayed store holds the same."""

    def __init__(self) -> None:
        super().__init__(None, "")
        self.answered: list[str] = []

    def _handing_out(self, drawn: Callable[[], str]) -> Callable[[], str]:
        def answered_or_drawn() -> str:
            return self.answered.pop() if self.answered else drawn()

        return answered_or_drawn


class Replay:
    """The provider's accounts as they stood before each call: the session's base (its scenario, or the state it
    loaded), with every successful journaled call answered again in turn, by the public API's own handlers, on a
    session of its own, with the ids and instants the journal shows. Changes made through the admin API (a payment,
    a loaded state) are not calls: an event's state is taken from the answer itself, and an account the replay
    lost is named without its facts."""

    def __init__(self, base: Scenario, server: ServerContext) -> None:
        self.server = server
        self.session = Session("pact-replay", base, seed=None, clock_start=None)
        self.ids = self.session.ids = _AnsweredIds()

    @property
    def store(self) -> Store:
        return self.session.store

    def account(self, account_id: str) -> dict[str, Any]:
        """The params of 'account X is registered': its registration date, limits and outcomes, as they are."""
        try:
            account = self.store.account(account_id)
        except ApiError:
            return {"account_id": account_id}
        facts = account_to_scenario(account)
        params = {"account_id": account_id, "registration_date": facts["registration_date"], "limit": facts["limit"]}
        if "outcomes" in facts:
            params["outcomes"] = facts["outcomes"]
        return params

    def recipient_list(self, account_id: str) -> dict[str, Any]:
        try:
            recipient_list = self.store.account(account_id).recipient_list
        except ApiError:
            recipient_list = None
        if recipient_list is None:
            return {"account_id": account_id}
        return {"account_id": account_id, "limit": {"pix": limits_to_json(recipient_list.limits)}}

    def recipient(self, account_id: str, recipient_id: str | None, document_number: str | None) -> dict[str, Any]:
        """The params of a recipient held in the list (found by id, or by document in any layout)."""
        params: dict[str, Any] = {"account_id": account_id}
        try:
            recipient_list = self.store.account(account_id).recipient_list
        except ApiError:
            recipient_list = None
        key = canonical_document(document_number) if document_number else None
        for held in recipient_list.recipients.values() if recipient_list is not None else ():
            if held.recipient_id == recipient_id or (key is not None and held.document_key == key):
                return {**params, "recipient_id": held.recipient_id, "document_number": held.document_number}
        if recipient_id is not None:
            params["recipient_id"] = recipient_id
        if document_number is not None:
            params["document_number"] = document_number
        return params

    def apply(self, call: JournaledCall) -> None:
        """Answer a successful call again as the mock did (its handler, its instant, the id it issued); a call the
        replay cannot follow (the session changed through the admin API meanwhile) is skipped."""
        handler = self.server.public_handlers.get(call.operation_id)
        facts = facts_of(call.operation_id)
        if call.status // 100 != 2 or handler is None or facts is None:
            return
        issued = call.answer.get(facts.issued_id) if facts.issued_id and isinstance(call.answer, dict) else None
        self.ids.answered = [issued] if isinstance(issued, str) else []
        now = parse_instant(call.received_at)
        replayed = HandlerCall(self.server, self.session, dict(call.path), {}, call.body, now)
        try:
            reply = handler(replayed)
        except (ApiError, KeyError, TypeError, ValueError):
            return
        if inspect.iscoroutine(reply):  # no public handler awaits; one that did would not be replayed
            reply.close()


# --- the calls -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JournaledCall:
    """A journaled call the export reads: the entry with its path's parameters and its answer's code."""

    operation_id: str
    method: str
    path_text: str
    path: dict[str, str]
    status: int
    body: Any
    answer: Any
    received_at: str

    @property
    def code(self) -> str | None:
        return self.answer.get("code") if isinstance(self.answer, dict) and self.status >= 400 else None


def _path_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"{(\w+)}", template)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[^/]+)" for i, p in enumerate(parts)))


def _left_out(entry: Mapping[str, Any], operation: Operation | None) -> str | None:
    """Why a journal entry makes no interaction, or None when it does."""
    status = entry["status"]
    if operation is None:
        return "not an operation of the public spec"
    if entry.get("injected"):
        return "an injected fault answered"
    if status is None:
        return "no answer (an injected reset)"
    if entry["method"] == "HEAD":
        return "HEAD (the GET is the contract)"
    if status >= 500:
        return "a server error"
    if status in BOUND_STATUSES:
        return "a refusal of the server's bounds or of the transport"
    answer = entry["response_body"]
    if isinstance(answer, dict) and answer.get("code") in BOUND_CODES:
        return "a refusal of the server's bounds"
    if entry.get("truncated"):
        return "a body over 64 KiB"
    if entry["request_body"] is not None and operation.body is None:
        return "a body the operation takes none of"
    if isinstance(entry["request_body"], str) or (answer is not None and not isinstance(answer, (dict, list))):
        return "a body that is not JSON"
    return None


def _call(entry: Mapping[str, Any], operation: Operation) -> JournaledCall | None:
    # The journal keeps the path as sent: a session named in the URL is no part of the provider's path.
    in_session = split_session_path(entry["path"])
    path = in_session[1] if in_session is not None else entry["path"]
    found = _path_pattern(operation.path).fullmatch(path)
    if found is None:
        return None
    return JournaledCall(
        operation.operation_id,
        entry["method"],
        path,
        {name: unquote(value) for name, value in found.groupdict().items()},
        entry["status"],
        entry["request_body"],
        entry["response_body"],
        entry["received_at"],
    )


# --- provider states and descriptions of each call ----------------------------------------------------------------


@dataclass(frozen=True)
class _FactStates:
    """How one fact (domain/operations.Fact) is a provider state: the kinds it is when held and when absent, and
    the error codes that say which (the absent one ends the facts: nothing further was looked at)."""

    held: Callable[[JournaledCall, Replay, dict[str, str]], dict[str, Any] | None]  # None: the answer shows nothing
    absent: states.StateKind
    absent_code: str | None  # None: no answer says it is absent
    held_code: str | None = None  # a creation refused because the fact holds already


def _subject(call: JournaledCall, fact: Fact) -> dict[str, str] | None:
    """The values that name the record of `fact` in `call` (path first, then the body); None when it names none."""
    body = call.body if isinstance(call.body, dict) else {}
    values = {**{k: v for k, v in body.items() if isinstance(v, str)}, **call.path}
    names = {
        Fact.EVENT: ("extraordinary_event_conciliation_key",),
        Fact.ACCOUNT: ("account_id",),
        Fact.RECIPIENT_LIST: ("account_id",),
        Fact.DOCUMENT: ("account_id", "document_number"),
        Fact.RECIPIENT: ("account_id", "recipient_id"),
    }[fact]
    if any(name not in values for name in names):
        return None
    found = {name: values[name] for name in names}
    if fact is Fact.EVENT:
        return {"key": found.pop("extraordinary_event_conciliation_key")}
    return found


def _event_held(call: JournaledCall, replay: Replay, subject: dict[str, str]) -> dict[str, Any] | None:
    if not isinstance(call.answer, dict):
        return None
    kind = states.EVENT_BY_STATUS.get(call.answer.get("status", ""))
    return kind.state({**subject, **call.answer}) if kind is not None else None


def _document_held(call: JournaledCall, replay: Replay, subject: dict[str, str]) -> dict[str, Any]:
    # Named by the document as sent, which may be another layout of the one held (in the params).
    document = subject["document_number"]
    held = replay.recipient(subject["account_id"], None, document)
    return states.DOCUMENT_HELD.state(held, document_number=document)


FACT_STATES: Mapping[Fact, _FactStates] = {
    Fact.EVENT: _FactStates(_event_held, states.EVENT_ABSENT, "EVC100011"),
    Fact.ACCOUNT: _FactStates(
        lambda call, replay, subject: states.ACCOUNT_REGISTERED.state(replay.account(subject["account_id"])),
        states.ACCOUNT_ABSENT,
        "account_not_found",
        "account_already_registered",
    ),
    Fact.RECIPIENT_LIST: _FactStates(
        lambda call, replay, subject: states.LIST_EXISTS.state(replay.recipient_list(subject["account_id"])),
        states.LIST_ABSENT,
        "recipient_list_not_found",
        "recipient_list_already_exists",
    ),
    Fact.DOCUMENT: _FactStates(_document_held, states.DOCUMENT_ABSENT, None, "recipient_already_in_list"),
    Fact.RECIPIENT: _FactStates(
        lambda call, replay, subject: states.RECIPIENT_HELD.state(
            replay.recipient(subject["account_id"], subject["recipient_id"], None)
        ),
        states.RECIPIENT_ABSENT,
        "recipient_not_found",
    ),
}


def provider_states(call: JournaledCall, replay: Replay) -> list[dict[str, Any]]:
    """The provider states `call` relied on, as the session stood before it: the facts its operation declares
    (domain/operations.py), outermost first, each held unless the answer says otherwise. A call refused before
    any lookup (400) relied on none; a fact found absent, or one the answer says nothing of, ends the list."""
    facts = facts_of(call.operation_id)
    if facts is None or call.status == 400:
        return []
    found: list[dict[str, Any]] = []
    succeeded = 200 <= call.status < 300
    for fact in facts.relies_on:
        rules, subject = FACT_STATES[fact], _subject(call, fact)
        if subject is None:
            break
        if rules.absent_code is not None and call.code == rules.absent_code:
            found.append(rules.absent.state(subject))
            break
        if fact is facts.creates:  # absent when it succeeded, held when refused for that
            if succeeded:
                found.append(rules.absent.state(subject))
            elif rules.held_code is not None and call.code == rules.held_code:
                found += [held for held in [rules.held(call, replay, subject)] if held is not None]
            break
        if fact is facts.removes and not succeeded:  # held only as far as a removal that succeeded shows
            break
        held = rules.held(call, replay, subject)
        if held is None:  # the answer shows nothing of it (a lookup's answer that is not the event)
            break
        found.append(held)
    return found


def describe(call: JournaledCall) -> str:
    """`a registration of account 0001-123456, answered 409 account_already_registered`: the words the
    operation's declaration (domain/operations.py) gives, filled from the path and the body."""
    values = dict(call.path)
    if isinstance(call.body, dict):
        values.update({k: v for k, v in call.body.items() if isinstance(v, str)})
    facts = facts_of(call.operation_id)
    try:
        what = facts.description.format(**values) if facts is not None else f"a call of {call.operation_id}"
    except KeyError:  # a body without the field the words name (a refused call)
        what = f"a call of {call.operation_id}"
    word = facts.described_by if facts is not None else None
    if word is not None and isinstance(call.answer, dict) and isinstance(call.answer.get(word), str):
        what = f"{what} ({call.answer[word]})"  # `a lookup of event K (canceled)`
    answered = f"{call.status} {call.code}" if call.code else str(call.status)
    return f"{what}, answered {answered}"
