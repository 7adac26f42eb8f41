"""Shadow mode (`mock-server --shadow URL`): a public call is forwarded to the real backend and answered with the
backend's answer, while the mock answers the same call in the same session; where the two differ, the session
journals a divergence. Ids the backend generates are mapped to the mock's, so later calls naming them compare."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from mock_server.domain.answers import Answer, generated_id
from mock_server.domain.errors import ApiError, BackendUnreachable
from mock_server.domain.operations import NAMED_LATER
from mock_server.http.handling import Reply
from mock_server.http.outbound import (
    Outbound,
    answer_differences,
    async_client,
    call_failures,
    decoded,
    default_verification,
    exchange,
    forwarded_headers,
    no_answer,
    tls_context,
)
from mock_server.spec.openapi import Spec
from mock_server.state.divergences import Divergence
from mock_server.wire.decoding import decode_json_text, parse_json
from mock_server.wire.encoding import encode_json

if TYPE_CHECKING:
    import httpx

    from mock_server.http.pipeline import Exchange, OperationRunner

# Path parameters that name an id the backend generated (a recipient's): read as the mock's own id. Declared with
# the operations that name them (domain/operations.py).
MAPPED_PATH_PARAMETERS = tuple(sorted(NAMED_LATER))
# The backend's response headers the client gets besides its body and Content-Type.
PASSED_HEADERS = ("location", "allow", "retry-after", "www-authenticate", "cache-control")


# What every answer a backend gave carries on the mock's origin: a page navigated to a shadowed call must not run
# the backend's script as the mock's own (same origin, it could call /__mock): no script, no sniffing of the type.
NEUTRALIZED = (("content-security-policy", "sandbox"), ("x-content-type-options", "nosniff"))
SERVED_AS_IS = ("application/json", "application/problem+json")  # a JSON body keeps its type; any other is text
AS_TEXT = "text/plain; charset=utf-8"
# What a request target's path may hold as it is besides letters, digits and `-._~` (RFC 3986's pchar, less `%`):
# the path arrives decoded from the ASGI server, so a `%`, `?` or `#` in it is data and is escaped again.
_PATH_SAFE = "/:@!$&'()*+,;="
KEPT_ALIVE = 16  # connections to the backend kept open between calls (more at once are opened, then closed)
# How long a kept connection may stay idle: under the idle timeouts servers close theirs after (gunicorn's 2 s,
# uvicorn's and Node's 5 s), so that a call seldom finds its connection being closed as it is sent.
IDLE_SECONDS = 1.5


@dataclass(frozen=True)
class BackendReply:
    """What the backend answered: as compared, and as sent on to the client."""

    answer: Answer
    content: bytes = b""
    media_type: str | None = None
    headers: tuple[tuple[str, str], ...] = ()


def served_type(content_type: str | None) -> str:
    """The Content-Type the client gets for a backend's body: JSON's own, anything else (HTML above all) as plain
    text, so that no browser renders it as a page of the mock's origin."""
    media_type = (content_type or "").partition(";")[0].strip().lower()
    return content_type if content_type and media_type in SERVED_AS_IS else AS_TEXT


class Shadow:
    def __init__(self, outbound: Outbound, spec: Spec) -> None:
        self.outbound = outbound
        self.spec = spec
        tls = tls_context(outbound)  # read once: loading certificates is the costly part of a client
        self._tls = default_verification() if tls is True else tls
        # One client per event loop serving calls, and the task that closes it when that loop ends.
        self._clients: dict[asyncio.AbstractEventLoop, tuple[httpx.AsyncClient, asyncio.Task[None]]] = {}

    def _client(self) -> httpx.AsyncClient:
        """The client of the running event loop, made on its first call: its connections to the backend are kept
        alive from call to call (a client and a connection per call were most of shadow mode's cost). Each loop has
        its own (a connection belongs to the loop that opened it: a test client runs a loop per request), closed
        with every connection when that loop ends -- the server stops, a test client's loop ends -- as its tasks
        are cancelled then."""
        loop = asyncio.get_running_loop()
        kept = self._clients.get(loop)
        if kept is None:
            client = async_client(
                self.outbound,
                None,  # no bound of its own, as with a client per call: the backend's time bound holds
                verify=self._tls,
                kept_alive=KEPT_ALIVE,
                idle_seconds=IDLE_SECONDS,
                cookies=False,  # one client for every caller: no caller gets another's cookie
            )
            kept = self._clients[loop] = (client, loop.create_task(self._close_at_end(loop, client)))
        return kept[0]

    async def _close_at_end(self, loop: asyncio.AbstractEventLoop, client: httpx.AsyncClient) -> None:
        try:
            await asyncio.Event().wait()  # until the loop ends (asyncio's runner cancels the tasks it leaves)
        finally:
            del self._clients[loop]
            await client.aclose()

    @property
    def backend(self) -> str:
        return self.outbound.base_url

    async def forward(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> BackendReply:
        """The call sent on to the backend (`target`: the path and query as received), over a connection kept
        from an earlier call when one is open. Bounded as a whole by the outbound's timeout and its body bound; a
        backend that gives no usable answer (refused, a TLS alert, too slow, too large, a body that does not
        decompress) is an answer with no status, saying why."""
        try:
            received = await exchange(
                self._client(), self.outbound, method, target, forwarded_headers(headers), body or None
            )
        except call_failures() as exc:
            return BackendReply(Answer(None, error=no_answer(exc, self.outbound)))
        passed = tuple((name, received.headers[name]) for name in PASSED_HEADERS if name in received.headers)
        content_type = received.headers.get("content-type")
        return BackendReply(
            Answer(received.status, decoded(received.content)),
            received.content,
            served_type(content_type) if received.content else content_type,
            passed + NEUTRALIZED,
        )

    async def answer(self, runner: OperationRunner, exchange: Exchange) -> Reply:
        """The backend's answer to a public call, after the mock's own answer to it (the runner's handler) in the
        same session (ids the backend generated read as the mock's); a divergence between the two is journaled, and
        record mode (http/record.py) keeps the session in step with what the backend showed. A body the mock
        cannot read whole (413, 408) is not forwarded: the mock's refusal is the answer. The pipeline's one call
        into shadow mode."""
        turn = exchange.turn
        assert turn is not None
        session = turn.session
        if runner.takes_body:
            await runner.read_body(exchange)
        path_params = exchange.scope["path_params"]  # what _validate reads
        as_sent = {name: path_params[name] for name in MAPPED_PATH_PARAMETERS if name in path_params}
        for name, value in as_sent.items():
            path_params[name] = session.divergences.mock_id(value)
        recorder, operation_id = runner.server.recorder, turn.operation_id
        sent_path = {**path_params, **as_sent}
        before = recorder.before(session, operation_id, sent_path, exchange.raw_body) if recorder else None
        try:
            mine = await runner.handle(exchange)
        except ApiError as error:
            mine = Reply.error(error)
        finally:
            path_params.update(as_sent)
        scope = exchange.scope
        # The operation's path, without what is the mock's own: a session's /__session/{name} (in root_path, as a
        # mount's prefix is), which the backend does not know, as X-Mock-Session is not forwarded either.
        path, root = scope["path"], scope.get("root_path", "")
        target = request_target(path[len(root) :] if root and path.startswith(root) else path, scope["query_string"])
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope["headers"]]
        backend = await self.forward(scope["method"], target, headers, exchange.raw_body)
        ours = mock_answer(mine.status, mine.value)  # a lookup answers its encoded bytes
        found = self.compare(operation_id, ours, backend.answer)
        if found:
            request_body = journal_body(exchange)
            session.divergences.record(
                Divergence(
                    turn.now,
                    scope["method"],
                    scope["path"],
                    operation_id,
                    request_body,
                    ours,
                    backend.answer,
                    tuple(found),
                )
            )
        pair = id_pair(operation_id, ours, backend.answer)
        if pair is not None:
            session.divergences.map_id(*pair)
        if recorder is not None:  # record mode: the session put in step with what the target showed
            recorder.observe(session, before, operation_id, sent_path, exchange.raw_body, backend)
        if backend.answer.status is None:
            reply = Reply.error(
                BackendUnreachable(f"The backend {self.backend} gave no answer: {backend.answer.error}.")
            )
        else:
            reply = Reply(backend.answer.status, headers=dict(backend.headers))
            if backend.content:
                reply.text, reply.media_type = backend.content, backend.media_type or "application/octet-stream"
        reply.off_spec = True  # the backend's answer: never judged as the mock's own
        return reply

    def compare(self, operation_id: str, mine: Answer, theirs: Answer) -> list[str]:
        """verify-provider's rules: the mock's answer as expected, the backend's as got."""
        return answer_differences(self.spec, operation_id, mine, theirs)


def request_target(path: str, query: bytes = b"") -> str:
    """The target a backend gets for a call to `path` (as the ASGI server decoded it) with `query` (as sent): the
    path escaped again, so that httpx reads a `#`, `?` or `%` in it as the data it is, not as the start of a
    fragment, of a query or of an escape; the query as the client sent it, but a `#` (which no client should send)."""
    target = quote(path, safe=_PATH_SAFE)
    return f"{target}?{query.decode('latin-1').replace('#', '%23')}" if query else target


def mock_answer(status: int, body: Any) -> Answer:
    """The mock's reply as the client would have read it (through JSON: exact decimals become numbers)."""
    return Answer(status, None if body is None else decode_json_text(encode_json(body).decode()))


def id_pair(operation_id: str, mine: Answer, theirs: Answer) -> tuple[str, str] | None:
    """(the backend's id, the mock's) for a later call to name, when both sides generated one."""
    ours, backends = generated_id(operation_id, mine), generated_id(operation_id, theirs)
    return (backends, ours) if ours is not None and backends is not None else None


def journal_body(exchange: Exchange) -> Any:
    """The request body as a divergence shows it: JSON when it parses, else its text; None when empty."""
    if not exchange.raw_body:
        return None
    try:
        return parse_json(exchange.raw_body, exchange.content_type)
    except ApiError:
        return exchange.raw_body.decode("utf-8", "replace")
