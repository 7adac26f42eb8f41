"""The mock server's client, as the `pix_mock` fixture hands it out, usable without pytest (a script, unittest,
a container-based test):

    from mock_server.client import PixMock

    with PixMock("http://127.0.0.1:8080", session="job-7", token=None) as mock:
        mock.create(scenario="default")                 # POST /__mock/sessions (a session is also made on first use)
        code_under_test = MyPixClient(base_url=mock.url)  # the session's base URL: .../__session/job-7
        mock.pay("9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11")
        mock.verify("createLimitUpdateRequest", status=201)
        mock.delete()                                   # DELETE /__mock/sessions/job-7

It needs httpx and the standard library only: no pytest, no server.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import http.client
    import ssl

    import httpx

__all__ = ["ANY_CLIENT", "MockServerError", "PixMock", "VerificationFailed"]

JOURNAL_SHOWN = 50  # the last N journal entries a failed verification (or a failed test's report) shows
TIMEOUT = 30.0  # seconds for an answer, when the caller names none
ANY_CLIENT: Any = object()  # verify(client_cnpj=...) not given: calls with any client certificate or none count


class MockServerError(AssertionError):
    """An admin call the client made was refused: the status and the contract's error body say why (the message
    names each field the server complained of, one a line)."""

    def __init__(self, message: str, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status  # the HTTP status answered
        self.body = body  # the contract's error body ({"code", "message", "details"?}), or the text when not JSON


class VerificationFailed(AssertionError):
    """`verify(...)` did not hold: the message is the mock's verdict followed by every call of the operation it
    journaled (the last JOURNAL_SHOWN of them), so a test's output says what the client really did."""

    def __init__(self, message: str, matched: int, calls: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.matched = matched  # the journaled calls that matched the operation, status and body
        self.calls = calls  # every journaled call of the operation, oldest first (journal entries)


class PixMock:
    """A session on a mock server: `.url` for the code under test, `.client` and the admin helpers for the test.

    `base_url`: the server's (`http://127.0.0.1:8080`); `session`: the session's name (1-64 of `A-Za-z0-9._-`;
    None: the server's `default` session, no prefix); `token`: the server's `--admin-token`. `timeout`, `verify`
    (a CA bundle's path, an `ssl.SSLContext` or False) and `cert` (the client certificate, `(cert, key)`) go to the
    httpx client; `transport` is the connection pool it sends through (its own one without it)."""

    def __init__(
        self,
        base_url: str,
        session: str | None = None,
        *,
        token: str | None = None,
        timeout: float = TIMEOUT,
        verify: ssl.SSLContext | str | bool = True,
        cert: str | tuple[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.server_url = base_url.rstrip("/")
        self.name = session
        self.url = f"{self.server_url}/__session/{_segment(session)}" if session is not None else self.server_url
        self.token = token
        self.timeout = timeout
        self._verify = verify
        self._cert = cert
        self._transport = transport
        # X-Mock-Admin: a bodyless admin call that changes state (a cancel, a snapshot) needs it (docs/threat-model.md).
        self._headers = {"X-Mock-Admin": "1", **({"Authorization": f"Bearer {token}"} if token else {})}

    def __repr__(self) -> str:
        return f"PixMock({self.server_url!r}, session={self.name!r})"

    @property
    def session(self) -> str | None:
        """The session's name (None: the server's default session)."""
        return self.name

    @property
    def transport(self) -> httpx.BaseTransport | None:
        """The connection pool `.client` sends through (None: a pool of its own)."""
        return self._transport

    @functools.cached_property
    def client(self) -> httpx.Client:
        """An httpx.Client on `url`, sending X-Mock-Admin: 1 and the admin token when there is one; made when first
        used (code that only hands `url` to the code under test never pays for one)."""
        import httpx

        return httpx.Client(
            base_url=self.url,
            headers=self._headers,
            timeout=self.timeout,
            verify=self._verify,
            cert=self._cert,
            transport=self.transport,
        )

    # --- the session's lifecycle ------------------------------------------------------------------------------

    def create(self, scenario: str | None = None, seed: int | None = None) -> dict[str, Any]:
        """Make the session explicitly (POST /__mock/sessions) on `scenario` (None: the server's) with ids seeded
        by `seed` (None: the server's --seed, if any); 409 (MockServerError) when it exists already."""
        __tracebackhide__ = True
        body: dict[str, Any] = {"name": self._named()}
        if scenario is not None:
            body["scenario"] = scenario
        if seed is not None:
            body["seed"] = seed
        return self._server_call("POST", "/__mock/sessions", body, expect=(201,))

    def delete(self) -> bool:
        """Delete the session (DELETE /__mock/sessions/NAME): True when it was there, False when it was not."""
        __tracebackhide__ = True
        path = f"/__mock/sessions/{_segment(self._named())}"
        response = self.client.request("DELETE", self.server_url + path)
        if response.status_code not in (204, 404):
            raise _refusal("DELETE", self.server_url + path, response.status_code, response.text)
        return response.status_code == 204

    def sessions(self) -> dict[str, Any]:
        """Every session the server holds (GET /__mock/sessions): names, how made, last use, evictions."""
        return self._server_call("GET", "/__mock/sessions")

    def _named(self) -> str:
        if self.name is None:
            raise ValueError("this PixMock names no session: PixMock(base_url, session=NAME)")
        return self.name

    def _server_call(
        self, method: str, path: str, body: Any = None, expect: tuple[int, ...] = (200,)
    ) -> dict[str, Any]:
        __tracebackhide__ = True
        response = self.client.request(method, self.server_url + path, json=body)
        if response.status_code not in expect:
            raise _refusal(method, self.server_url + path, response.status_code, response.text)
        result: dict[str, Any] = response.json()
        return result

    # --- admin calls in the session ---------------------------------------------------------------------------

    def _admin(
        self, method: str, path: str, body: Any = None, expect: int = 200, *, yaml_text: str | None = None
    ) -> Any:
        """Send an admin call (a JSON body, or `yaml_text` as application/yaml); anything but `expect` raises
        MockServerError."""
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        response = self._send(method, path, body, yaml_text)
        if response.status_code != expect:
            raise self._refusal(method, path, response)
        return response.json() if response.content else None

    def _send(self, method: str, path: str, body: Any = None, yaml_text: str | None = None) -> httpx.Response:
        if yaml_text is not None:
            return self.client.request(
                method, f"/__mock{path}", content=yaml_text.encode(), headers={"Content-Type": "application/yaml"}
            )
        return self.client.request(method, f"/__mock{path}", json=body)

    def _refusal(self, method: str, path: str, response: httpx.Response) -> MockServerError:
        return _refusal(method, f"{self.url}/__mock{path}", response.status_code, response.text)

    def reset(self, scenario: str | None = None, seed: int | None = None, *, reseed: bool = False) -> dict[str, Any]:
        """Back to the scenario's seed (switching to `scenario` when given): empty journal, no faults, real
        clock. `seed` (or `reseed=True` with None: random ids) sets the session's id seed."""
        body: dict[str, Any] = {}
        if scenario is not None:
            body["scenario"] = scenario
        if seed is not None or reseed:
            body["seed"] = seed
        result: dict[str, Any] = self._admin("POST", "/reset", body)
        return result

    def freeze(self, at: str | datetime | None) -> dict[str, Any]:
        """Freeze the session clock at `at` (ISO 8601 with an offset, or an aware datetime); None: real time."""
        now = at.isoformat() if isinstance(at, datetime) else at
        result: dict[str, Any] = self._admin("PUT", "/clock", {"now": now})
        return result

    def advance(self, seconds: float | timedelta) -> dict[str, Any]:
        """Move the frozen session clock forward (POST /__mock/clock/advance), applying the schedules whose `at`
        it reaches; the clock must be frozen first (`freeze`, or the marker's `clock`). Answers the clock."""
        amount = seconds.total_seconds() if isinstance(seconds, timedelta) else seconds
        result: dict[str, Any] = self._admin("POST", "/clock/advance", {"seconds": amount})
        return result

    def fault(
        self,
        operation_id: str,
        status: int | None = None,
        body: Any = None,
        delay_ms: int = 0,
        times: int | None = 1,
        kind: str = "respond",
        text: str | None = None,
        match: dict[str, Any] | None = None,
        probability: float | None = None,
        seed: int | None = None,
        jitter_ms: int | None = None,
    ) -> dict[str, Any]:
        """Make the next `times` calls of `operation_id` answer `status` (and `body`) after `delay_ms`; `kind`
        `reset`, `malformed` (with `text`) or `slow_body`, and `match` ({"path": {...}, "body_contains": ...}:
        only the calls it holds for) as POST /__mock/faults describes. With `probability` a matching call fires by
        a draw that replays under `seed` (default: the session's), `times` then counting firings; `jitter_ms` adds
        a wait drawn the same way to `delay_ms`."""
        spec: dict[str, Any] = {"operation_id": operation_id, "kind": kind, "delay_ms": delay_ms, "times": times}
        optional = {
            "status": status,
            "body": body,
            "text": text,
            "match": match,
            "probability": probability,
            "seed": seed,
            "jitter_ms": jitter_ms,
        }
        spec |= {name: value for name, value in optional.items() if value is not None}
        result: dict[str, Any] = self._admin("POST", "/faults", spec, expect=201)
        return result

    def quota(
        self,
        operation_id: str,
        limit: int,
        window_s: int,
        match: dict[str, Any] | None = None,
        probability: float | None = None,
        seed: int | None = None,
    ) -> dict[str, Any]:
        """Let `limit` calls of `operation_id` go on per window of `window_s` seconds of the session's clock
        (aligned to the Unix epoch: 60 is a clock minute) and answer the rest 429 `quota_exceeded` with
        `Retry-After`, until the faults are cleared (a fault of kind `quota`, POST /__mock/faults)."""
        spec: dict[str, Any] = {"operation_id": operation_id, "kind": "quota", "limit": limit, "window_s": window_s}
        optional = {"match": match, "probability": probability, "seed": seed}
        spec |= {name: value for name, value in optional.items() if value is not None}
        result: dict[str, Any] = self._admin("POST", "/faults", spec, expect=201)
        return result

    def faults(self) -> list[dict[str, Any]]:
        """The session's armed faults (GET /__mock/faults): calls left, and for those that fire by chance and
        quotas their seed, the calls they matched and fired on."""
        result: list[dict[str, Any]] = self._admin("GET", "/faults")["faults"]
        return result

    def pay(self, key: str, amount: float | str | None = None, paid_at: str | None = None) -> dict[str, Any]:
        """Pay the event `key`, the open balance unless `amount` is given; answers the event."""
        body: dict[str, Any] = {}
        if amount is not None:
            body["amount"] = float(amount) if isinstance(amount, str) else amount
        if paid_at is not None:
            body["paid_at"] = paid_at
        result: dict[str, Any] = self._admin("POST", f"/events/{_segment(key)}/pay", body)
        return result

    def cancel(self, key: str) -> dict[str, Any]:
        """Cancel the event `key`; answers the event."""
        result: dict[str, Any] = self._admin("POST", f"/events/{_segment(key)}/cancel")
        return result

    def state(self) -> dict[str, Any]:
        """The session's state, as a scenario file writes it."""
        result: dict[str, Any] = self._admin("GET", "/state")
        return result

    def account(self, account_id: str) -> dict[str, Any]:
        """The account `account_id` in this session as a scenario file writes it (GET /__mock/accounts/ID): its
        registration date, limit windows (amounts in integer cents of BRL), recipient list and proposals. An
        account the session does not hold raises MockServerError (status 404, code `account_not_found`)."""
        __tracebackhide__ = True
        result: dict[str, Any] = self._admin("GET", f"/accounts/{_segment(account_id)}")
        return result

    def load_state(self, document: Mapping[str, Any] | str) -> dict[str, Any]:
        """Load a scenario document into the session (PUT /__mock/state): a mapping is sent as JSON, a string as
        YAML (what `state()` answers, or `?format=yaml` exports). Validated as a scenario file: a bad document
        raises MockServerError naming every field at fault, and changes nothing. Answers the counts loaded."""
        if isinstance(document, str):
            result: dict[str, Any] = self._admin("PUT", "/state", yaml_text=document)
        else:
            result = self._admin("PUT", "/state", dict(document))
        return result

    def requests(self) -> list[dict[str, Any]]:
        """The journal: what the public API received in this session, oldest first."""
        result: list[dict[str, Any]] = self._admin("GET", "/requests")["requests"]
        return result

    def verify(
        self,
        operation_id: str,
        *,
        status: int | None = None,
        body_contains: Any = None,
        times: int | None = None,
        at_least: int | None = None,
        at_most: int | None = None,
        client_cnpj: Any = ANY_CLIENT,
    ) -> dict[str, Any]:
        """Assert what the client called (POST /__mock/verify): the session's journaled calls of `operation_id`
        answered `status` whose request body contains `body_contains` (a JSON subset), made with a TLS client
        certificate of `client_cnpj` (None: with none), number exactly `times`, or at least `at_least` and at
        most `at_most` (none of them: at least once). Answers the verdict when it holds;
        raises VerificationFailed listing every call of the operation the mock saw when it does not, and
        MockServerError when the server refuses the question (an unknown operation, times with at_least)."""
        __tracebackhide__ = True
        options = {
            "status": status,
            "body_contains": body_contains,
            "times": times,
            "at_least": at_least,
            "at_most": at_most,
        }
        spec = {"operation_id": operation_id} | {name: value for name, value in options.items() if value is not None}
        if client_cnpj is not ANY_CLIENT:
            spec["client_cnpj"] = client_cnpj
        response = self._send("POST", "/verify", spec)
        failure = response.json() if response.status_code == 409 else None
        if isinstance(failure, dict) and failure.get("code") == "verification_failed":
            raise VerificationFailed(failure_text(self, failure), failure["matched"], failure["calls"])
        if response.status_code != 200:
            raise self._refusal("POST", "/verify", response)
        result: dict[str, Any] = response.json()
        return result

    def coverage(self) -> dict[str, Any]:
        """Server-wide coverage (GET /__mock/coverage): for each public operation, the documented statuses
        answered (with counts), those never answered, undocumented and injected ones, and the fields that failed
        validation. Every session of the server counts."""
        result: dict[str, Any] = self._admin("GET", "/coverage")
        return result

    def coverage_markdown(self) -> str:
        """The same coverage as the Markdown report (GET /__mock/coverage?format=markdown), to print or keep."""
        __tracebackhide__ = True
        response = self.client.get("/__mock/coverage", params={"format": "markdown"})
        if response.status_code != 200:
            raise self._refusal("GET", "/coverage?format=markdown", response)
        return response.text

    def snapshot(self, name: str) -> dict[str, Any]:
        """Copy the session's events, accounts and pending schedules under `name` (POST /__mock/snapshots/NAME;
        replaces one of that name; at most 16 a session). Answers its summary (name, taken_at, counts). A name is
        written as a session's: 1 to 64 of `A-Za-z0-9._-`, not `.` or `..`."""
        result: dict[str, Any] = self._admin("POST", f"/snapshots/{_segment(name)}", expect=201)
        return result

    def restore(self, name: str) -> dict[str, Any]:
        """Put the snapshot `name` back (POST /__mock/snapshots/NAME/restore): the session's events, accounts and
        schedules become its again; the journal, faults, clock and ids stay. The snapshot stays too."""
        result: dict[str, Any] = self._admin("POST", f"/snapshots/{_segment(name)}/restore")
        return result

    def snapshots(self) -> list[dict[str, Any]]:
        """The session's snapshots (GET /__mock/snapshots), in the order first taken."""
        result: list[dict[str, Any]] = self._admin("GET", "/snapshots")["snapshots"]
        return result

    def forget_snapshot(self, name: str) -> None:
        """Forget the snapshot `name` (DELETE /__mock/snapshots/NAME)."""
        self._admin("DELETE", f"/snapshots/{_segment(name)}", expect=204)

    def schedule(
        self,
        key: str,
        action: str,
        *,
        amount: float | str | None = None,
        after_lookups: int | None = None,
        at: str | datetime | None = None,
    ) -> dict[str, Any]:
        """Schedule `action` ("pay", with `amount` or the open balance; or "cancel") on the event `key`, for a
        client that polls (POST /__mock/events/KEY/schedule): the `after_lookups`-th lookup of the event from now
        answers with it applied, or the first call once the session clock reaches `at`. Give one of the two.
        Answers the schedule."""
        body: dict[str, Any] = {"action": action}
        if amount is not None:
            body["amount"] = float(amount) if isinstance(amount, str) else amount
        if after_lookups is not None:
            body["after_lookups"] = after_lookups
        if at is not None:
            body["at"] = at.isoformat() if isinstance(at, datetime) else at
        result: dict[str, Any] = self._admin("POST", f"/events/{_segment(key)}/schedule", body, expect=201)
        return result

    def schedules(self) -> list[dict[str, Any]]:
        """The session's schedules (GET /__mock/schedules) in the order made: pending, applied or failed (with
        the reason in `outcome`)."""
        result: list[dict[str, Any]] = self._admin("GET", "/schedules")["schedules"]
        return result

    def pact(self, consumer: str, provider: str) -> dict[str, Any]:
        """The session's journal as a Pact V4 contract of `consumer` with `provider` (GET /__mock/pact)."""
        __tracebackhide__ = True
        response = self.client.get("/__mock/pact", params={"consumer": consumer, "provider": provider})
        if response.status_code != 200:
            raise self._refusal("GET", "/pact", response)
        result: dict[str, Any] = response.json()
        return result

    def close(self) -> None:
        """Close `.client` (when one was made); the session stays on the server (`delete()` removes it)."""
        client: httpx.Client | None = self.__dict__.pop("client", None)
        if client is not None:
            client.close()

    def __enter__(self) -> PixMock:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def _refusal(method: str, url: str, status: int, text: str) -> MockServerError:
    """The error for a refused admin call: the status, the contract's code and message, then each detail as
    `field: message`, so a bad argument is named in the output."""
    try:
        error = json.loads(text)
    except ValueError:
        error = None
    head = f"{method} {url} answered {status}"
    if not isinstance(error, dict) or "code" not in error:
        return MockServerError(f"{head}: {text}", status, text)
    lines = [f"{head} {error['code']}: {error.get('message', '')}"]
    for detail in error.get("details") or []:
        lines.append(f"    {detail.get('field') or '(the body)'}: {detail.get('message', '')}")
    return MockServerError("\n".join(lines), status, error)


def entries_text(entries: list[dict[str, Any]]) -> list[str]:
    """Journal entries a line each (and their bodies under them), the last JOURNAL_SHOWN."""
    lines = []
    if len(entries) > JOURNAL_SHOWN:
        lines.append(f"(the first {len(entries) - JOURNAL_SHOWN} left out)")
    for entry in entries[-JOURNAL_SHOWN:]:
        answer = "no answer (an injected reset)" if entry["status"] is None else entry["status"]
        lines.append(f"{entry['received_at']} {entry['method']} {entry['path']} -> {answer}")
        if entry["request_body"] is not None:
            lines.append(f"    request:  {json.dumps(entry['request_body'], ensure_ascii=False)}")
        if entry["response_body"] is not None:
            lines.append(f"    response: {json.dumps(entry['response_body'], ensure_ascii=False)}")
    return lines


def failure_text(mock: PixMock, failure: dict[str, Any]) -> str:
    """A failed verification as it is shown: the mock's verdict, then the calls of the operation it saw."""
    calls: list[dict[str, Any]] = failure["calls"]
    seen = f"The calls of the operation the mock journaled in session {mock.name or 'default'}"
    lines = [failure["message"], f"{seen}: none." if not calls else f"{seen}, oldest first:"]
    lines += [f"  {line}" for line in entries_text(calls)]
    return "\n".join(lines)


def _segment(text: str) -> str:
    """`text` as one path segment: a snapshot name may hold spaces, `?` or `#`."""
    return quote(text, safe="")


def shared_transport(pool: httpx.BaseTransport) -> httpx.BaseTransport:
    """`pool` behind a transport whose close() does nothing: a test that closes its `pix_mock.client` (or uses it
    in a `with`) leaves the pool open for the next test (the pytest plugin's run pool)."""
    import httpx

    class SharedTransport(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return pool.handle_request(request)

        def close(self) -> None:
            pass

    return SharedTransport()


class LifecycleConnection:
    """POST /__mock/sessions and DELETE /__mock/sessions/NAME over HTTP, for a server in another process: on one
    kept-alive connection of the standard library's http.client, which costs this process a fifth of what a call
    through httpx does. Through `fallback()` (an httpx client of the run) when the server's URL is https or the
    environment names a proxy for it, so that TLS settings and proxies stay httpx's."""

    def __init__(self, server_url: str, headers: dict[str, str], fallback: Callable[[], httpx.Client]) -> None:
        from urllib.parse import urlsplit
        from urllib.request import getproxies_environment, proxy_bypass

        parts = urlsplit(server_url)
        proxies = getproxies_environment()
        proxied = bool({"http", "all"} & proxies.keys()) and not proxy_bypass(parts.netloc)
        self._direct = parts.scheme == "http" and not proxied
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._headers = headers
        self._fallback = fallback
        self._connection: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, str, bool]:
        """(status, text of the answer, whether the request was sent twice: the kept-alive connection had been
        closed by the server)."""
        if not self._direct:
            answer = self._fallback().request(method, path, json=body)
            return answer.status_code, answer.text, False
        import http.client  # here, not at the top: the pytest plugin imports this module in every pytest run

        payload = None if body is None else json.dumps(body).encode()
        headers = self._headers if payload is None else {**self._headers, "Content-Type": "application/json"}
        with self._lock:
            for attempt in (1, 2):
                connection, reused = self._connect()
                try:
                    connection.request(method, self._prefix + path, body=payload, headers=headers)
                    response = connection.getresponse()
                    text = response.read().decode()
                except (ConnectionError, http.client.BadStatusLine):
                    self.close()
                    if reused and attempt == 1:
                        continue  # closed by the server while idle: once more, on a new connection
                    raise
                except BaseException:
                    self.close()
                    raise
                if response.will_close:
                    self.close()
                return response.status, text, attempt == 2
        raise AssertionError("unreachable")

    def _connect(self) -> tuple[http.client.HTTPConnection, bool]:
        """The kept-alive connection, or a new one when there is none or the server has closed it (an idle
        connection that reads as ready holds the end of the stream)."""
        import http.client
        import select

        connection = self._connection
        if connection is not None and connection.sock is not None and select.select([connection.sock], [], [], 0)[0]:
            self.close()
            connection = None
        if connection is None:
            connection = self._connection = http.client.HTTPConnection(self._host, self._port, timeout=30.0)
            return connection, False
        return connection, True

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
