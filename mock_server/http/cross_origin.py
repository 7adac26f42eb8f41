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

Rule 2's exception for a body is an allowlist, not a denylist of the form types: a page sends more types than the
form's without a preflight (`text/ping` for `<a ping>`, `application/csp-report` for a CSP report), so only the
types the admin operations take (admin/openapi.yaml's request bodies: JSON and YAML, none of them CORS-safelisted)
stand in for the header.

The public API holds to rule 1 alone, with no exception for a navigation (`foreign_page`): a page on another site
that makes the browser send a lookup (an `<img>`, a `no-cors` fetch, a link) reads nothing of the answer, but the
call would count toward a session's schedules (`after_lookups`), land in its journal, and so in `verify` and the
Pact, and make the session it names. Programs send neither header; the mock's own pages are `same-origin`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

from mock_server.domain.errors import AdminHeaderRequired, ApiError, CrossOriginRequest, bounded_text
from mock_server.wire.headers import RawHeaders

ADMIN_HEADER = "X-Mock-Admin"
SAFE_METHODS = frozenset({"GET", "HEAD"})
# The Content-Types a simple request may carry (the Fetch standard's CORS-safelisted request-header).
FORM_CONTENT_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})
# The media types the admin operations' request bodies take (admin/openapi.yaml; tests/http/test_cross_origin.py
# holds the two equal): a body of one of them stands in for the admin header, as no page sends one unasked.
ADMIN_BODY_TYPES = frozenset({"application/json", "application/yaml", "application/x-yaml", "text/yaml"})
# Headers a browser adds to the requests of a page (a program sends none of them unless told to).
BROWSER_HEADERS = ("origin", "referer", "sec-fetch-site", "sec-fetch-mode", "sec-fetch-dest")
# How every browser's User-Agent starts (Netscape's compatibility token; Presto-era Opera wrote its own name).
BROWSER_AGENTS = ("mozilla/", "opera/")
# The headers `foreign_page` judges a call by: without either it refuses nothing (the pipeline asks only then).
PAGE_HEADERS = frozenset({b"sec-fetch-site", b"origin"})
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


def _foreign(site: str | None, origin: str | None, host: str | None) -> str | None:
    """What a browser said of a request from a page on another origin (`Sec-Fetch-Site: cross-site`), or None
    when it said the page is this origin's, or nothing at all (not a browser, or one too old to say)."""
    if site is not None:
        return f"Sec-Fetch-Site: {bounded_text(site, 40)}" if site.strip().lower() not in OWN_SITES else None
    if origin is not None:
        return f"Origin: {bounded_text(origin, 100)}" if not _same_origin(origin, host) else None
    return None


def foreign_origin(method: str, headers: Mapping[str, str]) -> ApiError | None:
    """Rule 1: the refusal of a request a browser sent for a page on another origin, or None (`headers` by
    lower-case name)."""
    said = _foreign(headers.get("sec-fetch-site"), headers.get("origin"), headers.get("host"))
    if said is None or _navigation(method, headers):
        return None  # rule 2 still holds for what changes state
    return CrossOriginRequest(
        f"The admin API refuses requests from pages on other origins ({said}): a web page must not drive the mock "
        "or read its state. Open the dashboard (/__mock/ui) on this server instead."
    )


def foreign_page(raw_headers: RawHeaders) -> ApiError | None:
    """Rule 1 for the public API: the refusal of a call a browser sent for a page on another origin, a navigation
    included, or None. Read from the headers as the ASGI server gives them, in one walk: every public call asks."""
    site = origin = host = None
    for name, value in raw_headers:
        if name == b"sec-fetch-site":
            site = site or value
        elif name == b"origin":
            origin = origin or value
        elif name == b"host":
            host = host or value
    if site is None and origin is None:  # none of PAGE_HEADERS
        return None  # a program (nearly every call): nothing to decode
    said = _foreign(
        None if site is None else site.decode("latin-1"),
        None if origin is None else origin.decode("latin-1"),
        None if host is None else host.decode("latin-1"),
    )
    if said is None:
        return None
    return CrossOriginRequest(
        f"The API refuses calls from pages on other origins ({said}): a web page must not act in a session behind "
        "a test (a lookup counts toward its schedules and lands in its journal). Call it from a program, or from "
        "the interactive docs (/__mock/docs) on this server."
    )


def from_a_browser(headers: Mapping[str, str]) -> bool:
    """Whether a browser may have sent the request (`headers` by lower-case name): see the module's docstring."""
    if any(name in headers for name in BROWSER_HEADERS):
        return True
    return headers.get("user-agent", "").lstrip().lower().startswith(BROWSER_AGENTS)


def lacks_admin_header(
    method: str, headers: Mapping[str, str], bearer_checked: bool, body_types: Collection[str] = ADMIN_BODY_TYPES
) -> ApiError | None:
    """Rule 2: the refusal of a state-changing call that a simple cross-origin request could have sent, or None.
    `bearer_checked`: the call carried the server's admin token; `body_types`: the media types (lower case) the
    operation's body takes, which no page sends without a preflight."""
    if method in SAFE_METHODS or bearer_checked or not from_a_browser(headers):
        return None
    if ADMIN_HEADER.lower() in headers or "x-mock-session" in headers:
        return None
    content_type = headers.get("content-type")
    if content_type is not None and content_type.partition(";")[0].strip().lower() in body_types:
        return None
    return AdminHeaderRequired(
        f"A {method} to the admin API from a browser needs the header {ADMIN_HEADER}: 1 (or X-Mock-Session, or a "
        "JSON body with Content-Type: application/json): a web page on another origin can send none of them, so it "
        "cannot change the mock's state."
    )
