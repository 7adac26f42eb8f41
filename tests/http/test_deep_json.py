"""Issue 24, item 3: a JSON body nested 256 to ~990 levels deep parsed, then failed in the schema engine
(jsonschema-rs stops at 255 levels): 500 `internal_error` on every JSON route. Now every body deeper than
MAX_DEPTH levels is 400 `malformed_json` (or, for a YAML state document, `malformed_yaml` with its place) on
every route that takes one, and nothing changes.

Every route that takes a JSON body is tried at the depths around each bound (ours, the engine's, the parser's)
and far past them, as arrays and as objects (the default tier at 5 of those 10 depths, the exhaustive tier at all);
the decoder alone is swept over every depth from 1 to 5000."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from mock_server.spec.openapi import Operation, load_specs
from mock_server.wire.decoding import MAX_DEPTH, parse_json
from tests.default_scenario import FULL_ACCOUNT, PENDING_EVENT
from tests.helpers import assert_error

# Around our bound, the schema engine's (255), the json module's (about 1000 with a stack under it) and far past.
DEPTHS = (1, 7, MAX_DEPTH, MAX_DEPTH + 1, 255, 256, 300, 989, 990, 5000)
# The default tier's sample of them on every route (the exhaustive tier tries them all): our bound on both sides,
# one past the engine's, one past the parser's, and far past.
SAMPLED_DEPTHS = (MAX_DEPTH, MAX_DEPTH + 1, 256, 990, 5000)
PATH_VALUES = {
    "account_id": FULL_ACCOUNT,
    "extraordinary_event_conciliation_key": PENDING_EVENT,
    "recipient_id": "5b0d7e4a-1f2b-4c3d-9e8f-7a6b5c4d3e2f",
    "name": "deep",
    "fault_id": "fault-1",
    "schedule_id": "schedule-1",
}


def _json_operations() -> list[Operation]:
    specs = load_specs()
    operations = [*specs.public.operations.values(), *specs.admin.operations.values()]
    return [op for op in operations if "application/json" in op.body_media_types]


def _url(operation: Operation) -> str:
    return re.sub(r"\{([^}]+)\}", lambda m: PATH_VALUES[m[1]], operation.path)


def deep_arrays(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_objects(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_every_json_route_is_tried() -> None:
    # the spec's routes with a JSON body: the public API's five writes and the admin API's, at least
    assert len(_json_operations()) >= 15


@pytest.mark.parametrize(
    "depths",
    [pytest.param(SAMPLED_DEPTHS, id="sample"), pytest.param(DEPTHS, id="every-depth", marks=pytest.mark.exhaustive)],
)
@pytest.mark.parametrize("operation", _json_operations(), ids=lambda op: op.operation_id)
def test_a_deep_body_is_malformed_json_on_every_json_route_at_every_depth(
    client, operation: Operation, depths: tuple[int, ...]
) -> None:
    url = _url(operation)
    for depth in depths:
        for shape in (deep_arrays, deep_objects):
            response = client.request(
                operation.method, url, content=shape(depth), headers={"Content-Type": "application/json"}
            )
            if depth > MAX_DEPTH:
                body = assert_error(response, 400, "malformed_json")
                assert f"deeper than {MAX_DEPTH} levels" in body["message"], (depth, shape.__name__)
            else:  # schema-invalid or taken: whatever the route says, never a 5xx
                assert response.status_code < 500, (depth, shape.__name__, response.text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 256, 300, 989, 5000])
@pytest.mark.parametrize("text", ["flow", "block", "json-syntax"])
def test_a_deep_yaml_state_document_is_malformed_yaml_with_its_place(client, depth: int, text: str) -> None:
    if text == "block":
        depth = min(depth, 1000)  # block indentation grows as the square of the depth: 5000 levels are 25 MB
    body = {
        "flow": "description: " + deep_arrays(depth),
        "block": "".join("  " * level + "- \n" for level in range(depth)),
        "json-syntax": deep_objects(depth),
    }[text]
    response = client.put("/__mock/state", content=body, headers={"Content-Type": "application/yaml"})
    answer = assert_error(response, 400, "malformed_yaml")
    assert f"nested deeper than {MAX_DEPTH} levels" in answer["message"]
    assert "line " in answer["details"][0]["message"]


def _depths_to_5000(step_past_1100: int) -> Iterator[tuple[int, tuple[Callable[[int], str], ...]]]:
    """Every depth through the parser's own bound (about 1000) in both shapes; past it, every 7th depth as objects
    and every `step_past_1100`th as arrays, and 5000 itself."""
    for depth in range(1, 5001):
        past = depth > 1100
        arrays = (deep_arrays,) if not past or depth % step_past_1100 == 0 or depth == 5000 else ()
        objects = (deep_objects,) if not past or depth % 7 == 0 else ()
        yield depth, arrays + objects


@pytest.mark.parametrize(
    "step_past_1100",
    [
        pytest.param(7, id="sample"),  # the default tier: a body of every depth costs its depth, 12.5 M bytes in all
        pytest.param(1, id="every-depth", marks=pytest.mark.exhaustive),
    ],
)
def test_the_decoder_refuses_exactly_the_bodies_deeper_than_the_bound_at_depths_to_5000(
    step_past_1100: int,
) -> None:
    for depth, shapes in _depths_to_5000(step_past_1100):
        for shape in shapes:
            raw = shape(depth).encode()
            if depth <= MAX_DEPTH:
                parse_json(raw, "application/json")
            else:
                with pytest.raises(Exception) as refused:
                    parse_json(raw, "application/json")
                assert getattr(refused.value, "code", None) == "malformed_json", depth


def test_a_wide_body_with_many_brackets_but_little_depth_is_taken(client) -> None:
    # more brackets than MAX_DEPTH, two levels deep: the depth check must not count brackets
    windows = [{"start_time": "06:00:00-03:00", "amount": n} for n in range(2)]
    body = {"pix": {"withdraw": windows}, "unknown": [[1]] * 60}
    response = client.post(f"/limits/account/{FULL_ACCOUNT}/limit_update_request", json=body)
    assert_error(response, 400, "invalid_request", ["unknown"])
