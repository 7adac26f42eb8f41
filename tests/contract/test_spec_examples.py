"""The public spec's named examples pair up and answer as shown (issue 12 item 3).

Specmatic builds one test per example name (scripts/spec_examples.py reads the spec the same way). These tests
check the pairing, and replay every pair through HTTP on a session fresh from the default scenario, with the seed
and the frozen clock the examples were written with. The 413, 415 and 500 examples, and the capacity_exceeded 409s,
name sessions in which a fault of that status is injected first, as `make interop` does: no example can send a body
over 1 MiB, a media type the operation does not take, provoke a server fault or fill a session.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator
from datetime import datetime
from typing import Any

import pytest
from starlette.testclient import TestClient

from mock_server.app import create_app
from mock_server.settings import Settings
from mock_server.spec.openapi import Specs, load_specs
from scripts.spec_examples import FAULTED_STATUSES, Pair, all_pairs, faults_to_inject, pairing_problems, pairs
from tests.whole_answer_client import WholeAnswerTestClient

SEED = 1
CLOCK = datetime.fromisoformat("2026-11-21T10:00:00-03:00")


def test_every_documented_status_has_a_request_and_a_response_example_of_one_name(specs: Specs) -> None:
    assert pairing_problems(specs.public.document) == []


def test_the_pairing_check_finds_an_unpaired_example(specs: Specs) -> None:
    """The check can fail: the spec as issue 12 found it (a response example EVC100011 alone) breaks it."""
    lookup = specs.public.operations["getExtraordinaryEvent"]
    key = specs.public.document["paths"][lookup.path]["get"]["parameters"][0]
    saved = key["examples"].pop("EVC100011")
    try:
        assert pairing_problems(specs.public.document) == [
            "getExtraordinaryEvent: response example 'EVC100011' has no request example of that name"
        ]
    finally:
        key["examples"]["EVC100011"] = saved


def test_the_faulted_examples_cover_every_operation_that_documents_their_status(specs: Specs) -> None:
    injected = {(operation_id, str(status)) for _, operation_id, status in faults_to_inject(specs.public.document)}
    documented = {
        (op.operation_id, status)
        for op in specs.public.operations.values()
        for status in op.responses
        if status in FAULTED_STATUSES
    }
    assert injected == documented


@pytest.fixture(scope="module")
def seeded(specs: Specs) -> Iterator[TestClient]:
    app = create_app(Settings(seed=SEED, clock=CLOCK, validate_responses=True), specs)
    with WholeAnswerTestClient(app, raise_server_exceptions=True) as client:
        yield client


def fresh_sessions_with_faults(client: TestClient, specs: Specs, sessions: Collection[str] | None = None) -> None:
    """Every session back to the default scenario, then the faults `make interop` injects before Specmatic runs
    (`sessions`: those of these sessions alone)."""
    client.app.state.sessions.clear()  # type: ignore[attr-defined]
    for session, operation_id, status in faults_to_inject(specs.public.document):
        if sessions is not None and session not in sessions:
            continue
        answer = client.post(
            "/__mock/faults",
            json={"operation_id": operation_id, "status": status, "times": None},
            headers={"X-Mock-Session": session},
        )
        assert answer.status_code == 201, answer.text


def send(client: TestClient, pair: Pair) -> Any:
    headers = dict(pair.headers)
    content = None
    if pair.has_body:
        headers["Content-Type"] = "application/json"
        content = json.dumps(pair.body)
    return client.request(pair.method, pair.url(), headers=headers, content=content)


@pytest.mark.parametrize("pair", all_pairs(load_specs().public.document), ids=lambda p: f"{p.operation_id}-{p.name}")
def test_each_example_pair_answers_as_shown_on_a_fresh_default_scenario(
    seeded: TestClient, specs: Specs, pair: Pair
) -> None:
    # The faults of the pair's own session, if it has one: a session sees no other's (the 37 faults of every session
    # were most of each test's time; test_the_examples_leave_no_trace_on_each_other plays every pair beside them all).
    fresh_sessions_with_faults(seeded, specs, [pair.faulted_session] if pair.faulted_session else [])

    answer = send(seeded, pair)

    if pair.status is None:  # the removal's 204
        assert answer.status_code == 204, answer.text
        assert answer.content == b""
        return
    assert str(answer.status_code) == pair.status, answer.text
    got = answer.json()
    if pair.faulted_session is not None:
        assert got["code"] == "injected_fault"  # the fault's own body (the Error schema: --validate-responses)
    else:
        assert got == pair.response


def test_the_examples_leave_no_trace_on_each_other(seeded: TestClient, specs: Specs) -> None:
    """Specmatic runs every pair on one server in its own order: played in spec order and reversed, each on one
    session, every pair still answers its status."""
    everything = all_pairs(specs.public.document)
    assert len(everything) >= 40
    for order in (everything, everything[::-1]):
        fresh_sessions_with_faults(seeded, specs)
        for pair in order:
            answer = send(seeded, pair)
            status = str(answer.status_code)
            assert status == (pair.status or "204"), f"{pair.operation_id} {pair.name}: {answer.text}"


def test_every_example_name_of_an_operation_is_one_request(specs: Specs) -> None:
    """A name's request parts all come from the same example (no operation mixes a path of one and a body of another
    by leaving a parameter without that name)."""
    problems = []
    for operation_id, named in pairs(specs.public.document).items():
        op = specs.public.operations[operation_id]
        path_params = {p.name for p in op.parameters if p.location == "path"}
        for name, pair in named.items():
            if pair.has_request and set(pair.path_params) != path_params:
                problems.append(f"{operation_id} {name}: path parameters {sorted(pair.path_params)}")
            if op.body_required and pair.has_request and not pair.has_body:
                problems.append(f"{operation_id} {name}: no body example")
    assert problems == []
