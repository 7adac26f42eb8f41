"""Schemathesis against both specs, in-process, every check on: the server never contradicts its spec.

The default tier's sample: every operation gets the spec's examples; the public operations also get 5 generated
examples, and those without a limits body (the lookup, the recipient's addition and removal) the coverage phase's
boundary and negative cases; the admin operations the spec gives no example of (their GETs, mostly) get 5 generated
examples instead; the stateful runs send 5 chains of 8 linked calls per spec. The coverage phase of the four
operations with a limits body (~610 cases of the public spec's ~700, ~2.5 s), the other admin operations' generated
examples and their coverage phase (for `PUT /__mock/state`, whose body is a whole state, about 3,800 calls) are the
exhaustive tier's, with the full fuzzing campaign, 30 generated examples per operation of both specs, and 15 chains
per spec (tests/contract/test_schemathesis_exhaustive.py, `make test-exhaustive`, in CI); `make fuzz` runs the same
checks for real, against a server. (Generating 5 examples of the admin bodies cost ~7 s of make test's CPU, most of
it building their strategies: as much for 2.)

Each operation is a test of its own whose cases are built when it runs (conformance.run_operation), in the one
xdist worker that runs it: `@schema.parametrize()` built every operation's cases at collection, ~3 s of CPU in
each worker.
"""

from __future__ import annotations

import functools
import unittest
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from mock_server.spec.openapi import Spec, load_specs

if TYPE_CHECKING:
    import schemathesis
    from schemathesis.specs.openapi.schemas import OpenApiSchema

# Collection builds nothing of schemathesis's (tests/contract/conformance.py, its schemas, its state machines: ~1 s
# in each xdist worker, most of which runs none of these tests): the operations are named from the server's own
# reading of the specs, and test_the_operations_are_those_schemathesis_finds holds the two readings together.
STATE_BODY = "PUT /__mock/state"
# The public operations whose coverage phase is the exhaustive tier's (a limits body: hundreds of cases each).
COVERAGE_IN_THE_EXHAUSTIVE_TIER = frozenset(
    {
        "POST /limits/account",
        "POST /limits/account/{account_id}/limit_update_request",
        "POST /limits/account/{account_id}/recipient_list",
        "POST /limits/account/{account_id}/recipient_list/limit_update_request",
    }
)


def labels(spec: Spec) -> list[str]:
    """`METHOD /path` of each operation, as schemathesis labels them."""
    return [f"{operation.method.upper()} {operation.path}" for operation in spec.operations.values()]


PUBLIC_OPERATIONS = labels(load_specs().public)
ADMIN_OPERATIONS = [label for label in labels(load_specs().admin) if label != STATE_BODY]


@functools.cache
def schemas() -> tuple[OpenApiSchema, OpenApiSchema, OpenApiSchema, OpenApiSchema]:
    """The public spec; the admin spec's examples (its generated cases and coverage phase are the exhaustive tier's,
    30 per operation); the admin spec's generated cases alone, for the operations the spec gives no example of; and
    the public spec without its coverage phase."""
    from tests.contract.conformance import load

    public = load("openapi.yaml")
    public_without_coverage = load("openapi.yaml")
    public_without_coverage.config.phases.coverage.enabled = False
    admin = load("admin/openapi.yaml")
    admin.config.phases.coverage.enabled = False  # the exhaustive tier's (with the state body's)
    admin.config.phases.fuzzing.enabled = False  # the exhaustive tier's (30 per operation), but for admin_generated
    admin_generated = load("admin/openapi.yaml")
    admin_generated.config.phases.coverage.enabled = False
    admin_generated.config.phases.examples.enabled = False
    return public, admin, admin_generated, public_without_coverage


@functools.cache
def conforms() -> Callable[[schemathesis.Case[Any]], None]:
    from tests.contract.conformance import SAMPLE_SETTINGS

    @SAMPLE_SETTINGS
    def conforming(case: schemathesis.Case[Any]) -> None:
        case.call_and_validate()

    return conforming


def run(schema: OpenApiSchema, operation: str) -> None:
    from tests.contract.conformance import run_operation

    run_operation(schema, operation, conforms())


def test_the_operations_are_those_schemathesis_finds() -> None:
    from tests.contract.conformance import operations

    public, admin, _, _ = schemas()
    assert sorted(PUBLIC_OPERATIONS) == sorted(operations(public))
    assert set(PUBLIC_OPERATIONS) > COVERAGE_IN_THE_EXHAUSTIVE_TIER
    assert sorted([*ADMIN_OPERATIONS, STATE_BODY]) == sorted(operations(admin))


@pytest.mark.parametrize("operation", PUBLIC_OPERATIONS)
def test_public_api_conforms(operation: str) -> None:
    public, _, _, public_without_coverage = schemas()
    run(public_without_coverage if operation in COVERAGE_IN_THE_EXHAUSTIVE_TIER else public, operation)


@pytest.mark.parametrize("operation", ADMIN_OPERATIONS)
def test_admin_api_conforms(operation: str) -> None:
    """The operation's examples in the spec; where the spec gives none (the GETs, mostly: no body), 5 generated
    cases instead."""
    if "/__mock/mcp" in operation:
        # The first call to /__mock/mcp imports the MCP SDK (about 1 s, 8-10 s on a loaded machine): imported here,
        # so that schemathesis's 10 s read timeout judges the answers, not an optional extra's one-time import.
        import mock_server.mcp.streamable  # noqa: F401
    _, admin, admin_generated, _ = schemas()
    try:
        run(admin, operation)
    except unittest.SkipTest:  # hypothesis was given no case to run: the spec has no example of it
        run(admin_generated, operation)


def test_admin_state_body_conforms() -> None:
    run(schemas()[1], STATE_BODY)


def stateful_run(spec: str) -> None:
    from tests.contract.conformance import STATEFUL_SAMPLE_SETTINGS, load, state_machine

    state_machine(load(spec)).run(settings=STATEFUL_SAMPLE_SETTINGS)


def test_public_api_stateful() -> None:
    stateful_run("openapi.yaml")


def test_admin_api_stateful() -> None:
    stateful_run("admin/openapi.yaml")
