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
from collections.abc import Mapping, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import StringConvertor
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

# The first segment of the paths Starlette's road keeps whatever the routes: the admin API and the session prefix.
_ALWAYS_ROUTED = "/__"
_GROUP = re.compile(r"\(\?P<(\w+)>")


class DirectRoutes:
    """Routes matched by one regular expression: each route's own pattern (Starlette's), its groups renamed, as
    one alternative of it, in the routes' order. Python's alternation takes the first alternative that matches
    whole, so the route found is the one the router, trying them in turn, would find."""

    def __init__(self, routes: Sequence[Route]) -> None:
        self.routes = list(routes)
        # per alternative's group name: the route, its parameters' names and their groups, and its endpoint's
        # `dispatch` (method -> the ASGI app answering it), when it has one
        self._found: dict[str, tuple[Route, tuple[str, ...], tuple[str, ...], Mapping[str, ASGIApp]]] = {}
        alternatives = []
        for index, route in enumerate(self.routes):
            pattern = route.path_regex.pattern
            assert pattern.startswith("^") and pattern.endswith("$"), pattern
            names = tuple(_GROUP.findall(pattern))
            dispatch = getattr(route.endpoint, "dispatch", None) or {}
            self._found[f"r{index}"] = (route, names, tuple(f"p{index}_{name}" for name in names), dispatch)
            body = _GROUP.sub(lambda m, i=index: f"(?P<p{i}_{m.group(1)}>", pattern[1:-1])  # type: ignore[misc]
            alternatives.append(f"(?P<r{index}>{body})")
        self._regex = re.compile("^(?:" + "|".join(alternatives) + ")$") if alternatives else None

    def match(self, path: str) -> tuple[Route, dict[str, str], Mapping[str, ASGIApp]] | None:
        """The route of `path`, its path parameters and its endpoint's dispatch by method, or None."""
        if self._regex is None:
            return None
        found = self._regex.match(path)
        if found is None:
            return None
        route, names, groups, dispatch = self._found[found.lastgroup]  # type: ignore[index]  # the last closed
        if len(names) == 1:  # most routes: one parameter
            return route, {names[0]: found.group(groups[0])}, dispatch
        return route, dict(zip(names, found.group(*groups) if groups else (), strict=True)), dispatch


class MockApp(Starlette):
    def __init__(self, *, direct: Sequence[Route] = (), **options: Any) -> None:
        super().__init__(**options)
        # Only routes whose parameters are plain strings (the spec's `{name}`): no conversion to repeat here.
        self._direct = DirectRoutes(
            [
                route
                for route in direct
                if not route.path.startswith(_ALWAYS_ROUTED)
                and route.methods is None
                and all(type(c) is StringConvertor for c in route.param_convertors.values())
            ]
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path") and not scope["path"].startswith(_ALWAYS_ROUTED):
            found = self._direct.match(scope["path"])
            if found is not None:
                route, params, dispatch = found
                scope["app"] = self
                scope["endpoint"] = route.endpoint
                scope["path_params"] = params
                # The method's own app, straight; the endpoint itself answers what it must judge (a method it
                # lacks, a path holding an escape: pipeline.PathEndpoint).
                app = dispatch.get(scope["method"])
                # find(), not `in`: `bytes in bytes` first tries its operand as an integer (`65 in b"A"`), and a
                # TypeError formatted and dropped at every call cost more than the search (callgrind).
                if app is None or scope.get("raw_path", b"%").find(b"%") >= 0:
                    app = route.app
                await app(scope, receive, send)
                return
        await super().__call__(scope, receive, send)
