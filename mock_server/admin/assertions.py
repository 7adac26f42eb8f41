"""Admin handlers for what a contract test ends with: verifying the client's calls, API coverage, and the Pact
contract of the calls with the provider-state handler that verifies it."""

from __future__ import annotations

import logging

from starlette.concurrency import run_in_threadpool

from mock_server.domain.errors import ExpectationNotMet, InvalidRequest, JournalOff, ProviderStateUnreachable
from mock_server.http.handling import Call, Handler, Reply
from mock_server.state.coverage import markdown

MARKDOWN = "text/markdown; charset=utf-8"
log = logging.getLogger("mock_server")


def verify(call: Call) -> Reply:
    from mock_server.admin.verify import expectation_from, judge  # imported by the first verification

    expectation, problems = expectation_from(call.body)
    if expectation is None:
        raise InvalidRequest("The verification is inconsistent.", problems)
    verdict = judge(expectation, call.session.journal.entries(expectation.operation_id))
    message = verdict.message(expectation)
    if verdict.holds:
        return Reply(200, {"verified": True, "matched": verdict.matched, "message": message})
    failure = ExpectationNotMet(message)
    return Reply(failure.status, {**failure.body(), "matched": verdict.matched, "calls": verdict.calls})


def _wants_markdown(call: Call) -> bool:
    if "format" in call.query:
        return call.query["format"] == "markdown"
    accept = call.headers.get("accept", "")
    return any(part.split(";")[0].strip().lower() == "text/markdown" for part in accept.split(","))


def get_coverage(call: Call) -> Reply:
    report = call.server.coverage.report()
    if _wants_markdown(call):
        return Reply(200, text=markdown(report), media_type=MARKDOWN)
    return Reply(200, report)


def clear_coverage(call: Call) -> Reply:
    call.server.coverage.clear()
    return Reply(204)


async def get_pact(call: Call) -> Reply:
    """The session's pact. Its journal is read on the event loop (what the session holds now); the document is
    drawn in a worker thread, so a big journal stalls no other client."""
    journal = call.session.journal
    if not journal.enabled:
        raise JournalOff("The server keeps no journal (mock-server --journal off): there are no calls to draw from.")
    from mock_server.admin.pact import Options, export_pact  # a server that never draws a pact never imports it

    entries, base = journal.entries(), call.session.store.base
    options = Options(call.query.get("amounts", "type"), call.query.get("mock_defined", "flag"))
    query = call.query
    pact = await run_in_threadpool(
        export_pact, entries, base, call.server, query["consumer"], query["provider"], options
    )
    return Reply(200, pact)


def change_provider_state(call: Call) -> Reply:
    from mock_server.admin.provider_states import change_state  # only Pact verifiers call it

    body = call.body
    action = body.get("action", "setup")
    try:
        change = change_state(call.session, call.server.specs, body["state"], body.get("params", {}), action)
    except ProviderStateUnreachable as refused:
        # Pact's verifier shows only "Invalid status code: 409", never the answer's body: the server's log says why.
        log.warning("provider state %r (%s) not set up: %s", body["state"], action, refused.message)
        raise
    return Reply(200, {"state": body["state"], "action": action, "reset": change.reset})


HANDLERS: dict[str, Handler] = {
    "mockVerify": verify,
    "mockGetPact": get_pact,
    "mockChangeProviderState": change_provider_state,
    "mockGetCoverage": get_coverage,
    "mockClearCoverage": clear_coverage,
}
