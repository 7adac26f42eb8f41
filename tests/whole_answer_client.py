"""Starlette's TestClient, its HTTP exchange made in one call into its event loop.

Starlette's own transport crosses from the test's thread into the portal's loop about eight times a request (an
event, a stream, a cancel scope, the app's task, each body chunk...): ~2 ms of CPU a request, 20 to 30 times what
the app takes to answer, and ~40 s of the default tier's CPU over its 15,000 in-process requests. Here the whole
exchange (the app called, every message it sends collected) is one coroutine run by one `portal.call`: ~0.5 ms.

What the app sees is what Starlette's transport gives it: the same scope, the whole body in one `http.request`
message, then `http.disconnect` once the response is complete. What the test gets is the same too: the status,
the headers decoded the same way, the body (none for HEAD), and the app's exception raised in the test's thread
(`raise_server_exceptions`), or else a bare 500 when nothing was answered. The answer is read whole before the call
returns, as a non-streamed `client.get` reads it anyway: a test that must read an answer as it streams, or a
WebSocket, gets Starlette's transport (WebSockets go to it here by themselves).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import anyio
import starlette.testclient
from starlette.testclient import TestClient, _TestClientTransport
from starlette.types import Message

# The HTTP client library Starlette's TestClient is built on, as Starlette imported it: httpx2 in the releases we
# lock, httpx in Starlette 1.0 (the declared floor, which lowest-check runs). A response of the other library would
# fail the client's own checks.
http_client: Any = getattr(starlette.testclient, "httpx")  # noqa: B009 -- not re-exported for mypy

DEFAULT_PORTS = {"http": 80, "https": 443}


class WholeAnswerTransport(_TestClientTransport):
    """Starlette's transport, but an HTTP request's whole exchange is one call into the portal's loop."""

    def handle_request(self, request: Any) -> Any:
        if request.url.scheme not in DEFAULT_PORTS:  # ws, wss: Starlette's own
            return super().handle_request(request)
        # The scope as starlette.testclient builds it.
        headers = [] if "host" in request.headers else [(b"host", request.url.netloc)]
        headers += [(key.lower().encode(), value.encode()) for key, value in request.headers.multi_items()]
        scope = {
            "type": "http",
            "http_version": "1.1",
            "method": request.method,
            "path": unquote(request.url.path),
            "raw_path": request.url.raw_path.split(b"?", 1)[0],
            "root_path": self.root_path,
            "scheme": request.url.scheme,
            "query_string": request.url.query,
            "headers": headers,
            "client": self.client,
            "server": [request.url.raw_host.decode("ascii"), request.url.port or DEFAULT_PORTS[request.url.scheme]],
            "extensions": {"http.response.debug": {}, "http.response.trailers": {}},
            "state": self.app_state.copy(),
        }
        body = request.read()  # Starlette's transport reads the body whole too
        with self.portal_factory() as portal:
            start, chunks, error = portal.call(self._exchange, scope, body)
        if error is not None and self.raise_server_exceptions:
            raise error
        if start is None:
            if self.raise_server_exceptions:
                raise AssertionError("TestClient did not receive any response.")
            return http_client.Response(500, stream=http_client.ByteStream(b""), request=request)
        status, response_headers = start
        content = b"" if request.method == "HEAD" else b"".join(chunks)
        # stream=, not content=: httpx would add a Content-Length the app did not send
        stream = http_client.ByteStream(content)
        return http_client.Response(status, headers=response_headers, stream=stream, request=request)

    async def _exchange(
        self, scope: dict[str, Any], body: bytes
    ) -> tuple[tuple[int, list[tuple[str, str]]] | None, list[bytes], BaseException | None]:
        """The app called in the loop: its response's start (status, headers), body chunks, and what it raised."""
        request_sent = False
        response_complete = anyio.Event()
        start: tuple[int, list[tuple[str, str]]] | None = None
        chunks: list[bytes] = []

        async def receive() -> Message:
            nonlocal request_sent
            if request_sent:
                await response_complete.wait()
                return {"type": "http.disconnect"}
            request_sent = True
            return {"type": "http.request", "body": body}

        async def send(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                assert start is None, 'Received multiple "http.response.start" messages.'
                start = message["status"], [(k.decode(), v.decode()) for k, v in message.get("headers", [])]
            elif message["type"] == "http.response.body":
                assert start is not None, 'Received "http.response.body" without "http.response.start".'
                assert not response_complete.is_set(), 'Received "http.response.body" after response completed.'
                chunks.append(bytes(message.get("body", b"")))
                if not message.get("more_body", False):
                    response_complete.set()

        try:
            await self.app(scope, receive, send)
        except Exception as exc:  # raised in the test's thread, as Starlette's transport does
            return start, chunks, exc
        return start, chunks, None


class WholeAnswerTestClient(TestClient):
    """A TestClient on WholeAnswerTransport; in every other way Starlette's (enter it to keep one loop)."""

    def __init__(
        self,
        app: Any,
        base_url: str = "http://testserver",
        raise_server_exceptions: bool = True,
        root_path: str = "",
        client: tuple[str, int] = ("testclient", 50000),
        **options: Any,
    ) -> None:
        super().__init__(
            app, base_url, raise_server_exceptions=raise_server_exceptions, root_path=root_path, client=client,
            **options,
        )  # fmt: skip
        self._transport = WholeAnswerTransport(
            self.app,
            portal_factory=self._portal_factory,
            raise_server_exceptions=raise_server_exceptions,
            root_path=root_path,
            app_state=self.app_state,
            client=client,
        )
