"""Schemathesis against both specs, in-process, every check on: the server never contradicts its spec.

The default tier's sample: every operation gets the spec's examples; the public operations also get 5 generated
examples and the coverage phase's boundary and negative cases, the admin operations the spec gives no example of
(their GETs, mostly) 5 generated examples instead; the stateful runs send 5 chains of 8 linked calls per spec. The
other admin operations' generated examples and their coverage phase (for `PUT /__mock/state`, whose body is a whole
state, about 3,800 calls) are the exhaustive tier's, with the full fuzzing campaign, 30 generated examples per
operation of both specs, and 15 chains per spec (tests/contract/test_schemathesis_exhaustive.py, `make
test-exhaustive`, in CI); `make fuzz` runs the same checks for real, against a server. (Generating 5 examples of
the admin bodies cost ~7 s of make test's CPU, most of it building their strategies: as much for 2.)

Each operation is a test of its own whose cases are built when it runs (conformance.run_operation), in the one
xdist worker that runs it: `@schema.parametrize()` built every operation's cases at collection, ~3 s of CPU in
each worker.
"""

from __future__ import annotations

import unittest
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
admin.config.phases.fuzzing.enabled = False  # the exhaustive tier's (30 per operation), but for the next's
admin_generated = load("admin/openapi.yaml")  # for the admin operations the spec gives no example of
admin_generated.config.phases.coverage.enabled = False
admin_generated.config.phases.examples.enabled = False


@SAMPLE_SETTINGS
def conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@pytest.mark.parametrize("operation", operations(public))
def test_public_api_conforms(operation: str) -> None:
    run_operation(public, operation, conforms)


@pytest.mark.parametrize("operation", operations(admin, lambda label: label != STATE_BODY))
def test_admin_api_conforms(operation: str) -> None:
    """The operation's examples in the spec; where the spec gives none (the GETs, mostly: no body), 5 generated
    cases instead."""
    if "/__mock/mcp" in operation:
        # The first call to /__mock/mcp imports the MCP SDK (about 1 s, 8-10 s on a loaded machine): imported here,
        # so that schemathesis's 10 s read timeout judges the answers, not an optional extra's one-time import.
        import mock_server.mcp.streamable  # noqa: F401
    try:
        run_operation(admin, operation, conforms)
    except unittest.SkipTest:  # hypothesis was given no case to run: the spec has no example of it
        run_operation(admin_generated, operation, conforms)


def test_admin_state_body_conforms() -> None:
    run_operation(admin, STATE_BODY, conforms)


PublicMachine = state_machine(load("openapi.yaml"))
AdminMachine = state_machine(load("admin/openapi.yaml"))


def test_public_api_stateful() -> None:
    PublicMachine.run(settings=STATEFUL_SAMPLE_SETTINGS)


def test_admin_api_stateful() -> None:
    AdminMachine.run(settings=STATEFUL_SAMPLE_SETTINGS)
