"""Schemathesis against both specs, in-process, every check on: the server never contradicts its spec.

The default tier's sample: every operation gets the spec's examples and 5 generated examples; the public
operations also get the coverage phase's boundary and negative cases; the stateful runs send 5 chains of 8 linked
calls per spec. The admin operations' coverage phase (for `PUT /__mock/state`, whose body is a whole state, about
3,800 calls), built at collection in both workers, is the exhaustive tier's with the full fuzzing campaign, 30
generated examples per operation, and 15 chains per spec (tests/contract/test_schemathesis_exhaustive.py,
`make test-exhaustive`, in CI); `make fuzz` runs the same checks for real, against a server.
"""

from __future__ import annotations

from typing import Any

import schemathesis

from tests.contract.conformance import (
    SAMPLE_SETTINGS,
    STATEFUL_SAMPLE_SETTINGS,
    is_the_state_body,
    load,
    state_machine,
    the_state_body_alone,
)

public = load("openapi.yaml")
admin = load("admin/openapi.yaml")
admin_but_the_state_body = admin.exclude(is_the_state_body)
admin_but_the_state_body.config.phases.coverage.enabled = False  # the exhaustive tier's (with the state body's)
the_state_body = the_state_body_alone(load("admin/openapi.yaml"))
the_state_body.config.phases.coverage.enabled = False  # the exhaustive tier's


@public.parametrize()
@SAMPLE_SETTINGS
def test_public_api_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@admin_but_the_state_body.parametrize()
@SAMPLE_SETTINGS
def test_admin_api_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@the_state_body.parametrize()
@SAMPLE_SETTINGS
def test_admin_state_body_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


PublicMachine = state_machine(public)
AdminMachine = state_machine(admin)


def test_public_api_stateful() -> None:
    PublicMachine.run(settings=STATEFUL_SAMPLE_SETTINGS)


def test_admin_api_stateful() -> None:
    AdminMachine.run(settings=STATEFUL_SAMPLE_SETTINGS)
