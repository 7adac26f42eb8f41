"""Browser tests (`make test-browser`): Playwright drives Debian's chromium against a real `mock-server`.

Never `playwright install`: the browser is the system's (`CHROMIUM` or `chromium` on PATH), headless. Without the
`browser` extra installed these files are not collected, and `make test` deselects them by marker anyway.

Every page a test opens is watched: a request to another origin (a CDN) or an error in the console (a script error,
a Content-Security-Policy violation) fails the test.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live_server import start, stop_process

if importlib.util.find_spec("playwright") is None:  # the `browser` extra is not installed: nothing to run here
    collect_ignore_glob = ["test_*.py"]
else:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, Request, ViewportSize, sync_playwright

REPOSITORY = Path(__file__).resolve().parents[2]
CLOCK = "2026-11-21T10:00:00-03:00"
TOKEN = "browser-s3cret"
# Where the screenshots go: build/screenshots, or docs/screenshots for the docs (SCREENSHOTS=docs/screenshots).
SCREENSHOTS = REPOSITORY / os.environ.get("SCREENSHOTS", "build/screenshots")
VIEWPORT: ViewportSize = {"width": 1360, "height": 900}  # Playwright's TypedDict: a plain dict is dict[str, int]
OPTIONAL_ENDPOINTS = ("/__mock/sessions",)


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    headers: dict[str, str] = field(default_factory=dict)

    def client(self, session: str = "default") -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"X-Mock-Session": session, **self.headers}, timeout=10)


def start_server(*options: str) -> Server:
    """`mock-server --port 0` as a user starts it, seeded and with its clock frozen: the same page every run."""
    running = start("--port", "0", "--seed", "1", "--clock", CLOCK, *options)
    return Server(running.url, running.proc)


def stop_server(server: Server) -> None:
    stop_process(server.process)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    running = start_server()
    yield running
    stop_server(running)


@pytest.fixture(scope="session")
def token_server() -> Iterator[Server]:
    running = start_server("--admin-token", TOKEN)
    running.headers["Authorization"] = f"Bearer {TOKEN}"
    yield running
    stop_server(running)


@pytest.fixture(autouse=True)
def fresh_sessions(request: pytest.FixtureRequest) -> None:
    """The sessions a test uses start from the scenario: reset before the test."""
    if "server" in request.fixturenames:
        live: Server = request.getfixturevalue("server")
        for session in ("default", "other"):
            with live.client(session) as client:
                client.post("/__mock/reset", json={"scenario": "default"}).raise_for_status()


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    executable = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        pytest.fail("no chromium on PATH: `make test-browser` installs Debian's (apt-get install chromium)")
    # --no-sandbox: chromium refuses to run as root with its sandbox, and this machine's CI runs as root.
    launched = playwright.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
    yield launched
    launched.close()


@dataclass
class Watch:
    """What a page did that it should not: requests elsewhere, console errors."""

    origin: str
    foreign: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    expected_errors: list[str] = field(default_factory=list)  # patterns a test provokes on purpose (a 401)

    def request(self, request: Request) -> None:
        if not request.url.startswith((self.origin, "data:")):
            self.foreign.append(request.url)

    def console(self, message: ConsoleMessage) -> None:
        if message.type != "error" or any(re.search(p, message.text) for p in self.expected_errors):
            return
        if message.location.get("url", "").endswith(OPTIONAL_ENDPOINTS):
            return  # the dashboard asks for these and does without where a server lacks them
        self.errors.append(f"{message.text} ({message.location.get('url')})")


def open_page(browser: Browser, origin: str) -> tuple[Page, Watch, Any]:
    context = browser.new_context(viewport=VIEWPORT, locale="en-US", timezone_id="America/Sao_Paulo")
    context.set_default_timeout(10_000)
    page = context.new_page()
    watch = Watch(origin)
    page.on("request", watch.request)
    page.on("console", watch.console)
    page.on("pageerror", lambda error: watch.errors.append(f"page error: {error}"))
    return page, watch, context


@pytest.fixture
def watched(browser: Browser, server: Server) -> Iterator[tuple[Page, Watch]]:
    page, watch, context = open_page(browser, server.url)
    yield page, watch
    context.close()
    assert not watch.foreign, f"the page loaded from elsewhere: {watch.foreign}"
    assert not watch.errors, f"console errors: {watch.errors}"


@pytest.fixture
def page(watched: tuple[Page, Watch]) -> Page:
    return watched[0]


def screenshot(page: Page, name: str, full_page: bool = True) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=full_page)
    return path
