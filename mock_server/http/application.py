"""The Starlette application, with the public API's routes found before Starlette's middleware and router.

A public call needs nothing of what Starlette's stack does around it: every route is a spec path whose
PathEndpoint answers every method, and the operation pipeline (http/pipeline.py) renders every error itself.
Yet the stack -- ServerErrorMiddleware, the session prefix, ExceptionMiddleware, the router trying each route in
turn and building the scope it matched -- was about a seventh of a lookup's CPU (bench/cpu_cost.py). So a
request whose path one of the `direct` routes matches, with no root path in play, goes straight to that route's
endpoint, found as the router would find it (the same routes in the same order, the same path parameters);
every other request (the admin API, `/__session/{name}/...`, a path no route has) takes Starlette's whole road.

What the stack would have done for a direct call happens anyway: an exception that escapes an endpoint (none
should) is answered 500 and logged by uvicorn, as ServerErrorMiddleware would have, and is raised to a
TestClient the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import StringConvertor
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

# The first segment of the paths Starlette's road keeps whatever the routes: the admin API and the session prefix.
_ALWAYS_ROUTED = "/__"


class MockApp(Starlette):
    def __init__(self, *, direct: Sequence[Route] = (), **options: Any) -> None:
        super().__init__(**options)
        # Only routes whose parameters are plain strings (the spec's `{name}`): no conversion to repeat here.
        self._direct: list[tuple[re.Pattern[str], Any, ASGIApp]] = [
            (route.path_regex, route.endpoint, route.app)
            for route in direct
            if not route.path.startswith(_ALWAYS_ROUTED)
            and route.methods is None
            and all(type(c) is StringConvertor for c in route.param_convertors.values())
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            path = scope["path"]
            if not path.startswith(_ALWAYS_ROUTED):
                for regex, endpoint, app in self._direct:
                    match = regex.match(path)
                    if match is not None:
                        scope["app"] = self
                        scope["endpoint"] = endpoint
                        scope["path_params"] = match.groupdict()
                        await app(scope, receive, send)
                        return
        await super().__call__(scope, receive, send)
