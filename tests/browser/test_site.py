"""The documentation site (`make docs`) in chromium: read from disk or served, it loads nothing from elsewhere.

tests/docs/test_site.py checks the built files for off-site assets; here a browser shows every page and reports
every request it makes, so a script that fetches at view time (a CDN polyfill, web fonts) fails too.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, ViewportSize, expect

from tests.browser.conftest import REPOSITORY, open_page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=REPOSITORY,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=True,
        timeout=300,
    )
    return folder


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on loopback, as `python -m http.server --directory site` serves it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_every_page_opened_from_disk_loads_nothing_from_elsewhere(browser: Browser, site: Path) -> None:
    page, watch, context = open_page(browser, site.as_uri())
    try:
        for html in sorted(site.glob("*.html")):
            if html.name == "404.html":
                continue  # a web server's error page: its links start at the server's root, not at a folder
            page.goto(html.as_uri())
            expect(page.locator("article h1").first).to_be_visible()
        page.goto((site / "index.html").as_uri())
        page.locator("nav.md-nav--primary").get_by_text("Scenarios", exact=True).first.click()
        expect(page.locator("article h1").first).to_contain_text("Scenarios")
    finally:
        context.close()
    assert not watch.foreign, f"the site loaded from elsewhere: {watch.foreign}"


def test_the_served_site_searches_with_its_own_index(browser: Browser, served: str) -> None:
    page, watch, context = open_page(browser, served)
    try:
        page.goto(served + "/index.html")
        expect(page.locator("article h1").first).to_contain_text("PIX limits mock server")
        page.locator("label.md-search__icon, .md-search__input").first.click()
        page.locator("input.md-search__input").press_sequentially("sessions", delay=30)  # typed: the theme reads keys
        expect(page.locator(".md-search-result__item").first).to_be_visible()
        expect(page.locator(".md-search-result__meta")).to_contain_text("matching document")
        page.goto(served + "/reference.html")
        expect(page.locator("article h1").first).to_contain_text("Reference")
    finally:
        context.close()
    assert not watch.foreign, f"the site loaded from elsewhere: {watch.foreign}"
    assert not watch.errors, f"console errors: {watch.errors}"


FIRST_SCREEN: ViewportSize = {"width": 1280, "height": 800}  # issue 43's newcomer lost commands here


@pytest.mark.parametrize("name", ["index.html", "getting-started.html", "quickstart.html"])
def test_the_first_screens_commands_are_fully_visible_at_1280_px(browser: Browser, site: Path, name: str) -> None:
    """Issue 43: the README's first code block was cut at the content column's edge (docker build ... && docker run
    ... behind a sideways scrollbar). Every code block that starts on the first screen shows its lines whole."""
    context = browser.new_context(viewport=FIRST_SCREEN)
    try:
        page = context.new_page()
        page.goto((site / name).as_uri())
        expect(page.locator("article h1").first).to_be_visible()
        blocks = page.locator("article pre > code").evaluate_all(
            """codes => codes.filter(code => code.getBoundingClientRect().top < window.innerHeight).map(code => ({
                text: code.innerText.split('\\n')[0],
                hidden: code.scrollWidth - code.clientWidth,
            }))"""
        )
    finally:
        context.close()
    assert blocks, f"{name}: no code block on the first screen"
    cut = [block for block in blocks if block["hidden"] > 1]
    assert not cut, f"{name}: code blocks cut at 1280 px (pixels hidden past the edge): {cut}"
