"""Holding the server in a fault's pause, so that a test proves a delay without timing it (the team's rule: no
timed tests). Every pause of a fault (its delay_ms, a slow body's pauses) is `mock_server.http.fault_replies.sleep`;
a test puts `HeldPauses.sleep` in its place (monkeypatch), sees the pause begin and what it asked for, checks
that nothing was answered yet, then lets it end. Only a server in this process can be held (in-process
TestClient or a uvicorn thread), never a `mock-server` process."""

from __future__ import annotations

import asyncio
import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFETY = 10.0  # seconds a step may take before the test gives up (a hang is a failure, never a wait)


class HeldPauses:
    """`fault_replies.sleep` replaced: each pause says it began, then waits until the test lets it end.

    `events` is what the server did, in the order it did it, as the server saw it (not as a client later read
    it): each pause's beginning and end and, through `watching(app)`, each answer as its head is sent. So the
    order of a pause and an answer is read from the server, not inferred from when a client got something."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.events: list[str] = []
        self.began = threading.Semaphore(0)
        self._go = threading.Semaphore(0)

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.events.append(f"pause of {seconds:g} s begins")
        self.began.release()
        released = await asyncio.to_thread(self._go.acquire, True, SAFETY)
        assert released, "the test never ended the pause"
        self.events.append("pause ends")

    def wait_for_pause(self) -> None:
        assert self.began.acquire(timeout=SAFETY), "the server did not pause"

    def end_pause(self) -> None:
        self._go.release()

    def watching(self, app: ASGIApp) -> ASGIApp:
        """`app`, noting in `events` each answer when its head is sent: `GET /path answered 200`."""

        async def watched(scope: Scope, receive: Receive, send: Send) -> None:
            async def noting(message: Message) -> None:
                if message["type"] == "http.response.start":
                    self.events.append(f"{scope['method']} {scope['path']} answered {message['status']}")
                await send(message)

            await app(scope, receive, noting)

        return watched
