"""jsonschema-rs, the one engine the server validates with, agrees with jsonschema, the reference
implementation, built here from the same inlined schema: where they split, the server would accept what the
reference rejects (or the other way round)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from mock_server.domain.documents import is_valid_document
from mock_server.spec.openapi import SchemaCheck, Specs

WINDOW = {"start_time": "06:00:00-03:00", "amount": 500000}
VALID_BODIES: dict[str, Any] = {
    "registerAccountLimit": {
        "account_id": "0001-1",
        "registration_date": "2026-01-10T09:00:00-03:00",
        "limit": {"pix": {"withdraw": [WINDOW, {"start_time": "20:00:00Z", "amount": 1}]}},
    },
    "createLimitUpdateRequest": {"pix": {"change": [WINDOW]}},
    "createRecipientList": {"limit": {"pix": {"transaction": [WINDOW]}}},
    "addRecipient": {"document_number": "123.456.789-09"},
    "createRecipientListLimitUpdateRequest": {"pix": {"transaction": [WINDOW]}},
}

# Leaves that probe where engines tend to differ: formats, integer-valued floats, huge numbers, odd text.
PROBES: list[Any] = [
    None, True, False, 0, -1, 100.0, 100.5, 2**63 - 1, 2**63, 10**40, 1e300, "", "x", "06:00:00",
    "24:00:00Z", "06:00:00+24:00", "2026-01-10T09:00:00", "2026-01-10t09:00:00z", "2026-02-30T09:00:00Z",
    "2026-12-31T23:59:60Z", "2026-01-10 09:00:00-03:00", "123.456.789-00", "12.ABC.345/01DE-35",
    "12.abc.345/01de-35", "00000000000", "52998224725", "٥٢٩٩٨٢٢٤٧٢٥", [], {}, [WINDOW] * 3,
]  # fmt: skip


# RFC 3339 allows a leap second; rfc3339-validator takes it, jsonschema-rs does not. Either engine's "valid"
# is enough, so the server accepts it (and clock.parse_instant reads :60 as the next second).
KNOWN_SPLITS = {(("registration_date",), "2026-12-31T23:59:60Z")}


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [path] + [p for k, v in value.items() for p in _leaf_paths(v, (*path, k))]
    if isinstance(value, list):
        return [path] + [p for i, v in enumerate(value) for p in _leaf_paths(v, (*path, i))]
    return [path]


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    target = out
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return out


class _Engines:
    """The server's check and the reference validator of the same schema."""

    def __init__(self, check: SchemaCheck) -> None:
        checker = FormatChecker()
        # a format constrains strings only (JSON Schema 2020-12, 7.1): a number is the `type` keyword's business
        checker.checks("br-document")(lambda value: not isinstance(value, str) or is_valid_document(value))
        self.fast = check.fast
        self.validator = Draft202012Validator(check.schema, format_checker=checker)


def _body_check(specs: Specs, operation_id: str) -> _Engines:
    check = specs.public.operations[operation_id].body
    assert check is not None
    return _Engines(check)


@pytest.mark.parametrize("operation_id", sorted(VALID_BODIES))
def test_engines_agree_on_every_single_mutation(specs: Specs, operation_id: str) -> None:
    check = _body_check(specs, operation_id)
    body = VALID_BODIES[operation_id]
    assert check.fast.is_valid(body) and check.validator.is_valid(body)
    split = []
    for path in _leaf_paths(body):
        for probe in PROBES:
            candidate = _replaced(body, path, probe)
            if check.fast.is_valid(candidate) != check.validator.is_valid(candidate):
                split.append((path, probe))
    assert set(split) <= KNOWN_SPLITS


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


# The default tier draws 100 values; the exhaustive tier the full count, 300.
@given(value=json_values, operation_id=st.sampled_from(sorted(VALID_BODIES)))
@settings(max_examples=100, deadline=None)
def test_engines_agree_on_random_json(specs: Specs, value: Any, operation_id: str) -> None:
    _engines_agree(specs, value, operation_id)


@pytest.mark.exhaustive
@given(value=json_values, operation_id=st.sampled_from(sorted(VALID_BODIES)))
@settings(max_examples=300, deadline=None)
def test_engines_agree_on_random_json_full_count(specs: Specs, value: Any, operation_id: str) -> None:
    _engines_agree(specs, value, operation_id)


def _engines_agree(specs: Specs, value: Any, operation_id: str) -> None:
    check = _body_check(specs, operation_id)
    assert check.fast.is_valid(value) == check.validator.is_valid(value)
