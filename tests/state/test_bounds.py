"""Issue 16 item 3 and 7, the pure rules: sizes as written, the journal's byte bounds, the admin token's bytes."""

from __future__ import annotations

import gc
from datetime import UTC, datetime

import pytest

from mock_server.http.auth import bearer_matches
from mock_server.state.bounds import parse_size
from mock_server.state.journal import ENTRY_OVERHEAD, JOURNAL_BODY_BYTES, JOURNAL_SIZE, Journal, JournalBudget

AT = datetime(2026, 11, 21, 13, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("off", 0),
        ("0", 0),
        ("4096", 4096),
        ("64k", 65536),
        ("64KiB", 65536),
        ("4M", 4 << 20),
        ("4MB", 4 << 20),
        ("1GiB", 1 << 30),
    ],
)
def test_sizes_as_the_command_line_writes_them(text, size):
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["", "-1", "4 TB", "1.5M", "lots"])
def test_what_is_not_a_size(text):
    with pytest.raises(ValueError, match="is not a size"):
        parse_size(text)


def _record(journal: Journal, request: bytes = b"{}", response: bytes = b"{}", path: str = "/p") -> None:
    journal.record(AT, "POST", path, "registerAccountLimit", 201, request, True, response)


def test_a_journal_keeps_the_last_1000_entries():
    journal = Journal()
    for _ in range(JOURNAL_SIZE + 5):
        _record(journal)
    assert len(journal) == JOURNAL_SIZE


def test_a_journal_is_bounded_in_bytes_and_drops_its_oldest_first():
    journal = Journal(max_bytes=10 * 1024)
    for index in range(100):
        _record(journal, request=b'{"i": %d, "pad": "%s"}' % (index, b"x" * 1000))
    assert journal.size_bytes <= 10 * 1024
    kept = journal.entries()
    assert 0 < len(kept) < 100
    assert kept[-1]["request_body"]["i"] == 99  # the newest stay


def test_a_body_over_the_kept_size_reads_back_as_text_with_the_marker():
    journal = Journal()
    big = b'{"a": "' + b"x" * (2 * JOURNAL_BODY_BYTES) + b'"}'
    _record(journal, request=big, response=b'{"code": "invalid_request"}')
    (entry,) = journal.entries()
    assert entry["request_body"].startswith('{"a": "xxx')
    assert entry["request_body"].endswith(f"[truncated: {len(big)} bytes in all]")
    assert len(entry["request_body"]) < JOURNAL_BODY_BYTES + 100
    assert entry["response_body"] == {"code": "invalid_request"}
    assert entry["truncated"] == ["request_body"]
    assert journal.size_bytes <= ENTRY_OVERHEAD + len("/p") + JOURNAL_BODY_BYTES + 100


def test_an_entry_without_a_cut_body_says_nothing_of_truncation():
    journal = Journal()
    _record(journal)
    assert "truncated" not in journal.entries()[0]


def test_the_journal_off_records_nothing():
    journal = Journal(max_bytes=0)
    _record(journal)
    assert not journal.enabled
    assert journal.entries() == []


def test_the_overall_bound_drops_the_oldest_entries_of_any_session():
    budget = JournalBudget(total=50 * 1024)
    first, second = Journal(1024 * 1024, budget), Journal(1024 * 1024, budget)
    pad = b"x" * 1000
    for index in range(40):
        _record(first, request=b'{"i": %d, "p": "%s"}' % (index, pad))
    for index in range(40):
        _record(second, request=b'{"i": %d, "p": "%s"}' % (index, pad))
    assert budget.used <= 50 * 1024
    assert budget.used == first.size_bytes + second.size_bytes
    assert len(second) > len(first)  # the first session's entries were the oldest
    assert second.entries()[-1]["request_body"]["i"] == 39


def test_a_dropped_journal_gives_its_bytes_back_to_the_overall_bound():
    budget = JournalBudget(total=1024 * 1024)
    journal = Journal(1024 * 1024, budget)
    for _ in range(10):
        _record(journal, request=b"x" * 1000)
    assert budget.used > 10_000
    del journal
    gc.collect()
    assert budget.used == 0


def test_the_globally_oldest_goes_first_when_the_sessions_take_turns():
    """Entries recorded in turn by three sessions: past the overall bound, the oldest entry of all goes each time,
    whichever session holds it (each journal's own first entry is its oldest: the lowest of those is dropped)."""
    budget = JournalBudget(total=30 * 1024)
    journals = [Journal(1024 * 1024, budget) for _ in range(3)]
    pad = b"x" * 1000
    for index in range(60):
        _record(journals[index % 3], request=b'{"i": %d, "p": "%s"}' % (index, pad))
    kept = sorted(entry["request_body"]["i"] for journal in journals for entry in journal.entries())
    assert budget.used <= 30 * 1024
    assert kept == list(range(60 - len(kept), 60))  # the newest, whole: nothing newer was dropped before older


def test_an_entry_costs_the_garbage_collector_nothing_once_it_has_seen_it():
    """Entries are plain tuples of bytes, strings and numbers (the headers packed in one bytes object): CPython stops
    tracking such a tuple at its first collection (never a NamedTuple's, nor a list's), so a full journal adds
    nothing to walk."""
    budget = JournalBudget()
    journal = Journal(budget=budget)
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
    journal.record(AT, "POST", "/p", "registerAccountLimit", 201, b"{}", True, b"{}", request_headers=headers)
    gc.collect()
    assert not any(gc.is_tracked(entry) for entry in journal._entries)
    assert journal.entries()[0]["request_headers"] == {"host": "127.0.0.1", "content-type": "application/json"}


def test_packed_headers_read_back_exactly_colons_spaces_and_empty_values_included():
    """An entry keeps its headers as one bytes object of `name: value` lines: a value may hold `: ` and spaces, or
    nothing, and reads back as sent; a call without headers reads back none. Each header's bytes count."""
    journal = Journal()
    headers = [(b"x-url", b"http://h:1/a: b"), (b"x-empty", b""), (b"x-spaces", b"a  b"), (b"x-colon", b":")]
    journal.record(AT, "GET", "/p", "getExtraordinaryEvent", 200, b"", False, b"{}", request_headers=headers)
    journal.record(AT, "GET", "/p", "getExtraordinaryEvent", 200, b"", False, b"{}")
    with_headers, without = journal.entries()
    assert with_headers["request_headers"] == {
        "x-url": "http://h:1/a: b",
        "x-empty": "",
        "x-spaces": "a  b",
        "x-colon": ":",
    }
    assert without["request_headers"] == {}
    lines = sum(len(name) + 2 + len(value) for name, value in headers) + 2 * (len(headers) - 1)
    assert journal.size_bytes == 2 * (ENTRY_OVERHEAD + len("/p") + len(b"{}")) + lines


def test_the_journal_reads_repeated_and_secret_headers_as_before():
    journal = Journal()
    headers = [(b"authorization", b"Bearer x"), (b"x-a", b"1"), (b"x-b", b"2"), (b"x-a", b"3")]
    journal.record(AT, "GET", "/p", "getExtraordinaryEvent", 200, b"", False, b"{}", request_headers=headers)
    assert list(journal.entries()[0]["request_headers"].items()) == [
        ("authorization", "[redacted]"),
        ("x-b", "2"),
        ("x-a", "1"),  # the first of a repeated header wins, in the place of its last
    ]


@pytest.mark.parametrize(
    ("header", "token", "matches"),
    [
        ("Bearer s3cret", "s3cret", True),
        ("bearer   s3cret  ", "s3cret", True),
        ("Bearer s3cret", "other", False),
        ("Basic s3cret", "s3cret", False),
        ("Bearer", "s3cret", False),
        ("Bearer ", "s3cret", False),
        (None, "s3cret", False),
        # what the server sees of a UTF-8 client: one latin-1 char per byte
        ("Bearer " + "sésamo".encode().decode("latin-1"), "sésamo", True),
        ("Bearer sésamo", "sésamo", False),  # latin-1 bytes are not the token's UTF-8
    ],
)
def test_the_bearer_token_is_compared_as_utf8_bytes(header, token, matches):
    assert bearer_matches(header, token) is matches


def test_an_empty_token_never_matches():
    assert not bearer_matches("Bearer ", "")
    assert not bearer_matches("Bearer", "  ")
