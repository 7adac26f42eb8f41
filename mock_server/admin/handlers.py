"""The test-control API under /__mock (admin/openapi.yaml): one handler per operationId, and their table.

Like the public handlers they only parse, call the session's store or rules, and shape the answer; what
they need beyond the session (the scenarios, the specs) comes with the call's server context.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from mock_server.admin import assertions, pages
from mock_server.admin import schedules as scheduling
from mock_server.admin import sessions as session_admin
from mock_server.admin import snapshots as snapshot_admin
from mock_server.domain.clock import local_date, parse_date, parse_instant, timestamp
from mock_server.domain.conversions import (
    account_to_scenario,
    event_from_scenario,
    event_to_public,
    uuid_text,
    window_to_json,
)
from mock_server.domain.documents import canonical_document
from mock_server.domain.errors import Detail, InvalidRequest, JournalOff, LimitNotFound
from mock_server.domain.events import cross_check_event, to_money
from mock_server.domain.limits import evaluate
from mock_server.domain.models import RECIPIENT_LIST_MODE
from mock_server.http.handling import Call, Handler, Reply
from mock_server.spec.served import base_url
from mock_server.state import conciliation_index
from mock_server.state.conciliation_index import ConciliationIndex
from mock_server.state.export import export_state
from mock_server.state.faults import FaultKind, FaultMatch, Quota
from mock_server.state.sessions import Session
from mock_server.state.store import Store
from mock_server.telemetry.metrics import PROMETHEUS_TEXT, exposition

YAML = "application/yaml"
T = TypeVar("T")


def _status(session: Session) -> Reply:
    return Reply(200, {"status": "ok", "scenario": session.scenario.name})


def _parsed(parse: Callable[[str], T], body: dict[str, Any], name: str) -> T:
    """A date or instant of the body (or query), or 400 naming it: the schema's `format` admits years Python
    cannot hold."""
    try:
        return parse(body[name])
    except ValueError as exc:
        raise InvalidRequest("The request is invalid.", [Detail((name,), str(exc))]) from None


def _conciliation_key_clashes(store: Store, base_index: ConciliationIndex, data: dict[str, Any]) -> list[Detail]:
    """CONTRACT 3 "keys unique", as a scenario file is checked: an event_conciliation_key appears once in the
    session (else the state export would not load back)."""
    problems: list[Detail] = []
    seen: set[str] = set()
    for index, installment in enumerate(data["event_conciliation_list"]):
        key = uuid_text(installment["event_conciliation_key"])
        field = ("event_conciliation_list", index, "event_conciliation_key")
        if key in seen:
            problems.append(Detail(field, f"event_conciliation_key {key} appears more than once"))
        elif (user := store.event_using(key, base_index)) is not None:
            problems.append(Detail(field, f"event_conciliation_key {key} is already used by event {user}"))
        seen.add(key)
    return problems


def health(call: Call) -> Reply:
    # The scenario the named session runs on, or would start from: health never makes a session.
    scenario = call.server.sessions.scenario_of(call.session_name).name
    state_file = call.server.state_file
    if state_file is None:
        return Reply(200, {"status": "ok", "scenario": scenario})
    # Still 200: the server answers, but what it acknowledges may not survive a restart; a probe reads `status`.
    written = state_file.health()
    status = "ok" if written["error"] is None else "degraded"
    return Reply(200, {"status": status, "scenario": scenario, "state_file": written})


def reset(call: Call) -> Reply:
    body = call.body or {}
    name = body.get("scenario")
    call.session.reset(call.server.sessions.scenario(name) if name is not None else None)
    if "seed" in body:
        call.session.ids.reseed(body["seed"])
    return _status(call.session)


def list_scenarios(call: Call) -> Reply:
    return Reply(
        200,
        {
            "active": call.session.scenario.name,
            "scenarios": [
                {"name": s.name, "description": s.description} for s in call.server.sessions.scenarios.values()
            ],
        },
    )


async def get_state(call: Call) -> Reply:
    """Made off the event loop (state/export.py): a big session's YAML takes seconds."""
    if call.query.get("format") == "yaml":
        return Reply(200, text=await export_state(call.session, as_yaml=True), media_type=YAML)
    return Reply(200, await export_state(call.session, as_yaml=False))


async def create_event(call: Call) -> Reply:
    """The first create over a seed waits for the index of its conciliation keys (built once, off the event
    loop: state/conciliation_index.py); the checks and the creation follow it with no wait in between, on the base
    the session has then (a reset or a loaded state may have changed it while this waited)."""
    store = call.session.store
    while (base_index := conciliation_index.ready(store.base.events)) is None:
        await conciliation_index.build(store.base.events)
    problems = cross_check_event(call.body)
    given = call.body.get("extraordinary_event_conciliation_key")
    if not problems and not (given and store.find_event(given)):  # an existing key: 409 below
        problems = _conciliation_key_clashes(store, base_index, call.body)
    if problems:
        raise InvalidRequest("The event is inconsistent.", problems)
    key = given or call.session.ids.new_uuid()
    event = store.add_event(event_from_scenario(call.body, key))
    return Reply(201, event_to_public(event))


def pay_event(call: Call) -> Reply:
    body = call.body or {}
    event = call.session.store.event(call.path["extraordinary_event_conciliation_key"])
    amount = to_money(body["amount"]) if "amount" in body else None
    paid_at = _parsed(parse_date, body, "paid_at") if "paid_at" in body else local_date(call.now)
    return Reply(200, event_to_public(call.session.store.pay_event(event, amount, paid_at)))


def cancel_event(call: Call) -> Reply:
    event = call.session.store.event(call.path["extraordinary_event_conciliation_key"])
    return Reply(200, event_to_public(call.session.store.cancel_event(event)))


def get_account(call: Call) -> Reply:
    return Reply(200, account_to_scenario(call.session.store.account(call.path["account_id"])))


def evaluate_limit(call: Call) -> Reply:
    body = call.body
    account = call.session.store.account(call.path["account_id"])
    mode = body["mode"]
    at = _parsed(parse_instant, body, "at") if "at" in body else call.now
    list_limits = None
    document = body.get("document_number")
    if document is not None and mode == RECIPIENT_LIST_MODE and account.recipient_list is not None:
        key = canonical_document(document)
        if account.recipient_list.holds_document(key):
            list_limits = account.recipient_list.limits
    verdict = evaluate(account.limits, list_limits, mode, body["amount"], at)
    if verdict is None:
        raise LimitNotFound(f"Account {account.account_id} has no {mode} limit.")
    return Reply(
        200,
        {
            "allowed": verdict.allowed,
            "limit_amount": verdict.limit_amount,
            "window": window_to_json(verdict.window),
            "source": verdict.source,
        },
    )


def list_requests(call: Call) -> Reply:
    if not call.session.journal.enabled:
        raise JournalOff("The server keeps no journal (mock-server --journal off).")
    query = call.query
    since = _parsed(parse_instant, query, "since") if "since" in query else None
    status = int(query["status"]) if "status" in query else None
    entries = call.session.journal.entries(query.get("operation_id"), status, since, query.get("trace_id"))
    return Reply(200, {"requests": entries})


def metrics(call: Call) -> Reply:
    """The server's Prometheus metrics (telemetry/metrics.py), in the text format prometheus_client writes."""
    return Reply(200, text=exposition(call.server.metrics).decode(), media_type=PROMETHEUS_TEXT)


def clear_requests(call: Call) -> Reply:
    call.session.journal.clear()
    return Reply(204)


def list_divergences(call: Call) -> Reply:
    shadow = call.server.shadow
    divergences = call.session.divergences.entries(call.query.get("operation_id"))
    return Reply(200, {"backend": shadow.backend if shadow is not None else None, "divergences": divergences})


def clear_divergences(call: Call) -> Reply:
    call.session.divergences.clear()
    return Reply(204)


def _success_status_with_body(responses: Mapping[str, object]) -> int:
    """The lowest 2xx status the operation documents with a body (201 for the creating POSTs); 200 when its
    success carries none (removeRecipient's 204): what a malformed fault answers unless told."""
    statuses = [int(key) for key, body in responses.items() if key.isdigit() and key[0] == "2" and body is not None]
    return min(statuses, default=200)


def create_fault(call: Call) -> Reply:
    """The combinations a kind forbids, and a match naming what the operation has not, are the admin spec's
    FaultRequest to refuse (validated before this)."""
    body = call.body
    operation_id = body["operation_id"]
    kind = FaultKind(body.get("kind", FaultKind.RESPOND))
    status = body.get("status")
    if kind is FaultKind.MALFORMED and status is None:
        status = _success_status_with_body(call.server.specs.public.operations[operation_id].responses)
    match = FaultMatch.from_json(body["match"]) if "match" in body else None
    quota = Quota(body["limit"], body["window_s"]) if kind is FaultKind.QUOTA else None
    fault = call.session.faults.add(
        operation_id,
        status,
        body.get("body"),
        body.get("delay_ms", 0),
        body.get("times", 1),
        kind,
        body.get("text"),
        match,
        body.get("probability"),
        body.get("seed"),
        body.get("jitter_ms", 0),
        quota,
        default_seed=call.session.ids.seed,  # None (an unseeded session): the fault draws a seed of its own
        default_mixes_name=call.session.ids.mixes_name,
    )
    return Reply(201, fault.to_json())


def list_faults(call: Call) -> Reply:
    return Reply(200, {"faults": [f.to_json() for f in call.session.faults.all()]})


def clear_faults(call: Call) -> Reply:
    call.session.faults.clear()
    return Reply(204)


def _clock(session: Session) -> Reply:
    return Reply(200, {"now": timestamp(session.clock.now()), "frozen": session.clock.frozen})


def get_clock(call: Call) -> Reply:
    return _clock(call.session)


def set_clock(call: Call) -> Reply:
    now = call.body["now"]
    clock = call.session.clock
    clock.freeze(_parsed(parse_instant, call.body, "now") if now is not None else None)
    turn = call.turn
    if turn is not None and turn.events is not None:
        at = clock.now()
        turn.note("pix_mock.clock.set", {"pix_mock.clock.now": timestamp(at), "pix_mock.clock.frozen": clock.frozen})
    return _clock(call.session)


def admin_spec(call: Call) -> Reply:
    """Bundled (self-contained), `servers` naming where this request came in (spec/served.py)."""
    return Reply(200, text=call.server.served.admin_yaml_for(base_url(call.scope)), media_type=YAML)


def public_spec_yaml(call: Call) -> Reply:
    return Reply(200, text=call.server.served.public_yaml_for(base_url(call.scope)), media_type=YAML)


def public_spec_json(call: Call) -> Reply:
    return Reply(200, text=call.server.served.public_json_for(base_url(call.scope)), media_type="application/json")


def _page_file(name: str, headers: dict[str, str]) -> Reply:
    text, media_type = pages.read(name)
    return Reply(200, headers=dict(headers), text=text, media_type=media_type)


def dashboard(call: Call) -> Reply:
    return _page_file("dashboard.html", pages.PAGE_HEADERS)


def docs(call: Call) -> Reply:
    return _page_file("docs.html", pages.PAGE_HEADERS)


def asset(call: Call) -> Reply:
    return _page_file(call.path["asset"], pages.ASSET_HEADERS)


async def stop_recording(call: Call) -> Reply:
    # Record mode's end (admin/recording.py: the scenario written, checked with the loader) is imported by its
    # first call: a server that does not record never loads it.
    from mock_server.admin.recording import stop_recording as stop

    return await stop(call)


HANDLERS: dict[str, Handler] = {
    "mockHealth": health,
    "mockReset": reset,
    "mockListScenarios": list_scenarios,
    "mockGetState": get_state,
    "mockCreateEvent": create_event,
    "mockPayEvent": pay_event,
    "mockCancelEvent": cancel_event,
    "mockGetAccount": get_account,
    "mockEvaluateLimit": evaluate_limit,
    "mockListRequests": list_requests,
    "mockClearRequests": clear_requests,
    "mockMetrics": metrics,
    "mockListDivergences": list_divergences,
    "mockClearDivergences": clear_divergences,
    "mockCreateFault": create_fault,
    "mockListFaults": list_faults,
    "mockClearFaults": clear_faults,
    "mockGetClock": get_clock,
    "mockSetClock": set_clock,
    "mockAdminSpec": admin_spec,
    "publicSpecYaml": public_spec_yaml,
    "publicSpecJson": public_spec_json,
    **assertions.HANDLERS,
    "mockDashboard": dashboard,
    "mockDocs": docs,
    "mockAsset": asset,
    **session_admin.HANDLERS,
    **scheduling.HANDLERS,
    **snapshot_admin.HANDLERS,
    "mockStopRecording": stop_recording,
}
