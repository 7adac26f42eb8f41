"""The pages a person opens in a browser (/__mock/ui, /__mock/docs) and the files they load.

The dashboard's and the docs' own files live in `static/` beside this module; Swagger UI's come from the
`swagger-ui-bundle-v2` package, read where pip put them (no CDN, no copy in this repository). Each file is read
once, on first use, so start-up pays nothing for pages nobody opens.
"""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
OWN_ASSETS = frozenset({"dashboard.css", "dashboard.js", "docs.css", "docs.js"})
SWAGGER_UI_ASSETS = frozenset({"swagger-ui.css", "swagger-ui-bundle.js", "swagger-ui-standalone-preset.js"})
MEDIA_TYPES = {".css": "text/css", ".js": "text/javascript", ".html": "text/html"}
# The pages load their own scripts and styles and call this server, nothing else. Swagger UI sets inline styles
# and draws its icons as data: URIs.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "Cache-Control": "no-cache"}
ASSET_HEADERS = {"Cache-Control": "no-cache"}


@cache
def swagger_ui_directory() -> Path:
    """The package's `vendor/swagger-ui-5.x.y` (swagger-ui-bundle-v2 installs the module `swagger_ui_bundle`)."""
    return Path(str(importlib.import_module("swagger_ui_bundle").swagger_ui_path))


def swagger_ui_version() -> str:
    """The bundled Swagger UI's version, from its directory's name."""
    return swagger_ui_directory().name.removeprefix("swagger-ui-")


def _path(name: str) -> Path:
    if name in SWAGGER_UI_ASSETS:
        return swagger_ui_directory() / name
    if name in OWN_ASSETS or name in ("dashboard.html", "docs.html"):
        return STATIC / name
    raise KeyError(name)


@cache
def read(name: str) -> tuple[str, str]:
    """A page or asset's text and media type. KeyError for a name that is neither."""
    path = _path(name)
    return path.read_text(encoding="utf-8"), MEDIA_TYPES[path.suffix]
