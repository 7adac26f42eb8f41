"""Schemathesis against both specs, in-process, every check on: the server never contradicts its spec.

Bounded (max_examples below) so `make test` stays fast; `make fuzz` runs the same checks for real.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.schemas import OpenApiSchema

import mock_server.schemathesis_hooks  # noqa: F401  (registers the br-document generator)
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.resources import data_path

MAX_EXAMPLES = 30

app = create_app(Settings(validate_responses=True))


def _schema(name: str) -> OpenApiSchema:
    schema = schemathesis.openapi.from_path(str(data_path(name)))
    schema.app = app
    return schema


public = _schema("openapi.yaml")
admin = _schema("admin/openapi.yaml")

SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


@public.parametrize()
@SETTINGS
def test_public_api_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@admin.parametrize()
@SETTINGS
def test_admin_api_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


class _Stateful:
    """Stateful runs: chains built from the specs' links (registration -> limit change and recipient list ->
    recipient -> removal), each run starting from the seed."""

    @staticmethod
    def machine(schema: OpenApiSchema) -> Any:  # a hypothesis state machine class, built at run time
        base = schema.as_state_machine()

        class Machine(base):  # type: ignore[misc, valid-type]
            def setup(self) -> None:
                app.state.sessions.clear()

        return Machine


PublicMachine = _Stateful.machine(public)
AdminMachine = _Stateful.machine(admin)

STATEFUL_SETTINGS = settings(
    max_examples=15,
    stateful_step_count=8,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


def test_public_api_stateful() -> None:
    PublicMachine.run(settings=STATEFUL_SETTINGS)


def test_admin_api_stateful() -> None:
    AdminMachine.run(settings=STATEFUL_SETTINGS)
