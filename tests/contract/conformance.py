"""What both schemathesis modules share: the app under test, the specs loaded for schemathesis, its settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import load_all_checks
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.failures import FailureGroup, as_reported_failure
from schemathesis.core.result import Err, Ok
from schemathesis.pytest.lazy import get_all_tests
from schemathesis.python._constants.orchestrator import build_constants_pool
from schemathesis.specs.openapi.schemas import OpenApiSchema

import mock_server.schemathesis_hooks  # noqa: F401  (registers the br-document generator)
from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.resources import data_path

# The fuzzing phase's generated examples per operation: the exhaustive tier's full campaign, the default tier's sample.
MAX_EXAMPLES = 30
SAMPLE_EXAMPLES = 5

app = create_app(Settings(validate_responses=True))


def _settings(max_examples: int, **more: Any) -> settings:
    """Hypothesis's settings for every run here: no deadline, no health check, the same examples each run."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        **more,
    )


SETTINGS = _settings(MAX_EXAMPLES)
SAMPLE_SETTINGS = _settings(SAMPLE_EXAMPLES)

# The stateful runs: chains of STATEFUL_STEPS calls built from the specs' links, STATEFUL_EXAMPLES of them per spec
# in the exhaustive tier, STATEFUL_SAMPLE_EXAMPLES in the default tier (each chain ~0.3 s of one worker).
STATEFUL_STEPS = 8
STATEFUL_EXAMPLES = 15
STATEFUL_SAMPLE_EXAMPLES = 5


STATEFUL_SETTINGS = _settings(STATEFUL_EXAMPLES, stateful_step_count=STATEFUL_STEPS)
STATEFUL_SAMPLE_SETTINGS = _settings(STATEFUL_SAMPLE_EXAMPLES, stateful_step_count=STATEFUL_STEPS)


def state_machine(schema: OpenApiSchema) -> Any:  # a hypothesis state machine class, built at run time
    """Stateful runs: chains built from the specs' links (registration -> limit change and recipient list ->
    recipient -> removal), each run starting from the seed."""
    base = schema.as_state_machine()

    class Machine(base):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            app.state.sessions.clear()

    return Machine


STATE_BODY = "PUT /__mock/state"
T = TypeVar("T")


def load(name: str) -> OpenApiSchema:
    """A spec for schemathesis, calling `app` in process; each load has a phases config of its own."""
    schema = schemathesis.openapi.from_path(str(data_path(name)))
    schema.app = app
    return schema


def _ok(result: Ok[T] | Err[InvalidSchema]) -> T:
    """What schemathesis made, or the spec's problem it met, raised (the test shows it, as schemathesis's does)."""
    if isinstance(result, Err):
        raise result.err()
    return result.ok()


def operations(schema: OpenApiSchema, keep: Callable[[str], bool] = lambda label: True) -> list[str]:
    """The labels (`GET /path`) of the spec's operations that `keep` keeps: cheap, no case is built."""
    return [label for result in schema.get_all_operations() if keep(label := _ok(result).label)]


def run_operation(schema: OpenApiSchema, label: str, test: Callable[[schemathesis.Case[Any]], None]) -> None:
    """`test` on every case of one operation, built now: the spec's examples, the enabled phases' cases (coverage,
    fuzzing), with `test`'s hypothesis settings. What schemathesis's `@schema.parametrize()` builds for every
    operation at collection, in each xdist worker; what its lazy schemas build when the test runs (their pytest
    wrapper, `from_fixture`, reads the `Node._nodeid` pytest 9 no longer has)."""
    load_all_checks()  # as schemathesis's pytest plugin does before it builds a test
    # The constants schemathesis extracts from the app's modules for its cases, once a loaded schema: it caches them
    # on the schema and its clones (exclude() below) share them, but a clone that extracts caches them on itself,
    # so each operation walked the app's modules again (~40 ms, every operation of both specs).
    build_constants_pool(schema)
    # `exclude` every other operation: an `include` filter would be one more alternative beside schemathesis's own
    # default filter, which matches every operation.
    alone = cast(OpenApiSchema, schema.exclude(lambda context: context.operation.label != label))
    (built,) = get_all_tests(schema=alone, test_func=test, settings=None, given_kwargs=None)
    _, run = _ok(built)
    try:
        run()
    except FailureGroup as failures:  # reported as schemathesis's pytest plugin reports them
        raise as_reported_failure(failures) from None
