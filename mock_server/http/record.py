"""Record mode (`mock-server record`): shadow mode's forwarding, and after each call the session put in step with
what the target's answer showed (domain/recording.py says what it showed, state/recording.py puts it in place).
The pipeline asks `before` ahead of the mock's own answer and `observe` once the target answered."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mock_server.domain.clock import timestamp
from mock_server.domain.conversions import event_to_public
from mock_server.domain.errors import ApiError
from mock_server.domain.models import Account
from mock_server.domain.recording import (
    ACCOUNT_OPERATIONS,
    EVENT_OPERATIONS,
    Shown,
    account_after,
    account_id_of,
    event_shown,
    facts_of,
)
from mock_server.http.shadow import BackendReply
from mock_server.state.recording import RecordOptions, SessionRecord, drop_event, put_account, put_event
from mock_server.state.sessions import DEFAULT_SESSION, Session
from mock_server.wire.decoding import decode_json_text
from mock_server.wire.encoding import encode_json

log = logging.getLogger("mock_server")
MAX_SKIPPED = 100  # calls not recorded kept per session, with why: the newest
WRITTEN_SESSION = DEFAULT_SESSION  # the session whose state the file holds: calls without X-Mock-Session


class Recorder:
    """One recording: its options, and per session what the store does not hold (state/recording.SessionRecord)."""

    def __init__(self, options: RecordOptions) -> None:
        self.options = options
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
        status = reply.answer.status
        if status is None or self.stopped is not None:
            return
        record = self.record_of(session)
        answer = Shown(status, reply.answer.body)
        try:
            if operation_id in EVENT_OPERATIONS:
                self._event(session, record, path["extraordinary_event_conciliation_key"], answer, reply.content)
            elif operation_id in ACCOUNT_OPERATIONS:
                self._account(session, record, before, operation_id, path, _json(raw_body), answer)
        except (KeyError, TypeError, ValueError, AttributeError, ApiError) as exc:
            why = f"{operation_id} {path}: not recorded: {type(exc).__name__}: {exc}"
            log.warning("record: %s", why)
            record.skipped.append(why)
            del record.skipped[:-MAX_SKIPPED]

    def _event(self, session: Session, record: SessionRecord, key: str, answer: Shown, content: bytes) -> None:
        event = event_shown(key, answer)
        if event is None:
            if answer.status == 404:
                drop_event(session.store, key)
                record.unreproduced.pop(key.lower(), None)
            return
        put_event(session.store, event)
        mine = encode_json(event_to_public(event))
        if mine == content:
            record.unreproduced.pop(event.key, None)
        else:
            record.unreproduced[event.key] = _how_it_differs(content, mine)

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


def _how_it_differs(theirs: bytes, mine: bytes) -> str:
    """Why the mock's bytes for an event are not the target's: the first place they part."""
    at = next((i for i, (a, b) in enumerate(zip(theirs, mine, strict=False)) if a != b), min(len(theirs), len(mine)))
    return (
        f"the target's answer ({len(theirs)} bytes) and the mock's ({len(mine)} bytes) part at byte {at}: "
        f"{theirs[at : at + 24]!r} vs {mine[at : at + 24]!r}"
    )
