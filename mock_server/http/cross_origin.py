"""The admin plane against web pages: a page on another origin can neither drive /__mock nor make it act.

The server sends no CORS header, so no page on another origin reads an answer. But a browser still *sends* what a
page asks for when the request is CORS-"simple": a GET or HEAD, or a POST whose Content-Type an HTML form can send
(text/plain, application/x-www-form-urlencoded, multipart/form-data) and no other header but a few. Such a request
needs no preflight: `fetch(url, {method: "POST", mode: "no-cors"})` or a form's submit reaches the server, and with
no admin token set (the default) a page once paid and cancelled events, reset a session and took a snapshot. Two
rules hold every admin route (/__mock, and the spec downloads), in this order:

1. A request a browser says comes from another origin is refused, 403 `cross_origin_request`: `Sec-Fetch-Site` is
   `cross-site` or `same-site` (every current browser sends it; `same-site` is another port of the same host, such
   as another local dev server), or, where it is missing, `Origin` names another host and port than the Host the
   request went to (`null` included). One exception: a top-level navigation (a link followed, an address typed:
   `Sec-Fetch-Mode: navigate` with `Sec-Fetch-Dest: document`) to a GET, which shows the page to the person and
   nothing to the page that linked it.
2. A call that changes state (every method but GET and HEAD) that a browser may have sent carries what no simple
   request can: an `X-Mock-Admin` header (any value), an `X-Mock-Session` header, or a Content-Type no form can send
   (a JSON or YAML body). Else 403 `admin_header_required`. Rule 1 alone stops a current browser; this one holds
   where `Origin` and `Sec-Fetch-*` are missing (an old browser, an extension that strips them). The admin token,
   when the server has one and the call carries it, counts too: no page can send an `Authorization` header to
   another origin without a preflight.

A browser is known by what it adds to every request a page makes: `Origin`, `Referer`, `Sec-Fetch-*`, or a
User-Agent in the browsers' form (`Mozilla/5.0 (...)`, which every browser's starts with). A page cannot send a
simple request without them: User-Agent is no CORS-safelisted header, so another one needs a preflight, which this
server never grants. A request with none of them comes from a program (curl, httpx, Java's or Go's client), which
could send `X-Mock-Admin` as easily as anything else: asking it of them protects nothing, and the contract's
`POST /__mock/reset` takes no body. So programs are held to neither rule: rule 1 never sees `Origin` or
`Sec-Fetch-*` from them, and rule 2 asks nothing of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from mock_server.domain.errors import AdminHeaderRequired, ApiError, CrossOriginRequest, bounded_text

ADMIN_HEADER = "X-Mock-Admin"
SAFE_METHODS = frozenset({"GET", "HEAD"})
# The Content-Types a simple request may carry (the Fetch standard's CORS-safelisted request-header).
FORM_CONTENT_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
# Headers a browser adds to the requests of a page (a program sends none of them unless told to).
BROWSER_HEADERS = ("origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest")
# How every browser's User-Agent starts (Netscape's compatibility token; Presto-era Opera wrote its own name).
BROWSER_AGENTS = ("mozilla/", "opera/")
# What a browser's Sec-Fetch-Site says of a request from a page of this very origin, or from no page at all.
OWN_SITES = frozenset({"same-origin", "none"})


def _same_origin(origin: str, host: str | None) -> bool:
    """Whether an `Origin` header names the host and port the request was sent to (its Host), as Go's
    `http.CrossOriginProtection` decides it: browsers write both alike, and a proxy that ends TLS changes the scheme
    the server sees but not the Host it passes on."""
    if host is None:
        return False
    parts = urlsplit(origin.strip())
    if not parts.scheme or not parts.netloc or parts.path or parts.query or parts.fragment:
        return False  # `null`, or not a bare origin
    return parts.netloc.lower() == host.strip().lower()


def _navigation(method: str, headers: Mapping[str, str]) -> bool:
    """A link followed or an address typed, opening a document: what it answers goes to the person, not a page."""
    return (
        method in SAFE_METHODS
        and headers.get("sec-fetch-mode") == "navigate"
        and headers.get("sec-fetch-dest") == "document"
    )


def foreign_origin(method: str, headers: Mapping[str, str]) -> ApiError | None:
    """Rule 1: the refusal of a request a browser sent for a page on another origin, or None (`headers` by
    lower-case name)."""
    site = headers.get("sec-fetch-site")
    origin = headers.get("origin")
    if site is not None:
        foreign = site.strip().lower() not in OWN_SITES
        said = f"Sec-Fetch-Site: {bounded_text(site, 40)}"
    elif origin is not None:
        foreign = not _same_origin(origin, headers.get("host"))
        said = f"Origin: {bounded_text(origin, 100)}"
    else:
        return None  # not a browser, or one too old to say: rule 2 still holds for what changes state
    if not foreign or _navigation(method, headers):
        return None
    return CrossOriginRequest(
        f"The admin API refuses requests from pages on other origins ({said}): a web page must not drive the mock "
        "or read its state. Open the dashboard (/__mock/ui) on this server instead."
    )


def from_a_browser(headers: Mapping[str, str]) -> bool:
    """Whether a browser may have sent the request (`headers` by lower-case name): see the module's docstring."""
    if any(name in headers for name in BROWSER_HEADERS):
        return True
    return headers.get("user-agent", "").lstrip().lower().startswith(BROWSER_AGENTS)


def lacks_admin_header(method: str, headers: Mapping[str, str], bearer_checked: bool) -> ApiError | None:
    """Rule 2: the refusal of a state-changing call that a simple cross-origin request could have sent, or None.
    `bearer_checked`: the call carried the server's admin token."""
    if method in SAFE_METHODS or bearer_checked or not from_a_browser(headers):
        return None
    if ADMIN_HEADER.lower() in headers or "x-mock-session" in headers:
        return None
    content_type = headers.get("content-type")
    if content_type is not None and content_type.partition(";")[0].strip().lower() not in FORM_CONTENT_TYPES:
        return None
    return AdminHeaderRequired(
        f"A {method} to the admin API from a browser needs the header {ADMIN_HEADER}: 1 (or X-Mock-Session, or a "
        "JSON body with Content-Type: application/json): a web page on another origin can send none of them, so it "
        "cannot change the mock's state."
    )
