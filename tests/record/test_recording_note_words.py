"""The words of record mode's notes (domain/recording_notes.py): where two answers part, what was wrong, which
account; never a value of the target's answer nor an original identifier."""

from __future__ import annotations

import pytest

from mock_server.domain.errors import AccountNotFound
from mock_server.domain.recording_notes import (
    account_shown,
    failure_words,
    field_path,
    json_path_at,
    problem_words,
    where_they_part,
)

ANSWER = b'{"a": [1, {"b": "x,y]}", "52998224725": 3}], "c": {}}'


@pytest.mark.parametrize(
    ("at", "path"),
    [
        (0, "$"),
        (2, "$.a"),
        (7, "$.a[0]"),
        (10, "$.a[1]"),
        (17, "$.a[1].b"),
        (20, "$.a[1].b"),  # a comma and brackets within a string are text
        (28, "$.a[1].<field 2>"),  # not a name of the mock's answer: its place, not its text
        (40, "$.a[1].<field 2>"),
        (43, "$.a"),
        (46, "$.c"),
        (51, "$.c"),
        (len(ANSWER) + 5, "$"),
    ],
)
def test_the_json_path_at_a_byte(at: int, path: str) -> None:
    assert json_path_at(ANSWER, at, {"a", "b", "c"}) == path


def test_where_two_answers_part_is_an_offset_and_a_path_never_their_bytes() -> None:
    theirs = b'{"holder":"52998224725","status":"paid"}'
    mine = b'{"status":"paid"}'
    said = where_they_part(theirs, mine, {"status": "paid"})
    assert said == (
        "the target's answer (40 bytes) and the mock's (17 bytes) part at byte 2, at $.<field 1> of the target's answer"
    )
    assert where_they_part(mine + b" ", mine, {"status": "paid"}).endswith(
        "part at byte 17, at $ of the target's answer"
    )


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("must be a string (got 5); 5 is not one of pending_conciliation, paid", "must be a string"),
        ("'52998224725' is not one of pending_conciliation, paid", "must be one of pending_conciliation, paid"),
        ("is not a known field", "is not a field of the interface"),
        ("must have at most 1000 items (it has 1001)", "must have at most 1000 items (it has 1001)"),
        ("does not satisfy `x` (got '52998224725')", "holds a value the interface does not allow"),
        ("1500.123 has more than two decimal places", "has more than two decimal places"),
        ("12 is more than total_expected_amount 10", "is more than total_expected_amount"),
        ("account_id 6383-463288 appears more than once", "appears more than once"),
        ("is required (a date) when status is paid", "is required (a date) when status is paid"),
    ],
)
def test_a_problem_is_said_without_the_value_it_quotes(message: str, words: str) -> None:
    assert problem_words(message) == words


def test_a_field_path_names_only_what_reads_as_a_field_name() -> None:
    assert field_path(["event_conciliation_list", 0, "status"]) == "$.event_conciliation_list[0].status"
    assert field_path(["529.982.247-25", "Holder"]) == "$.<field>.<field>"


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (KeyError("recipient_id"), "the field recipient_id is missing"),
        (KeyError("7c5d6e7f-8a9b-4c0d-8e1f-3a4b5c6d7e8f"), "a field it needs is missing"),
        (
            TypeError("intern() argument must be str, not int"),
            "a field holds a value of another type than the interface's",
        ),
        (ValueError("invalid date '52998224725'"), "a field holds a value the interface does not allow"),
        (
            AccountNotFound("Account 4321-000111 is not registered."),
            "the mock cannot hold what the target showed (account_not_found)",
        ),
    ],
)
def test_a_failure_is_said_in_words_without_its_message(error: Exception, words: str) -> None:
    assert failure_words(error) == words


def test_an_account_is_named_by_its_pseudonym_and_a_long_id_by_its_length() -> None:
    assert account_shown("4321-000111", lambda original: "6383-463288") == "6383-463288"
    assert account_shown("4321-000111", None) == "4321-000111"  # --keep-identifiers: the originals were asked for
    assert account_shown("9" * 65, lambda original: original) == "an account id of 65 characters"


def test_a_file_not_written_is_said_as_the_system_says_it() -> None:
    import errno
    import os

    from mock_server.admin.recording import os_error_words

    assert os_error_words(OSError(errno.EROFS, os.strerror(errno.EROFS), "x")) == "read-only file system"
    assert os_error_words(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "x")) == "no space left on device"
