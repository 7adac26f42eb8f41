"""mock_server.state.coverage: counting answers per operation against the statuses the spec documents."""

from __future__ import annotations

from typing import Any

from mock_server.state.coverage import (
    MAX_FIELDS_PER_OPERATION,
    OTHER_FIELDS,
    Coverage,
    OperationDoc,
    field_key,
    markdown,
)

LOOKUP = OperationDoc("getExtraordinaryEvent", "GET", "/event/{key}", ("200", "400", "404", "500"))
RANGED = OperationDoc("other", "POST", "/other", ("201", "4XX"))


def coverage() -> Coverage:
    return Coverage([LOOKUP, RANGED])


def operation(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(op for op in report["operations"] if op["operation_id"] == name)


def test_nothing_answered_leaves_every_documented_status_never_answered() -> None:
    report = coverage().report()
    assert report["summary"] == {"documented_statuses": 6, "answered": 0, "never_answered": 6, "undocumented": 0}
    assert operation(report, "getExtraordinaryEvent") == {
        "operation_id": "getExtraordinaryEvent",
        "method": "GET",
        "path": "/event/{key}",
        "calls": 0,
        "answered": {},
        "never_answered": ["200", "400", "404", "500"],
        "undocumented": {},
        "injected": {},
        "invalid_fields": {},
    }


def test_answers_are_split_into_documented_and_undocumented() -> None:
    counts = coverage()
    for status in (200, 200, 404, 418):
        counts.record("getExtraordinaryEvent", status)
    lookup = operation(counts.report(), "getExtraordinaryEvent")
    assert lookup["answered"] == {"200": 2, "404": 1}
    assert lookup["never_answered"] == ["400", "500"]
    assert lookup["undocumented"] == {"418": 1}
    assert lookup["calls"] == 4
    assert counts.report()["summary"] == {
        "documented_statuses": 6,
        "answered": 2,
        "never_answered": 4,
        "undocumented": 1,
    }


def test_a_range_key_is_covered_by_any_status_in_it() -> None:
    counts = coverage()
    counts.record("other", 409)
    other = operation(counts.report(), "other")
    assert other["answered"] == {"409": 1}
    assert other["never_answered"] == ["201"]
    assert other["undocumented"] == {}


def test_injected_answers_are_counted_apart_and_cover_nothing() -> None:
    counts = coverage()
    counts.record("getExtraordinaryEvent", 503, injected=True)
    counts.record("getExtraordinaryEvent", 200, injected=True)
    lookup = operation(counts.report(), "getExtraordinaryEvent")
    assert lookup["injected"] == {"200": 1, "503": 1}
    assert lookup["answered"] == {} and lookup["undocumented"] == {}
    assert lookup["never_answered"] == ["200", "400", "404", "500"]
    assert lookup["calls"] == 2


def test_validation_failures_are_counted_by_field_with_indexes_folded() -> None:
    counts = coverage()
    counts.record("other", 400, ["limit.pix.withdraw[0].amount", "limit.pix.withdraw[1].amount", "account_id"])
    counts.record("other", 400, ["account_id", ""])
    assert operation(counts.report(), "other")["invalid_fields"] == {
        "": 1,
        "account_id": 2,
        "limit.pix.withdraw[].amount": 2,
    }
    assert field_key("a[12].b[3]") == "a[].b[]"


def test_distinct_fields_are_bounded() -> None:
    counts = coverage()
    counts.record("other", 400, [f"unknown{i}" for i in range(MAX_FIELDS_PER_OPERATION + 5)])
    fields = operation(counts.report(), "other")["invalid_fields"]
    assert len(fields) == MAX_FIELDS_PER_OPERATION + 1
    assert fields[OTHER_FIELDS] == 5


def test_clear_forgets_every_count() -> None:
    counts = coverage()
    counts.record("getExtraordinaryEvent", 200, ["x"])
    counts.clear()
    assert counts.report() == coverage().report()


def test_markdown_has_a_row_per_operation_and_the_field_table() -> None:
    counts = coverage()
    counts.record("getExtraordinaryEvent", 200)
    counts.record("other", 400, ["account_id"])
    text = markdown(counts.report())
    assert text.startswith("# API coverage\n\n2 of 6 documented statuses answered, 4 never; 0 undocumented")
    assert "| `getExtraordinaryEvent` GET `/event/{key}` | 1 | 200 (1) | 400, 404, 500 | - | - |" in text
    assert "| `other` | `account_id` | 1 |" in text
    assert "None." in markdown(coverage().report())


def test_a_call_counted_without_fields_reads_as_one_recorded_without_them() -> None:
    counted, recorded = coverage(), coverage()
    for status, injected in ((200, False), (200, False), (503, True), (418, False)):
        counted.count("getExtraordinaryEvent", status, injected)
        recorded.record("getExtraordinaryEvent", status, injected=injected)
    assert counted.report() == recorded.report()
