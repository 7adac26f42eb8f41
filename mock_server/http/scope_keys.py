"""The keys mock-server's own ASGI server puts in a request's `scope["extensions"]`, for what ASGI has no word for.

Their own module, with nothing else in it: the application reads them (an injected `reset` fault drops its
connection by ABORT_EXTENSION), the connection (http/connection.py, uvicorn's protocol) writes them, and the
application must not import the connection: importing the app loads no uvicorn.
"""

from __future__ import annotations

# The scope extension holding `drop()`: close this request's connection at once, with a TCP reset.
ABORT_EXTENSION = "mock_server.drop_connection"
