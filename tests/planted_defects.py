"""Providers with one planted defect each: the real mock app wrapped in an ASGI middleware that changes one
behaviour, served on 127.0.0.1 like a provider's sandbox. Built once, for every check of a provider against the
contract (verify-provider here; Pact verification later).

`DEFECTS` is the registry: each defect names the operation whose answers show it, and whether every answer it
gives still matches the spec (`schema_valid`: what fuzzing with every check cannot notice, issue 25). `serve()`
runs an app as a real server (mock_server/server.py, in a thread: no child process), `clean_twin()` is the mock
with other ids and instants (another seed, another clock) that a provider check must find in agreement.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mock_server.app import create_app
from mock_server.server import Server
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from mock_server.state.sessions import DEFAULT_SESSION
from mock_server.state.store import Store


@dataclass(frozen=True)
class Seen:
    """The request a defect looks at."""

    method: str
    path: str
    body: Any  # decoded JSON, or None

    def segments(self) -> list[str]:
        return self.path.strip("/").split("/")

    @property
    def account_id(self) -> str | None:
        parts = self.segments()
        return parts[2] if len(parts) > 2 and parts[:2] == ["limits", "account"] else None


@dataclass
class Answered:
    """An answer as a defect may change it: status and JSON body (None: no body)."""

    status: int
    body: Any = None


# before(request) -> an answer given instead of the mock's (None: ask the mock); after(request, the mock's answer)
# -> the answer sent (None: the mock's as it is).
Before = Callable[[Seen], Answered | None]
After = Callable[[Seen, Answered], Answered | None]


def _operation(seen: Seen) -> str:
    """The operationId of a request (the seven public ones; '' for anything else)."""
    parts = seen.segments()
    if seen.method == "GET" and parts[:2] == ["event_conciliation", "extraordinary_event"]:
        return "getExtraordinaryEvent"
    if parts == ["limits", "account"]:
        return "registerAccountLimit"
    tail = parts[3:] if parts[:2] == ["limits", "account"] else []
    if seen.method == "DELETE" and tail[:2] == ["recipient_list", "recipient"] and len(tail) == 3:
        return "removeRecipient"
    return {
        ("limit_update_request",): "createLimitUpdateRequest",
        ("recipient_list",): "createRecipientList",
        ("recipient_list", "recipient"): "addRecipient",
        ("recipient_list", "limit_update_request"): "createRecipientListLimitUpdateRequest",
    }.get(tuple(tail), "")


class Rewriting:
    """The mock behind a middleware: `before` may answer in its place, `after` may change what it answered."""

    def __init__(
        self, app: ASGIApp, operation_id: str, before: Before | None = None, after: After | None = None
    ) -> None:
        self.app = app
        self.operation_id = operation_id
        self.before = before
        self.after = after

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = b""
        more = True
        while more:
            message = await receive()
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        seen = Seen(scope["method"], scope["path"], body)
        if _operation(seen) != self.operation_id:
            await self.app(scope, _replay(raw), send)
            return
        answer = self.before(seen) if self.before else None
        if answer is not None:
            await _send(send, answer)
            return
        messages: list[Message] = []

        async def keep(message: Message) -> None:
            messages.append(message)

        await self.app(scope, _replay(raw), keep)
        start = messages[0]
        content = b"".join(m.get("body", b"") for m in messages[1:])
        mine = Answered(start["status"], json.loads(content) if content else None)
        changed = self.after(seen, mine) if self.after else None
        if changed is None:
            for message in messages:
                await send(message)
        else:
            await _send(send, changed)


def _replay(raw: bytes) -> Callable[[], Awaitable[Message]]:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": raw, "more_body": False}

    return receive


async def _send(send: Send, answer: Answered) -> None:
    content = b"" if answer.body is None else json.dumps(answer.body).encode()
    headers = [(b"content-length", str(len(content)).encode())]
    if answer.body is not None:
        headers.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


# --- the defects -----------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).astimezone().isoformat(timespec="milliseconds")


def _code(answer: Answered) -> str | None:
    return answer.body.get("code") if isinstance(answer.body, dict) else None


def _store(app: Starlette) -> Store:
    store: Store = app.state.sessions.get(DEFAULT_SESSION).store
    return store


@dataclass(frozen=True)
class Defect:
    name: str
    operation_id: str  # the operation whose answers show the defect
    schema_valid: bool  # every answer still matches the spec
    what: str
    wrap: Callable[[Starlette], ASGIApp]


def _after(operation_id: str, rewrite: After) -> Callable[[Starlette], ASGIApp]:
    return lambda app: Rewriting(app, operation_id, after=rewrite)


def _before(operation_id: str, answer: Before) -> Callable[[Starlette], ASGIApp]:
    return lambda app: Rewriting(app, operation_id, before=answer)


def _on_code(code: str, rewrite: Callable[[Seen, Answered], Answered]) -> After:
    return lambda seen, answer: rewrite(seen, answer) if _code(answer) == code else None


def _on_status(status: int, rewrite: Callable[[Seen, Answered], Answered]) -> After:
    return lambda seen, answer: rewrite(seen, answer) if answer.status == status else None


def _changed(answer: Answered, **fields: Any) -> Answered:
    return Answered(answer.status, {**answer.body, **fields})


def _without(answer: Answered, name: str) -> Answered:
    return Answered(answer.status, {k: v for k, v in answer.body.items() if k != name})


def _recipient(recipient_status: str = "created") -> Answered:
    return Answered(
        201,
        {
            "recipient_id": str(uuid.uuid4()),
            "analysis_status": "automatically_approved",
            "client_notification_status": "not_applicable",
            "recipient_status": recipient_status,
            "event_date": _now(),
        },
    )


def _first_event(app: Starlette) -> Any:
    store = _store(app)
    event = next(iter(store.all_events()))
    from mock_server.domain.conversions import event_to_public  # the public shape, as the mock answers it

    return json.loads(json.dumps(event_to_public(event), default=float))


def _unknown_key_answers_another_event(app: Starlette) -> ASGIApp:
    return Rewriting(
        app,
        "getExtraordinaryEvent",
        after=_on_code("EVC100011", lambda seen, answer: Answered(200, _first_event(app))),
    )


def _limits_kept(app: Starlette, operation_id: str, of_list: bool) -> ASGIApp:
    """A limit change answered as applied, while the limits stay as they were."""
    inner = Rewriting(app, operation_id)

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        account_id = Seen(scope.get("method", ""), scope.get("path", ""), None).account_id
        before = None
        store = _store(app)
        if account_id is not None and _operation(Seen(scope["method"], scope["path"], None)) == operation_id:
            try:
                account = store.account(account_id)
                before = account.recipient_list.limits if of_list and account.recipient_list else account.limits
            except Exception:
                before = None
        await inner(scope, receive, send)
        if before is not None and account_id is not None:
            account = store.account(account_id)
            if of_list and account.recipient_list is not None:
                account.recipient_list.limits = before
            elif not of_list:
                account.limits = before

    return asgi


def _amounts_in_reais(app: Starlette) -> ASGIApp:
    """Registration stores every amount divided by 100 (reais, not cents): later proposals compare wrongly."""

    async def asgi(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != "/limits/account" or scope["method"] != "POST":
            await app(scope, receive, send)
            return
        raw = b""
        more = True
        while more:
            message = await receive()
            raw += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            body = json.loads(raw)
            for windows in body["limit"]["pix"].values():
                for window in windows:
                    window["amount"] = window["amount"] // 100
            raw = json.dumps(body).encode()
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        await app(scope, _replay(raw), send)

    return asgi


def _event_amounts_in_cents(seen: Seen, answer: Answered) -> Answered | None:
    if answer.status != 200:
        return None
    money = ("total_expected_amount", "total_discount_amount", "total_paid_amount")
    return _changed(answer, **{name: round(answer.body[name] * 100) for name in money})


def _canceled_instalments_pending(seen: Seen, answer: Answered) -> Answered | None:
    if answer.status != 200 or answer.body["status"] != "canceled":
        return None
    instalments = [
        {**i, "event_conciliation_status": "pending_conciliation"} for i in answer.body["event_conciliation_list"]
    ]
    return _changed(answer, event_conciliation_list=instalments)


def _bare_layout_not_recognised(seen: Seen, answer: Answered) -> Answered | None:
    document = seen.body.get("document_number", "") if isinstance(seen.body, dict) else ""
    if _code(answer) == "recipient_already_in_list" and document.isdigit():
        return _recipient()
    return None


DEFECTS: tuple[Defect, ...] = (
    # getExtraordinaryEvent
    Defect(
        "total-paid-off-by-a-cent",
        "getExtraordinaryEvent",
        True,
        "total_paid_amount one cent more than paid",
        _after(
            "getExtraordinaryEvent",
            _on_status(200, lambda s, a: _changed(a, total_paid_amount=round(a.body["total_paid_amount"] + 0.01, 2))),
        ),
    ),
    Defect(
        "unknown-key-answers-another-event",
        "getExtraordinaryEvent",
        True,
        "a key no event has answers another event (200)",
        _unknown_key_answers_another_event,
    ),
    Defect(
        "event-amounts-in-cents",
        "getExtraordinaryEvent",
        True,
        "the event's amounts in cents, not reais",
        _after("getExtraordinaryEvent", _event_amounts_in_cents),
    ),
    Defect(
        "canceled-instalments-pending",
        "getExtraordinaryEvent",
        True,
        "a canceled event's instalments stay pending_conciliation",
        _after("getExtraordinaryEvent", _canceled_instalments_pending),
    ),
    Defect(
        "event-without-paid-at",
        "getExtraordinaryEvent",
        False,
        "paid_at left out of the event",
        _after("getExtraordinaryEvent", _on_status(200, lambda s, a: _without(a, "paid_at"))),
    ),
    # registerAccountLimit
    Defect(
        "duplicate-account-accepted",
        "registerAccountLimit",
        True,
        "a second registration of one account_id is a 201",
        _after(
            "registerAccountLimit",
            _on_code(
                "account_already_registered",
                lambda s, a: Answered(201, {"account_id": s.body["account_id"], "event_date": _now()}),
            ),
        ),
    ),
    Defect(
        "duplicate-account-wrong-code",
        "registerAccountLimit",
        True,
        "a duplicate account_id answers 409 with the code `conflict`",
        _after(
            "registerAccountLimit", _on_code("account_already_registered", lambda s, a: _changed(a, code="conflict"))
        ),
    ),
    Defect(
        "invalid-registration-accepted",
        "registerAccountLimit",
        True,
        "a registration with a negative amount is a 201",
        _after(
            "registerAccountLimit",
            _on_code(
                "invalid_request",
                lambda s, a: Answered(201, {"account_id": str(s.body.get("account_id", "x")), "event_date": _now()}),
            ),
        ),
    ),
    Defect(
        "registration-answers-200",
        "registerAccountLimit",
        False,
        "a registration answers 200, a status the spec does not document",
        _after("registerAccountLimit", _on_status(201, lambda s, a: Answered(200, a.body))),
    ),
    # createLimitUpdateRequest
    Defect(
        "limit-change-not-applied",
        "createLimitUpdateRequest",
        True,
        "a proposal answered `applied` leaves the limits as they were",
        lambda app: _limits_kept(app, "createLimitUpdateRequest", of_list=False),
    ),
    Defect(
        "notification-never-awaited",
        "createLimitUpdateRequest",
        True,
        "client_notification_status is not_applicable even when a limit goes up",
        _after(
            "createLimitUpdateRequest",
            _on_status(201, lambda s, a: _changed(a, client_notification_status="not_applicable")),
        ),
    ),
    Defect(
        "limit-amounts-in-reais",
        "createLimitUpdateRequest",
        True,
        "registered amounts kept in reais (divided by 100), so later proposals compare wrongly",
        _amounts_in_reais,
    ),
    Defect(
        "proposal-without-id",
        "createLimitUpdateRequest",
        False,
        "the proposal has no limit_update_request_id",
        _after("createLimitUpdateRequest", _on_status(201, lambda s, a: _without(a, "limit_update_request_id"))),
    ),
    # createRecipientList
    Defect(
        "second-list-accepted",
        "createRecipientList",
        True,
        "a second recipient list for one account is a 201",
        _after(
            "createRecipientList",
            _on_code("recipient_list_already_exists", lambda s, a: Answered(201, {"event_date": _now()})),
        ),
    ),
    Defect(
        "list-created-without-body",
        "createRecipientList",
        False,
        "list creation answers 201 with no body",
        _after("createRecipientList", _on_status(201, lambda s, a: Answered(201, None))),
    ),
    # addRecipient
    Defect(
        "duplicate-document-accepted",
        "addRecipient",
        True,
        "a document already in the list is added again",
        _after("addRecipient", _on_code("recipient_already_in_list", lambda s, a: _recipient())),
    ),
    Defect(
        "bare-layout-not-recognised",
        "addRecipient",
        True,
        "a CPF written bare is not the same recipient as the punctuated one",
        _after("addRecipient", _bare_layout_not_recognised),
    ),
    Defect(
        "recipient-pending-analysis",
        "addRecipient",
        True,
        "a recipient is answered pending_analysis where the scenario says created",
        _after("addRecipient", _on_status(201, lambda s, a: _changed(a, recipient_status="pending_analysis"))),
    ),
    Defect(
        "recipient-id-a-number",
        "addRecipient",
        False,
        "recipient_id is a JSON number",
        _after("addRecipient", _on_status(201, lambda s, a: _changed(a, recipient_id=12345))),
    ),
    # removeRecipient
    Defect(
        "removal-removes-nothing",
        "removeRecipient",
        True,
        "a removal answers 204 and removes nothing",
        _before("removeRecipient", lambda seen: Answered(204)),
    ),
    Defect(
        "unknown-recipient-removed",
        "removeRecipient",
        True,
        "removing an id no recipient has answers 204",
        _after("removeRecipient", _on_code("recipient_not_found", lambda s, a: Answered(204))),
    ),
    Defect(
        "removal-answers-200-with-body",
        "removeRecipient",
        False,
        "a removal answers 200 with a body",
        _after("removeRecipient", _on_status(204, lambda s, a: Answered(200, {"status": "removed"}))),
    ),
    # createRecipientListLimitUpdateRequest
    Defect(
        "list-limit-not-applied",
        "createRecipientListLimitUpdateRequest",
        True,
        "a list's limit change answered as created leaves the list's limits as they were",
        lambda app: _limits_kept(app, "createRecipientListLimitUpdateRequest", of_list=True),
    ),
    Defect(
        "list-limit-before-list-wrong-code",
        "createRecipientListLimitUpdateRequest",
        True,
        "a list limit change before the list exists answers account_not_found",
        _after(
            "createRecipientListLimitUpdateRequest",
            _on_code("recipient_list_not_found", lambda s, a: _changed(a, code="account_not_found")),
        ),
    ),
    Defect(
        "list-proposal-names-recipient-id",
        "createRecipientListLimitUpdateRequest",
        False,
        "the list's proposal carries recipient_id in place of limit_update_request_id (the interface's table)",
        _after(
            "createRecipientListLimitUpdateRequest",
            _on_status(
                201,
                lambda s, a: Answered(
                    201,
                    {("recipient_id" if k == "limit_update_request_id" else k): v for k, v in a.body.items()},
                ),
            ),
        ),
    ),
)

CLEAN_SEED = 424242
CLEAN_CLOCK = datetime(2031, 5, 17, 13, 45, 7, tzinfo=UTC)


@functools.cache
def _specs() -> Specs:
    return load_specs()


def mock_app(**settings: Any) -> Starlette:
    return create_app(Settings(**settings), _specs())


def clean_twin() -> Starlette:
    """The mock with other generated ids and instants: another seed, a clock frozen elsewhere in time."""
    return mock_app(seed=CLEAN_SEED, clock=CLEAN_CLOCK)


def defective(defect: Defect) -> ASGIApp:
    return defect.wrap(mock_app())


@contextmanager
def serve(app: ASGIApp, **options: Any) -> Iterator[str]:
    """`app` served on 127.0.0.1, a free port, in a thread (mock_server/server.py); its base URL. Stopped when the
    block ends. `options` go to uvicorn.Config (ssl_certfile, ssl_keyfile, ssl_ca_certs, ssl_cert_reqs for TLS)."""
    server = Server(app, Settings(port=0), configure_logging=False, overrides={"log_level": "error", **options})
    url = server.start(20)
    try:
        yield url
    finally:
        server.halt()
