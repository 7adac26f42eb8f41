"""What a process built to serve, moved out of the cyclic garbage collector's reach once: the one function that
both the app (app.create_app) and the ASGI server's seam (server.Server.run, for an app made otherwise) call, kept
apart from both so that importing the app loads no server."""

from __future__ import annotations

import gc
from functools import cache


@cache
def freeze_start_objects() -> None:
    """What the process built so far (its imports, the app: specs, validators, scenarios) moved out of the cyclic
    collector's reach (`gc.freeze()`), so that no later collection scans it again: it lives as long as the server.
    Once a process (cached): when its first app is built (create_app) or, for an app made otherwise, its first
    server starts; a later one (a test suite building many) would also keep whatever garbage of earlier ones no
    collection has freed yet."""
    gc.freeze()
