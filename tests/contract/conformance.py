"""What both schemathesis modules share: the app under test, the specs loaded for schemathesis, its settings."""

from __future__ import annotations

from typing import Any, cast

import schemathesis
from hypothesis import HealthCheck, settings
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


def load(name: str) -> OpenApiSchema:
    """A spec for schemathesis, calling `app` in process; each load has a phases config of its own."""
    schema = schemathesis.openapi.from_path(str(data_path(name)))
    schema.app = app
    return schema


def is_the_state_body(context: Any) -> bool:
    return bool(context.operation.label == STATE_BODY)


def the_state_body_alone(schema: OpenApiSchema) -> OpenApiSchema:
    # `exclude` every other operation: an `include` filter would be one more alternative beside schemathesis's own
    # default filter, which matches every operation.
    return cast(OpenApiSchema, schema.exclude(lambda context: not is_the_state_body(context)))
