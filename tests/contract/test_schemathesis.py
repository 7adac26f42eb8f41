"""Schemathesis against both specs, in-process, every check on: the server never contradicts its spec.

The default tier's sample: every operation gets the spec's examples and 5 generated examples; the public
operations also get the coverage phase's boundary and negative cases; the stateful runs send 5 chains of 8 linked
calls per spec. The admin operations' coverage phase (for `PUT /__mock/state`, whose body is a whole state, about
3,800 calls) is the exhaustive tier's with the full fuzzing campaign, 30 generated examples per operation, and 15
chains per spec (tests/contract/test_schemathesis_exhaustive.py, `make test-exhaustive`, in CI); `make fuzz` runs
the same checks for real, against a server.

Each operation is a test of its own whose cases are built when it runs (conformance.run_operation), in the one
xdist worker that runs it: `@schema.parametrize()` built every operation's cases at collection, ~3 s of CPU in
each worker.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis

from tests.contract.conformance import (
    SAMPLE_SETTINGS,
    STATE_BODY,
    STATEFUL_SAMPLE_SETTINGS,
    load,
    operations,
    run_operation,
    state_machine,
)

public = load("openapi.yaml")
admin = load("admin/openapi.yaml")
admin.config.phases.coverage.enabled = False  # the exhaustive tier's (with the state body's)


@SAMPLE_SETTINGS
def conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@pytest.mark.parametrize("operation", operations(public))
def test_public_api_conforms(operation: str) -> None:
    run_operation(public, operation, conforms)


@pytest.mark.parametrize("operation", operations(admin, lambda label: label != STATE_BODY))
def test_admin_api_conforms(operation: str) -> None:
    if "/__mock/mcp" in operation:
        # The first call to /__mock/mcp imports the MCP SDK (about 1 s, 8-10 s on a loaded machine): imported here,
        # so that schemathesis's 10 s read timeout judges the answers, not an optional extra's one-time import.
        import mock_server.mcp.streamable  # noqa: F401
    run_operation(admin, operation, conforms)


def test_admin_state_body_conforms() -> None:
    run_operation(admin, STATE_BODY, conforms)


PublicMachine = state_machine(load("openapi.yaml"))
AdminMachine = state_machine(load("admin/openapi.yaml"))


def test_public_api_stateful() -> None:
    PublicMachine.run(settings=STATEFUL_SAMPLE_SETTINGS)


def test_admin_api_stateful() -> None:
    AdminMachine.run(settings=STATEFUL_SAMPLE_SETTINGS)
