"""Record mode (`mock-server record`): shadow mode's forwarding, and after each call the session put in step with
what the target's answer showed (domain/recording.py says what it showed, state/recording.py puts it in place).
The pipeline asks `before` ahead of the mock's own answer and `observe` once the target answered."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mock_server.domain.clock import timestamp
from mock_server.domain.conversions import event_to_public
from mock_server.domain.errors import ApiError, MalformedJson
from mock_server.domain.models import Account
from mock_server.domain.pseudonyms import KEY_BYTES, Pseudonymizer
from mock_server.domain.recording import (
    ACCOUNT_OPERATIONS,
    EVENT_OPERATIONS,
    Shown,
    account_after,
    account_id_of,
    event_shown,
    facts_of,
)
from mock_server.domain.recording_notes import (
    UNKNOWN_FIELD,
    account_shown,
    failure_words,
    field_path,
    problem_words,
    where_they_part,
)
from mock_server.http.outbound import COMPARED_BODY_BYTES
from mock_server.http.shadow import BackendReply
from mock_server.state.recording import RecordOptions, SessionRecord, drop_event, put_account, put_event
from mock_server.state.sessions import DEFAULT_SESSION, Session
from mock_server.wire.decoding import decode_json_text, parse_json
from mock_server.wire.encoding import encode_json

if TYPE_CHECKING:
    from mock_server.scenarios.loader import ScenarioLoader

log = logging.getLogger("mock_server")
MAX_SKIPPED = 100  # calls not recorded kept per session, with why: the newest
WRITTEN_SESSION = DEFAULT_SESSION  # the session whose state the file holds: calls without X-Mock-Session
EVENT_KEY = "extraordinary_event_conciliation_key"
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


class NotRecorded(Exception):
    """A target's answer that shows nothing the session can hold; the message says why, without its bytes."""


class Recorder:
    """One recording: its options, and per session what the store does not hold (state/recording.SessionRecord)."""

    def __init__(self, options: RecordOptions, loader: ScenarioLoader | None = None) -> None:
        self.options = options
        self.loader = loader  # the scenario checks: an event the file could not hold is not recorded, and noted
        # Made at the start, not the end: a note names a call's account by the pseudonym the file and map give it.
        self.pseudonyms = None
        if not options.keep_identifiers:
            self.pseudonyms = Pseudonymizer(options.pseudonym_key or os.urandom(KEY_BYTES))
        self.records: dict[str, SessionRecord] = {}
        self.stopped: dict[str, Any] | None = None  # the stop's answer, once the file is written
        self.on_stop: Callable[[], None] | None = None  # set by the command: ends the server after a stop

    def record_of(self, session: Session) -> SessionRecord:
        """What the recording keeps of `session` beside its store: only the written session's is kept (any number
        of other sessions may come and go; their stores are kept in step all the same)."""
        if session.name != WRITTEN_SESSION:
            return SessionRecord()
        record = self.records.get(session.name)
        if record is None:
            record = self.records[session.name] = SessionRecord()
        return record

    def before(self, session: Session, operation_id: str, path: dict[str, str], raw_body: bytes) -> Account | None:
        """The account the call is about, as the session holds it before the mock's own answer changes it."""
        if operation_id not in ACCOUNT_OPERATIONS:
            return None
        account_id = account_id_of(operation_id, path, _json(raw_body))
        if account_id is None or not session.store.has_account(account_id):
            return None
        return facts_of(session.store.account(account_id))

    def observe(
        self,
        session: Session,
        before: Account | None,
        operation_id: str,
        path: dict[str, str],
        raw_body: bytes,
        reply: BackendReply,
    ) -> None:
        """Put the session in step with what the target's `reply` showed; a call that cannot be recorded is noted
        (record.skipped), never an error for the client, who has the target's answer."""
        if self.stopped is not None:
            return
        record = self.record_of(session)
        answer = Shown(reply.answer.status, reply.answer.body) if reply.answer.status is not None else None
        try:
            if answer is None:
                raise NotRecorded("the target gave no answer")
            if operation_id in EVENT_OPERATIONS:
                self._event(session, record, path[EVENT_KEY], answer, reply.content)
            elif operation_id in ACCOUNT_OPERATIONS:
                _check_account_answer(answer, reply.content)
                self._account(session, record, before, operation_id, path, _json(raw_body), answer)
            return
        except NotRecorded as exc:
            why = str(exc)
        except (KeyError, TypeError, ValueError, AttributeError, ApiError) as exc:
            why = failure_words(exc)
        # Said without the call's originals: its account by pseudonym, no value of the target's answer.
        note = f"{self._call(operation_id, path, raw_body)}: not recorded: {why}"
        log.warning("record: %s", note)
        record.skipped.append(note)
        del record.skipped[:-MAX_SKIPPED]

    def _call(self, operation_id: str, path: dict[str, str], raw_body: bytes) -> str:
        """A call as a note names it: the operation, and the event or account it is about."""
        if operation_id in EVENT_OPERATIONS:
            key = path.get(EVENT_KEY, "")
            return f"{operation_id} of event {key.lower()}" if _UUID.fullmatch(key) else operation_id
        account_id = account_id_of(operation_id, path, _json(raw_body)) if operation_id in ACCOUNT_OPERATIONS else None
        if account_id is None:
            return operation_id
        pseudonym = self.pseudonyms.account_id if self.pseudonyms is not None else None
        return f"{operation_id} on account {account_shown(account_id, pseudonym)}"

    def _event(self, session: Session, record: SessionRecord, key: str, answer: Shown, content: bytes) -> None:
        if answer.status == 404:
            drop_event(session.store, key)
            record.unreproduced.pop(key.lower(), None)
            return
        if answer.status != 200:
            return
        self._check_event(answer.body, content)
        event = event_shown(key, answer)
        assert event is not None  # a 200 answer holding a JSON object, checked above
        put_event(session.store, event)
        public = event_to_public(event)
        mine = encode_json(public)
        if mine == content:
            record.unreproduced.pop(event.key, None)
        else:
            record.unreproduced[event.key] = where_they_part(content, mine, public)

    def _check_event(self, body: Any, content: bytes) -> None:
        """NotRecorded, saying why, unless `body` is an event a scenario can hold (the checks the file is held to
        at the end: an answer that passed them here is never left out there)."""
        if not isinstance(body, dict):
            raise NotRecorded(f"the target's 200 answer is not an event: {_not_an_object(body, content)}")
        if self.loader is None:
            return
        # A field the interface does not name is left out (the file could not hold it): the event is recorded,
        # and named among those not answered byte for byte.
        problems = [
            p for p in self.loader.problems({"description": "", "events": [body]}) if p.message != UNKNOWN_FIELD
        ]
        if problems:
            said = "; ".join(f"{field_path(p.path[2:])} {problem_words(p.message)}" for p in problems[:3])
            more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
            raise NotRecorded(f"the target's 200 answer is not an event a scenario can hold: {said}{more}")

    def _account(
        self,
        session: Session,
        record: SessionRecord,
        before: Account | None,
        operation_id: str,
        path: dict[str, str],
        body: Any,
        answer: Shown,
    ) -> None:
        account_id = account_id_of(operation_id, path, body)
        if account_id is None:
            return
        shown = answer.body if isinstance(answer.body, dict) else {}
        seen_at = shown.get("event_date") if isinstance(shown.get("event_date"), str) else None
        change = account_after(operation_id, path, body, before, answer, seen_at or timestamp(session.clock.now()))
        if change.account is None and not session.store.has_account(account_id):
            return
        put_account(session.store, account_id, change.account, session.clock.now())
        if change.registered:
            record.registered.add(account_id)
        elif change.account is None:
            record.registered.discard(account_id)
        if operation_id == "addRecipient" and isinstance(shown.get("recipient_id"), str):
            # The session holds the target's id now: a later call naming it is read as it is, not as the mock's.
            session.divergences.map_id(shown["recipient_id"], shown["recipient_id"])


def _json(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return decode_json_text(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def _not_an_object(body: Any, content: bytes) -> str:
    """Why an answer's body is no JSON object, in the decoder's words (which quote no byte of it)."""
    if isinstance(body, str):
        try:
            parse_json(content, "application/json")
        except MalformedJson as exc:
            return exc.message
        return f"it is larger than the {COMPARED_BODY_BYTES} bytes the mock reads of an answer"
    return "it is empty" if body is None else f"it is a JSON {type(body).__name__}, not an object"


def _check_account_answer(answer: Shown, content: bytes) -> None:
    """NotRecorded when a call the target accepted came back with a body that is no JSON object: what the call
    showed cannot be read from it (an answer without a body, a removal's 204, is read from the call alone)."""
    if 200 <= answer.status < 300 and content and not isinstance(answer.body, dict):
        raise NotRecorded(f"the target's {answer.status} answer cannot be read: {_not_an_object(answer.body, content)}")
