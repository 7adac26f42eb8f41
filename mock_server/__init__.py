"""A stateful mock of the Extraordinary Amortization Query and PIX Limits Interface, for contract testing.

The parts and the one direction of their imports are drawn in ARCHITECTURE.md (a test holds the package to them):
the porch (this package's top-level modules: app, settings, cli, client, environment, probe, pytest_plugin,
schemathesis_hooks) -> admin, api -> http, scenarios -> state -> spec -> wire -> domain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mock_server.app import create_app
    from mock_server.settings import Settings

__all__ = ["Settings", "__version__", "create_app"]

__version__ = "0.1.0"  # the distribution's version too (pyproject.toml reads it here); `mock-server --version`


def __getattr__(name: str) -> Any:
    # Imported on first use: pytest loads the plugin (mock_server.pytest_plugin) in every run of an integrator's
    # suite, and that must not pay for the app, the specs and Starlette until a test asks for the mock.
    if name == "create_app":
        from mock_server.app import create_app

        return create_app
    if name == "Settings":
        from mock_server.settings import Settings

        return Settings
    raise AttributeError(f"module 'mock_server' has no attribute {name!r}")
