"""/__mock/ui and /__mock/docs: what a browser is served (the browser itself is driven by tests/browser).

The pages hold no data, so they need no token but are off under --no-admin; every file they load comes from this
server (no CDN); the asset list of the spec is the one the server can serve.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser

import httpx
import pytest
from starlette.testclient import TestClient

from mock_server.admin import pages
from mock_server.spec.openapi import Specs
from tests.helpers import assert_error

PAGES = ["/__mock/ui", "/__mock/docs"]


class _References(HTMLParser):
    """The src and href attributes of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found += [value for name, value in attrs if name in ("src", "href") and value]


def references(html: str) -> list[str]:
    parser = _References()
    parser.feed(html)
    return parser.found


@pytest.mark.parametrize("path", PAGES)
def test_a_page_is_html_that_loads_only_this_servers_files(client: httpx.Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    policy = response.headers["content-security-policy"]
    assert "default-src 'self'" in policy and "connect-src 'self'" in policy
    found = references(response.text)
    assert found, "the page loads nothing?"
    for reference in found:
        assert not re.match(r"^[a-z]+://|^//", reference), f"{path} loads {reference} from elsewhere"
        if reference.startswith("data:"):
            continue
        # Relative to the page, so the page also works under /__session/NAME/.
        assert not reference.startswith("/"), f"{path}: {reference} is not relative"
        target = httpx.URL(f"http://testserver{path}").join(reference)
        assert client.get(target.path).status_code == 200, f"{path} refers to {reference}, which is not served"


@pytest.mark.parametrize(
    ("asset", "media_type"),
    [
        ("dashboard.js", "text/javascript"),
        ("dashboard.css", "text/css"),
        ("docs.js", "text/javascript"),
        ("docs.css", "text/css"),
        ("swagger-ui-bundle.js", "text/javascript"),
        ("swagger-ui-standalone-preset.js", "text/javascript"),
        ("swagger-ui.css", "text/css"),
    ],
)
def test_an_asset_is_served_with_its_media_type(client: httpx.Client, asset: str, media_type: str) -> None:
    response = client.get(f"/__mock/assets/{asset}")
    assert response.status_code == 200
    assert response.headers["content-type"] == f"{media_type}; charset=utf-8"
    assert response.text == pages.read(asset)[0]


def test_an_unknown_asset_is_a_400_naming_it(client: httpx.Client) -> None:
    assert_error(client.get("/__mock/assets/secrets.js"), 400, "invalid_request", fields=["asset"])
    assert client.get("/__mock/assets/..%2Fpages.py").status_code in (400, 404)


def test_the_spec_lists_exactly_the_assets_the_server_has(specs: Specs) -> None:
    parameters = specs.admin.document["paths"]["/__mock/assets/{asset}"]["get"]["parameters"]
    (asset,) = [p for p in parameters if p.get("name") == "asset"]
    enum = set(asset["schema"]["enum"])
    assert asset["in"] == "path"
    assert enum == pages.OWN_ASSETS | pages.SWAGGER_UI_ASSETS
    for name in enum:
        assert pages.read(name)[0], f"{name} is empty"


def test_swagger_ui_is_version_5_from_its_package() -> None:
    assert pages.swagger_ui_version().split(".")[0] == "5"
    bundle = pages.read("swagger-ui-bundle.js")[0]
    assert "SwaggerUIBundle" in bundle[:2000]


def test_our_own_scripts_call_no_other_host() -> None:
    for name in [*sorted(pages.OWN_ASSETS), "dashboard.html", "docs.html"]:
        text = pages.read(name)[0]
        assert not re.search(r"https?://", text), f"{name} names an absolute URL"


def test_the_dashboard_script_calls_only_admin_api_paths_the_spec_has(specs: Specs) -> None:
    """Every `api("METHOD", "path")` of the dashboard is an admin operation (placeholders for the path's ids)."""
    script = pages.read("dashboard.js")[0]
    calls = set(re.findall(r'api\("([A-Z]+)", "([a-z/]+)', script))
    assert calls, "the dashboard calls nothing?"
    admin = {(op.method, op.path) for op in specs.admin.operations.values()}
    for method, prefix in calls:
        wanted = f"/__mock/{prefix}"
        matches = [path for m, path in admin if m == method and (path == wanted or path.startswith(wanted))]
        # GET sessions is optional: the dashboard falls back to its own list where a server lacks it.
        assert matches or (method, prefix) == ("GET", "sessions"), f"the dashboard calls {method} {wanted}"


@pytest.mark.parametrize("path", [*PAGES, "/__mock/assets/dashboard.js"])
def test_with_an_admin_token_the_pages_need_none_but_their_data_does(
    make_client: Callable[..., TestClient], path: str
) -> None:
    client = make_client(admin_token="s3cret")
    assert client.get(path).status_code == 200
    assert_error(client.get("/__mock/state"), 401, "unauthorized")
    assert client.get("/__mock/state", headers={"Authorization": "Bearer s3cret"}).status_code == 200


@pytest.mark.parametrize("path", [*PAGES, "/__mock/assets/swagger-ui.css"])
def test_without_the_admin_api_the_pages_are_gone(make_client: Callable[..., TestClient], path: str) -> None:
    assert_error(make_client(admin=False).get(path), 404, "not_found")


def test_the_pages_work_under_a_session_url(client: httpx.Client) -> None:
    page = client.get("/__session/by-url/__mock/ui")
    assert page.status_code == 200
    assert client.get("/__session/by-url/__mock/assets/dashboard.js").status_code == 200
