"""mock_server.scenarios.loader.ScenarioLoader: scenario files are validated with a safe loader and every problem
is reported as `FILE:LINE:COLUMN: PATH: message` (CONTRACT 1 and 3)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from mock_server.domain.models import CANCELED, PAID, PENDING
from mock_server.scenarios.loader import Problem, ScenarioError, ScenarioLoader
from mock_server.spec.openapi import Specs
from mock_server.spec.resources import data_path
from tests.default_scenario import PENDING_EVENT

# A small valid scenario; each test changes one line of it. Lines are numbered from 1.
BASE = """\
description: unit-test scenario
events:
  - extraordinary_event_conciliation_key: 9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11
    security_key: 3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90
    investment_key: 6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83
    amortization_type: early_amortization
    total_expected_amount: 1500.00
    total_discount_amount: 0
    total_paid_amount: 0
    status: pending_conciliation
    reference_date: 2026-11-01
    due_date: 2026-11-30
    paid_at: null
    event_conciliation_list:
      - event_conciliation_key: 0b7e4d2a-9c1f-4a3b-8e5d-6f2a1c9b7d40
        installment_key: 4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11
  - extraordinary_event_conciliation_key: 2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44
    security_key: 3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90
    investment_key: 7b3a9d25-6c4f-4a8b-9e0d-2f1c3b5d7e94
    amortization_type: present_amount
    total_expected_amount: 1000.00
    total_discount_amount: 25.50
    total_paid_amount: 974.50
    status: paid
    reference_date: 2026-09-01
    due_date: 2026-09-30
    paid_at: 2026-09-28
    event_conciliation_list:
      - event_conciliation_key: 3e9a6f4c-1d5b-4c7e-8a0f-5b2d8c1e3f66
        installment_key: 6e0c4a8b-3d5f-4b7c-9e1a-2f4d6b8c0e33
accounts:
  - account_id: "0001-123456"
    registration_date: 2026-01-10T09:00:00-03:00
    limit:
      pix:
        withdraw:
          - {start_time: "06:00:00-03:00", amount: 500000}
          - {start_time: "20:00:00-03:00", amount: 300000}
    recipient_list:
      limit: {pix: {transaction: [{start_time: "06:00:00-03:00", amount: 100000}]}}
      recipients:
        - {recipient_id: r-1, document_number: "123.456.789-09"}
        - {recipient_id: r-2, document_number: "11.222.333/0001-81"}
  - account_id: "0002-654321"
    registration_date: 2026-03-05T14:30:00-03:00
    limit: {pix: {change: [{start_time: "06:00:00Z", amount: 1}]}}
"""


@pytest.fixture(scope="module")
def loader(specs: Specs) -> ScenarioLoader:
    return ScenarioLoader.from_specs(specs)


def changed(old: str, new: str, text: str = BASE, count: int = 1) -> str:
    assert text.count(old) >= count, f"{old!r} is not in the scenario"
    return text.replace(old, new, count)


def position(text: str, needle: str, occurrence: int = 1) -> tuple[int, int]:
    """1-based (line, column) of the `occurrence`-th `needle` in `text`."""
    index = -1
    for _ in range(occurrence):
        index = text.index(needle, index + 1)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return line, column


def problems_of(loader: ScenarioLoader, text: str, file: str = "fixtures/s.yaml") -> list[Problem]:
    with pytest.raises(ScenarioError) as raised:
        loader.load_text("s", text, file)
    assert str(raised.value) == "\n".join(map(str, raised.value.problems))
    return raised.value.problems


def only_problem(loader: ScenarioLoader, text: str) -> Problem:
    problems = problems_of(loader, text)
    assert len(problems) == 1, problems
    return problems[0]


# --- valid scenarios ------------------------------------------------------------------------------


def test_base_scenario_loads(loader: ScenarioLoader) -> None:
    scenario = loader.load_text("s", BASE, "s.yaml")

    assert scenario.name == "s"
    assert scenario.description == "unit-test scenario"
    assert sorted(scenario.events) == ["2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44", PENDING_EVENT]
    paid = scenario.events["2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44"]
    assert (paid.status, paid.total_paid_amount, paid.total_discount_amount) == (
        PAID,
        Decimal("974.50"),
        Decimal("25.50"),
    )
    assert [i.event_conciliation_status for i in paid.installments] == [PAID]
    assert sorted(scenario.accounts) == ["0001-123456", "0002-654321"]


def test_shipped_default_scenario_loads(loader: ScenarioLoader) -> None:
    scenarios = loader.load_directory(data_path("fixtures"))

    default = scenarios["default"]
    assert len(default.events) == 4
    assert {e.status for e in default.events.values()} == {PENDING, PAID, CANCELED}
    assert sorted(default.accounts) == ["0001-123456", "0002-654321"]
    assert default.accounts["0001-123456"].recipient_list is not None
    assert default.accounts["0002-654321"].recipient_list is None


def test_optional_event_fields_take_their_defaults(loader: ScenarioLoader) -> None:
    text = changed("    total_discount_amount: 0\n    total_paid_amount: 0\n    status: pending_conciliation\n", "")

    event = loader.load_text("s", text, "s.yaml").events[PENDING_EVENT]

    assert (event.status, event.total_discount_amount, event.total_paid_amount) == (PENDING, Decimal(0), Decimal(0))


def test_uppercase_keys_are_kept_in_lower_case(loader: ScenarioLoader) -> None:
    text = changed(PENDING_EVENT, PENDING_EVENT.upper())

    assert PENDING_EVENT in loader.load_text("s", text, "s.yaml").events


def test_empty_file_is_an_empty_scenario(loader: ScenarioLoader) -> None:
    scenario = loader.load_text("empty", "", "empty.yaml")

    assert (scenario.events, scenario.accounts) == ({}, {})


# --- one problem, at its place --------------------------------------------------------------------


def test_bad_status_names_the_value_and_its_place(loader: ScenarioLoader) -> None:
    text = changed("status: pending_conciliation", "status: payed")

    problem = only_problem(loader, text)

    line, column = position(text, "payed")
    assert str(problem) == (
        f"fixtures/s.yaml:{line}:{column}: events[0].status: 'payed' is not one of pending_conciliation, paid, canceled"
    )
    assert (line, column) == (10, 13)


def test_missing_required_field_points_at_its_event(loader: ScenarioLoader) -> None:
    text = changed("    due_date: 2026-11-30\n", "")

    problem = only_problem(loader, text)

    assert (problem.path, problem.message) == ("events[0].due_date", "is required")
    assert (problem.line, problem.column) == position(text, "extraordinary_event_conciliation_key")


@pytest.mark.parametrize(
    ("old", "new", "path", "message_part", "at"),
    [
        pytest.param(
            "    paid_at: 2026-09-28",
            "    paid_at: ~",
            "events[1].paid_at",
            "is required (a date) when status is paid",
            "~",
            id="paid-without-paid_at",
        ),
        pytest.param(
            "    paid_at: null",
            "    paid_at: 2026-11-02",
            "events[0].paid_at",
            "must be null when status is pending_conciliation",
            "2026-11-02",
            id="paid_at-on-pending",
        ),
        pytest.param(
            "    total_discount_amount: 0\n",
            "    total_discount_amount: 10.00\n",
            "events[0].total_discount_amount",
            "must be 0 unless amortization_type is present_amount",
            "10.00",
            id="discount-on-early-amortization",
        ),
        pytest.param(
            "    total_paid_amount: 974.50",
            "    total_paid_amount: 974.51",
            "events[1].total_paid_amount",
            "974.51 is more than total_expected_amount - total_discount_amount (974.5)",
            "974.51",
            id="paid-above-net",
        ),
        pytest.param(
            "    total_expected_amount: 1500.00",
            "    total_expected_amount: 1500.005",
            "events[0].total_expected_amount",
            "1500.005 has more than two decimal places",
            "1500.005",
            id="three-decimals",
        ),
        pytest.param(
            "  - extraordinary_event_conciliation_key: 2a7d4c1e-8b3f-4e6a-9c5d-3f0b7e2a9c44",
            f"  - extraordinary_event_conciliation_key: {PENDING_EVENT.upper()}",
            "events[1].extraordinary_event_conciliation_key",
            f"event key {PENDING_EVENT} appears more than once",
            "9F1C6F0E",
            id="duplicate-event-key",
        ),
        pytest.param(
            '  - account_id: "0002-654321"',
            '  - account_id: "0001-123456"',
            "accounts[1].account_id",
            "account_id 0001-123456 appears more than once",
            '"0001-123456"\n    registration_date: 2026-03-05',
            id="duplicate-account-id",
        ),
        pytest.param(
            'document_number: "11.222.333/0001-81"',
            'document_number: "12345678909"',
            "accounts[0].recipient_list.recipients[1].document_number",
            "document number 12345678909 appears more than once",
            '"12345678909"',
            id="duplicate-document-in-two-layouts",
        ),
        pytest.param(
            '{start_time: "20:00:00-03:00", amount: 300000}',
            '{start_time: "20:00-03:00", amount: 300000}',
            "accounts[0].limit.pix.withdraw[1].start_time",
            "must match the pattern ^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
            ' (got "20:00-03:00")',
            '"20:00-03:00"',
            id="window-start-time-without-seconds",
        ),
        pytest.param(
            '{start_time: "20:00:00-03:00", amount: 300000}',
            '{start_time: "20:00:00-03:00", amount: 300000.5}',
            "accounts[0].limit.pix.withdraw[1].amount",
            "must be an integer (got 300000.5)",
            "300000.5",
            id="window-fractional-amount",
        ),
        pytest.param(
            '{start_time: "20:00:00-03:00", amount: 300000}',
            '{start_time: "20:00:00-03:00", amount: 300000}\n          - {start_time: "23:00:00-03:00", amount: 1}',
            "accounts[0].limit.pix.withdraw",
            "must have at most 2 items (it has 3)",
            '- {start_time: "06:00:00-03:00"',
            id="three-windows",
        ),
        pytest.param(
            "amount: 100000}]}}",
            'amount: 100000}], withdraw: [{start_time: "06:00:00-03:00", amount: 1}]}}',
            "accounts[0].recipient_list.limit.pix.withdraw",
            "is not a known field",
            '[{start_time: "06:00:00-03:00", amount: 1}]',
            id="recipient-list-mode-other-than-transaction",
        ),
        pytest.param(
            '"123.456.789-09"',
            '"123.456.789-00"',
            "accounts[0].recipient_list.recipients[0].document_number",
            'must be a valid CPF or CNPJ: wrong check digits, or one repeated digit (got "123.456.789-00")',
            '"123.456.789-00"',
            id="invalid-check-digits",
        ),
        pytest.param(
            "        installment_key: 4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11\n",
            "        installment_key: 4c8a2e6f-1b3d-4f5a-9c7e-0d2b4f6a8c11\n"
            "        event_conciliation_status: canceled\n",
            "events[0].event_conciliation_list[0].event_conciliation_status",
            "canceled contradicts the event's status",
            "canceled\n",
            id="instalment-contradicts-event",
        ),
    ],
)
def test_each_problem_is_reported_with_its_place(
    loader: ScenarioLoader, old: str, new: str, path: str, message_part: str, at: str
) -> None:
    text = changed(old, new)

    problem = only_problem(loader, text)

    assert problem.file == "fixtures/s.yaml"
    assert problem.path == path
    assert message_part in problem.message
    assert (problem.line, problem.column) == position(text, at)


def test_unknown_top_level_key_is_reported(loader: ScenarioLoader) -> None:
    text = BASE + "acounts: []\n"

    problem = only_problem(loader, text)

    assert (problem.path, problem.message) == ("acounts", "is not a known field")
    assert problem.line == position(text, "acounts")[0]


def test_document_that_is_not_a_mapping(loader: ScenarioLoader) -> None:
    problem = only_problem(loader, "- 1\n- 2\n")

    assert str(problem) == "fixtures/s.yaml:1:1: (file): must be an object (got [1, 2])"


# --- safe YAML ------------------------------------------------------------------------------------


def test_python_tags_are_an_error_and_never_executed(loader: ScenarioLoader, tmp_path: Path) -> None:
    marker = tmp_path / "executed"
    text = changed(
        "description: unit-test scenario", f"description: !!python/object/apply:os.system ['touch {marker}']"
    )

    problem = only_problem(loader, text)

    assert not marker.exists()
    assert problem.path == ""
    assert "python/object/apply:os.system" in problem.message
    assert (problem.line, problem.column) == position(text, "!!python")
    assert str(problem).startswith(f"fixtures/s.yaml:1:{problem.column}: (file): not a safe YAML document")


@pytest.mark.parametrize("tag", ["!!python/object:os.system", "!!python/name:os.system", "!custom"])
def test_other_non_standard_tags_are_errors(loader: ScenarioLoader, tag: str) -> None:
    text = changed("description: unit-test scenario", f"description: {tag} x")

    problem = only_problem(loader, text)

    assert "not a safe YAML document" in problem.message


def test_invalid_yaml_syntax_reports_where(loader: ScenarioLoader) -> None:
    text = changed("    security_key: 3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90\n", "    security_key: [3d9b1a52\n")

    problem = only_problem(loader, text)

    assert problem.path == ""
    assert problem.message.startswith("invalid YAML: expected ',' or ']' here: the list opened with '[' at line 4,")
    assert "not a safe YAML document" not in problem.message  # that is for tags, not typos
    assert problem.line > position(text, "[3d9b1a52")[0] - 1


# --- every problem --------------------------------------------------------------------------------


def test_every_schema_problem_of_a_file_is_reported(loader: ScenarioLoader) -> None:
    text = changed("status: pending_conciliation", "status: payed")
    text = changed('{start_time: "06:00:00Z", amount: 1}', '{start_time: "06:00:00Z", amount: -1}', text)
    text = changed('"123.456.789-09"', '"123.456.789-00"', text)

    problems = problems_of(loader, text)

    assert sorted(p.path for p in problems) == [
        "accounts[0].recipient_list.recipients[0].document_number",
        "accounts[1].limit.pix.change[0].amount",
        "events[0].status",
    ]


def test_every_cross_check_problem_of_a_file_is_reported(loader: ScenarioLoader) -> None:
    text = changed("    paid_at: null", "    paid_at: 2026-11-02")
    text = changed('  - account_id: "0002-654321"', '  - account_id: "0001-123456"', text)
    text = changed("    total_paid_amount: 974.50", "    total_paid_amount: 1974.50", text)

    problems = problems_of(loader, text)

    assert sorted(p.path for p in problems) == [
        "accounts[1].account_id",
        "events[0].paid_at",
        "events[1].total_paid_amount",
    ]


def test_schema_and_cross_check_problems_are_reported_together(loader: ScenarioLoader) -> None:
    text = changed("status: pending_conciliation", "status: payed")  # schema: events[0]
    text = changed("    total_paid_amount: 974.50", "    total_paid_amount: 1974.50", text)  # cross-check: events[1]
    text = changed('  - account_id: "0002-654321"', '  - account_id: "0001-123456"', text)  # cross-check: accounts

    problems = problems_of(loader, text)

    assert sorted(p.path for p in problems) == [
        "accounts[1].account_id",
        "events[0].status",
        "events[1].total_paid_amount",
    ]
    paid = next(p for p in problems if p.path == "events[1].total_paid_amount")
    assert (paid.line, paid.column) == position(text, "1974.50")


def test_malformed_item_is_left_out_of_the_cross_checks(loader: ScenarioLoader) -> None:
    """A malformed event is reported by the schema only; the well-formed ones are still cross-checked."""
    text = changed("events:\n", "events:\n  - just a string\n")
    text = changed("    total_paid_amount: 974.50", "    total_paid_amount: 1974.50", text)

    problems = problems_of(loader, text)

    assert [(p.path, p.line) for p in problems] == [
        ("events[0]", position(text, "just a string")[0]),
        ("events[2].total_paid_amount", position(text, "1974.50")[0]),
    ]


def test_events_not_a_list_still_cross_checks_the_accounts(loader: ScenarioLoader) -> None:
    text = 'events: {}\naccounts:\n  - {account_id: a, registration_date: "2026-01-10T09:00:00Z", '
    text += 'limit: {pix: {change: [{start_time: "06:00:00Z", amount: 1}]}}}\n'
    text += '  - {account_id: a, registration_date: "2026-01-10T09:00:00Z", '
    text += 'limit: {pix: {change: [{start_time: "06:00:00Z", amount: 1}]}}}\n'

    problems = problems_of(loader, text)

    assert [(p.path, p.line) for p in problems] == [("events", 1), ("accounts[1].account_id", 4)]


def test_load_directory_aggregates_the_problems_of_every_file(loader: ScenarioLoader, tmp_path: Path) -> None:
    (tmp_path / "a_good.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "b_bad.yaml").write_text(changed("status: pending_conciliation", "status: payed"), encoding="utf-8")
    (tmp_path / "c_bad.yml").write_text("events: [\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a scenario: ignored", encoding="utf-8")

    with pytest.raises(ScenarioError) as raised:
        loader.load_directory(tmp_path)

    problems = raised.value.problems
    assert [(Path(p.file).name, p.path) for p in problems] == [("b_bad.yaml", "events[0].status"), ("c_bad.yml", "")]
    assert str(problems[0]).startswith(f"{tmp_path / 'b_bad.yaml'}:10:13: events[0].status: ")


def test_load_directory_returns_every_scenario_by_name(loader: ScenarioLoader, tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "two.yml").write_text("description: empty\n", encoding="utf-8")

    scenarios = loader.load_directory(tmp_path)

    assert sorted(scenarios) == ["one", "two"]
    assert scenarios["two"].description == "empty"


def test_load_directory_of_a_missing_directory(loader: ScenarioLoader, tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as raised:
        loader.load_directory(tmp_path / "missing")

    assert [p.message for p in raised.value.problems] == ["is not a directory"]


def test_file_that_is_not_utf8_is_a_problem(loader: ScenarioLoader, tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes("description: conciliação\n".encode("latin-1"))

    with pytest.raises(ScenarioError) as raised:
        loader.load_file(path)

    [problem] = raised.value.problems
    assert (problem.file, problem.line, problem.column) == (str(path), 1, 1)
    assert "cannot be read" in problem.message


# --- values YAML reads but JSON cannot hold: problems with a place, never a crash ----------------------------


@pytest.mark.parametrize(
    "old, new, path, message",
    [
        (
            "reference_date: 2026-11-01",
            "reference_date: 2026-02-30",
            "events[0].reference_date",
            'must be an RFC 3339 date, like 2026-11-21 (got "2026-02-30")',
        ),
        (
            "reference_date: 2026-11-01",
            'reference_date: "0000-01-01"',
            "events[0].reference_date",
            "outside the dates this mock can hold",
        ),
        (
            "total_expected_amount: 1500.00",
            "total_expected_amount: .nan",
            "events[0].total_expected_amount",
            'must be a number (got ".nan")',
        ),
        (
            "total_expected_amount: 1500.00",
            "total_expected_amount: -.inf",
            "events[0].total_expected_amount",
            'must be a number (got "-.inf")',
        ),
    ],
)
def test_a_value_json_cannot_hold_is_a_problem_where_it_stands(
    loader: ScenarioLoader, old: str, new: str, path: str, message: str
) -> None:
    text = changed(old, new)
    problem = only_problem(loader, text)
    assert (problem.path, (problem.line, problem.column)) == (path, position(text, new.split(": ")[1]))
    assert message in problem.message


def test_unquoted_dates_and_times_are_kept_as_written(loader: ScenarioLoader) -> None:
    """Not through datetime: `Z` stays `Z`, and a leap second (RFC 3339 allows :60) loads."""
    text = changed("registration_date: 2026-03-05T14:30:00-03:00", "registration_date: 2026-12-31T23:59:60Z")
    scenario = loader.load_text("s", text, "s.yaml")
    assert scenario.accounts["0002-654321"].registration_date == "2026-12-31T23:59:60Z"


@pytest.mark.parametrize("key", ["1", "yes", "~", "1.5"])
def test_a_key_that_is_not_a_string_is_an_unknown_field_by_its_text(loader: ScenarioLoader, key: str) -> None:
    problem = only_problem(loader, BASE + f"{key}: x\n")
    assert (problem.path, problem.message) == (key, "is not a known field")


def test_json_syntax_with_nan_is_read_as_yaml_and_rejected_where_it_stands(loader: ScenarioLoader) -> None:
    text = '{"description": "x", "events": [], "accounts": [], "extra": NaN}'
    problem = only_problem(loader, text)
    assert problem.path == "extra"


@pytest.mark.parametrize(
    "text, message",
    [
        ("description: !!timestamp 2026-02-30\n", "cannot be read: day is out of range for month"),
    ],
)
def test_what_no_schema_sees_is_still_one_problem_line(loader: ScenarioLoader, text: str, message: str) -> None:
    problem = only_problem(loader, text)
    assert (problem.line, problem.column, problem.path) == (1, 1, "")
    assert message in problem.message


def test_deep_nesting_is_one_problem_line_at_its_place(loader: ScenarioLoader) -> None:
    """Was `1:1: cannot be read` (RecursionError); issue 16 wants the place: the level past the bound."""
    problem = only_problem(loader, "description: " + "[" * 3000 + "]" * 3000 + "\n")
    assert (problem.line, problem.column, problem.path) == (1, 13 + 100, "")  # the root mapping is level 1
    assert problem.message == "nested deeper than 100 levels"


def test_keys_taken_twice_are_reported_even_in_items_with_schema_problems(loader: ScenarioLoader) -> None:
    """`check` prints every problem: a malformed account still has its duplicates found, and so has the
    account that repeats its id."""
    text = changed(
        '        - {recipient_id: r-2, document_number: "11.222.333/0001-81"}',
        '        - {recipient_id: r-1, document_number: "12345678909"}',
    )
    text = changed('limit: {pix: {change: [{start_time: "06:00:00Z", amount: 1}]}}', "limit: {pix: {change: []}}", text)
    text = changed('account_id: "0002-654321"', 'account_id: "0001-123456"', text)
    text = changed("registration_date: 2026-01-10T09:00:00-03:00", 'registration_date: "2026-01-10"', text)
    found = {(p.path, p.message.split(":")[0]) for p in problems_of(loader, text)}
    assert {p for p, _ in found} >= {
        "accounts[0].registration_date",
        "accounts[0].recipient_list.recipients[1].recipient_id",
        "accounts[0].recipient_list.recipients[1].document_number",
        "accounts[1].account_id",
        "accounts[1].limit.pix.change",
    }


# --- instalments per event: the spec's maxItems, through every reader ----------------------------------


def _instalments(count: int) -> list[dict[str, str]]:
    return [
        {
            "event_conciliation_key": f"00000000-0000-4000-8000-{i:012d}",
            "installment_key": f"10000000-0000-4000-8000-{i:012d}",
        }
        for i in range(count)
    ]


def _scenario_with_instalments(count: int) -> dict[str, object]:
    event = {
        "extraordinary_event_conciliation_key": PENDING_EVENT,
        "security_key": "3d9b1a52-7c4e-4f0a-9b8d-2e6f1c5a7b90",
        "investment_key": "6a2f8c14-5b3d-4e7a-8f9c-1d0e2b4a6c83",
        "amortization_type": "early_amortization",
        "total_expected_amount": 1500.0,
        "reference_date": "2026-11-01",
        "due_date": "2026-11-30",
        "event_conciliation_list": _instalments(count),
    }
    return {"description": "instalments", "events": [event]}


def test_the_spec_bounds_the_instalments_of_an_event(specs: Specs) -> None:
    schema = specs.admin.document["components"]["schemas"]["EventCreation"]
    assert schema["properties"]["event_conciliation_list"]["maxItems"] == 1000


@pytest.mark.parametrize("syntax", ["json", "yaml"])  # json: the lean reader; yaml: the full path
def test_an_event_with_more_instalments_than_the_spec_allows_is_a_located_problem(
    loader: ScenarioLoader, tmp_path: Path, syntax: str
) -> None:
    path = tmp_path / "many.yaml"
    for count, valid in ((1000, True), (1001, False)):
        data = _scenario_with_instalments(count)
        path.write_text(json.dumps(data) if syntax == "json" else yaml.safe_dump(data), encoding="utf-8")
        if valid:
            assert len(loader.load_file(path).events) == 1
            continue
        with pytest.raises(ScenarioError) as raised:
            loader.load_file(path)
        (problem,) = raised.value.problems
        assert problem.path == "events[0].event_conciliation_list"
        assert problem.message == "must have at most 1000 items (it has 1001)"
        assert problem.line >= 1
