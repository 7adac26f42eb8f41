"""The exhaustive tier's share of the schemathesis runs (`make test-exhaustive`, in CI): the fuzzing phase's full
campaign (30 generated examples per operation of both specs, where the default tier sends 5 to the public ones
and to the admin ones the spec gives no example of), the coverage phase of every operation of both specs (the
default tier runs it for the public operations without a limits body), `PUT /__mock/state`'s alone about 3,800
boundary and negative bodies built from the state body's schema, and 15 stateful chains of linked calls per spec
(the default tier runs 5).

schemathesis builds those cases when the module is collected, so tests/conftest.py does not collect this module in
a run whose `-m` leaves the `exhaustive` marker out (the default tier): its workers would build them for nothing.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from schemathesis.specs.openapi.schemas import OpenApiSchema

from tests.contract.conformance import SETTINGS, STATEFUL_SETTINGS, load, state_machine

pytestmark = pytest.mark.exhaustive


def _fuzzing_alone(schema: OpenApiSchema) -> OpenApiSchema:
    schema.config.phases.examples.enabled = False  # the default tier sends the examples and the coverage cases
    schema.config.phases.coverage.enabled = False
    return schema


public_fuzzing = _fuzzing_alone(load("openapi.yaml"))
admin_fuzzing = _fuzzing_alone(load("admin/openapi.yaml"))
public_coverage_phase = load("openapi.yaml")
public_coverage_phase.config.phases.examples.enabled = False  # the default tier sends these two
public_coverage_phase.config.phases.fuzzing.enabled = False
admin_coverage_phase = load("admin/openapi.yaml")
admin_coverage_phase.config.phases.examples.enabled = False  # the default tier sends these two
admin_coverage_phase.config.phases.fuzzing.enabled = False


@public_fuzzing.parametrize()
@SETTINGS
def test_public_api_conforms_to_the_full_fuzzing_campaign(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@admin_fuzzing.parametrize()
@SETTINGS
def test_admin_api_conforms_to_the_full_fuzzing_campaign(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@public_coverage_phase.parametrize()
@SETTINGS
def test_public_api_coverage_phase_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


@admin_coverage_phase.parametrize()
@SETTINGS
def test_admin_api_coverage_phase_conforms(case: schemathesis.Case[Any]) -> None:
    case.call_and_validate()


def test_public_api_stateful_full_run() -> None:
    state_machine(load("openapi.yaml")).run(settings=STATEFUL_SETTINGS)


def test_admin_api_stateful_full_run() -> None:
    state_machine(load("admin/openapi.yaml")).run(settings=STATEFUL_SETTINGS)
