"""Sessions in the URL: every route is also served under `/__session/{name}/...`.

The code under test is an HTTP client configured with a base URL; it never sends X-Mock-Session. With
`base_url = http://host:port/__session/job-42` it works in session job-42 with no header.

This ASGI middleware moves the prefix out of the way before routing, the way a mount does: `scope["path"]`
keeps the whole path the client sent (the journal records it), `scope["root_path"]` gains the prefix (Starlette
routes on what follows it; anything that builds URLs back to the client, such as a served spec's `servers`,
finds the prefix there), and `scope[SESSION_KEY]` carries the name for the pipeline, which validates it like the
header (and refuses a header naming another session).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

PREFIX = "/__session/"
SESSION_KEY = "mock_server.session"  # the session named in the URL, when it names one


def split_session_path(path: str) -> tuple[str, str] | None:
    """(name, rest) of `/__session/{name}/rest`, `rest` with its leading slash (empty when the path ends at the
    name); None when the path has no session prefix."""
    if not path.startswith(PREFIX):
        return None
    name, slash, rest = path[len(PREFIX) :].partition("/")
    return name, slash + rest


class SessionPrefix:
    """Strips `/__session/{name}` into root_path and SESSION_KEY; every other request passes untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path, root = scope["path"], scope.get("root_path", "")
            split = split_session_path(path[len(root) :] if root and path.startswith(root) else path)
            if split is not None:
                scope = dict(scope)
                scope["root_path"] = f"{root}{PREFIX}{split[0]}"
                scope[SESSION_KEY] = split[0]
        await self.app(scope, receive, send)
