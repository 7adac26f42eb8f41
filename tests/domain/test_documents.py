from __future__ import annotations

import importlib
import random
import re
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.formats import STRING_FORMATS

from mock_server import schemathesis_hooks
from mock_server.domain.documents import (
    DOCUMENT_PATTERN,
    bare_cnpj,
    canonical_document,
    format_document,
    generate_cnpj,
    generate_cpf,
    is_valid_document,
)
from mock_server.schemathesis_hooks import br_documents

# Check digits of every example were recomputed independently of `mock_server.domain.documents`.
VALID_CPFS = [
    ("529.982.247-25", "52998224725"),
    ("123.456.789-09", "12345678909"),
    ("111.444.777-35", "11144477735"),
]
VALID_CNPJS = [
    ("11.222.333/0001-81", "11222333000181"),
    ("12.345.678/0001-95", "12345678000195"),
    # The Receita Federal's published alphanumeric example.
    ("12.ABC.345/01DE-35", "12ABC34501DE35"),
]
VALID_PAIRS = VALID_CPFS + VALID_CNPJS
VALID = [value for pair in VALID_PAIRS for value in pair]


def matches_pattern(value: str) -> bool:
    return re.fullmatch(DOCUMENT_PATTERN, value) is not None


@pytest.mark.parametrize("value", VALID)
def test_known_documents_are_valid(value: str) -> None:
    assert matches_pattern(value)
    assert is_valid_document(value)


@pytest.mark.parametrize(("punctuated", "bare"), VALID_PAIRS)
def test_both_layouts_canonicalise_equal(punctuated: str, bare: str) -> None:
    assert canonical_document(punctuated) == bare
    assert canonical_document(bare) == bare
    assert format_document(bare) == punctuated


def _with_char(value: str, index: int, char: str) -> str:
    return value[:index] + char + value[index + 1 :]


@pytest.mark.parametrize("value", VALID)
@pytest.mark.parametrize("position", [-2, -1])
def test_any_other_check_digit_is_invalid(value: str, position: int) -> None:
    index = len(value) + position
    for digit in "0123456789":
        if digit != value[index]:
            tampered = _with_char(value, index, digit)
            assert matches_pattern(tampered), tampered
            assert not is_valid_document(tampered), tampered


@pytest.mark.parametrize("digit", "0123456789")
@pytest.mark.parametrize("length", [11, 14])
def test_repeated_digits_are_invalid(digit: str, length: int) -> None:
    bare = digit * length
    for value in (bare, format_document(bare)):
        assert matches_pattern(value)
        assert not is_valid_document(value)


def test_repeated_digits_rule_is_not_just_arithmetic() -> None:
    # These carry arithmetically correct check digits, so only the repeated-digit rule rejects them.
    assert not is_valid_document("11111111111")
    assert not is_valid_document("000.000.000-00")
    assert not is_valid_document("00000000000000")
    assert not is_valid_document("00.000.000/0000-00")


WRONG_LAYOUTS = [
    "",
    # mixed or misplaced punctuation
    "529.982.24725",
    "529982247-25",
    "529.982.247.25",
    "529-982-247-25",
    "529.982.247/25",
    "11.222.3330001-81",
    "11222333/0001-81",
    "11.222.333.0001-81",
    "11.222.333/000181",
    "112.223.330/001-81",
    # lowercase letters
    "12.abc.345/01de-35",
    "12abc34501de35",
    "12.ABC.345/01dE-35",
    # letters in a CPF
    "52A.982.247-25",
    "52A98224725",
    # letters in check digit positions
    "12.ABC.345/01DE-3A",
    "12ABC34501DEA5",
    "529.982.247-2A",
    "5299822472A",
    # spaces and line breaks
    " 52998224725",
    "52998224725 ",
    "529.982.247 -25",
    "529 982 247 25",
    "11.222.333 /0001-81",
    "52998224725\n",
    # wrong lengths
    "5299822472",
    "529982247250",
    "1122233300018",
    "112223330001810",
    # digits outside ASCII: Python's `\d` accepts these, ECMA-262 does not
    "٥٢٩٩٨٢٢٤٧٢٥",
    "５２９９８２２４７２５",  # noqa: RUF001 - fullwidth digits on purpose
]


@pytest.mark.parametrize("value", WRONG_LAYOUTS)
def test_wrong_layouts_are_rejected(value: str) -> None:
    assert not matches_pattern(value)
    assert not is_valid_document(value)


@pytest.mark.parametrize("value", [None, 52998224725, b"52998224725", ["52998224725"]])
def test_non_strings_are_invalid(value: Any) -> None:
    assert not is_valid_document(value)


ECMA_PATTERN = jsonschema_rs.Draft202012Validator({"type": "string", "pattern": DOCUMENT_PATTERN})


@pytest.mark.parametrize("value", VALID + WRONG_LAYOUTS)
def test_python_and_json_schema_regex_agree(value: str) -> None:
    assert ECMA_PATTERN.is_valid(value) == matches_pattern(value)


@pytest.mark.parametrize("bare", ["", "5299822472", "529982247250"])
def test_format_document_rejects_other_lengths(bare: str) -> None:
    with pytest.raises(ValueError):
        format_document(bare)


def _check_generated(value: str, punctuated: bool, bare_length: int) -> str:
    assert matches_pattern(value), value
    assert is_valid_document(value), value
    bare = canonical_document(value)
    assert len(bare) == bare_length, value
    assert len(set(bare)) > 1, value
    assert value == (format_document(bare) if punctuated else bare)
    return bare


@pytest.mark.parametrize("punctuated", [False, True])
def test_generate_cpf(punctuated: bool) -> None:
    for seed in range(500):
        bare = _check_generated(generate_cpf(random.Random(seed), punctuated), punctuated, 11)
        assert bare.isdigit()


@pytest.mark.parametrize("punctuated", [False, True])
def test_generate_numeric_cnpj(punctuated: bool) -> None:
    for seed in range(500):
        value = generate_cnpj(random.Random(seed), punctuated, alphanumeric=False)
        bare = _check_generated(value, punctuated, 14)
        assert bare.isdigit()


@pytest.mark.parametrize("punctuated", [False, True])
def test_generate_alphanumeric_cnpj(punctuated: bool) -> None:
    with_letters = 0
    for seed in range(500):
        value = generate_cnpj(random.Random(seed), punctuated, alphanumeric=True)
        bare = _check_generated(value, punctuated, 14)
        with_letters += any(char.isalpha() for char in bare)
    assert with_letters > 400


def test_generators_are_deterministic_per_seed() -> None:
    assert generate_cpf(random.Random(7), True) == generate_cpf(random.Random(7), True)
    assert generate_cnpj(random.Random(7), False, True) == generate_cnpj(random.Random(7), False, True)


class FirstChoice(random.Random):
    def choice(self, seq: Any) -> Any:
        return seq[0]


class LastChoice(random.Random):
    def choice(self, seq: Any) -> Any:
        return seq[-1]


@pytest.mark.parametrize("rng_class", [FirstChoice, LastChoice])
def test_generators_avoid_repeated_characters(rng_class: type[random.Random]) -> None:
    # A degenerate source draws the same character every time; generators must still yield valid numbers.
    values = [
        generate_cpf(rng_class(), False),
        generate_cnpj(rng_class(), False, alphanumeric=False),
        generate_cnpj(rng_class(), False, alphanumeric=True),
    ]
    for value in values:
        assert is_valid_document(value), value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # no deadline: load
@given(br_documents())
def test_br_documents_are_valid(value: str) -> None:
    assert re.fullmatch(DOCUMENT_PATTERN, value)
    assert is_valid_document(value)


LAYOUTS = {
    "bare CPF": lambda value: len(value) == 11,
    "punctuated CPF": lambda value: len(value) == 14 and "." in value,
    "bare CNPJ": lambda value: len(value) == 14 and "." not in value,
    "punctuated CNPJ": lambda value: len(value) == 18,
    "alphanumeric CNPJ": lambda value: any(char.isalpha() for char in value),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_br_documents_cover_every_layout(layout: str) -> None:
    # `find` raises when no drawn value satisfies the predicate.
    find(
        br_documents(),
        LAYOUTS[layout],
        settings=settings(max_examples=2000, database=None),
    )


@given(st.text(alphabet="0123456789ABZab./- \n", max_size=20) | st.text())
def test_is_valid_document_never_raises(value: str) -> None:
    result = is_valid_document(value)
    assert isinstance(result, bool)
    if result:
        assert matches_pattern(value)


def test_hooks_register_the_format() -> None:
    assert "br-document" in STRING_FORMATS


def test_hooks_import_is_idempotent() -> None:
    before = set(STRING_FORMATS)
    importlib.reload(schemathesis_hooks)
    schemathesis_hooks.register()
    assert set(STRING_FORMATS) == before
    assert "br-document" in STRING_FORMATS


RAW_SCHEMA = {
    "openapi": "3.0.3",
    "info": {"title": "documents", "version": "1"},
    "paths": {
        "/documents": {
            "post": {
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["document"],
                                "properties": {
                                    "document": {
                                        "type": "string",
                                        "format": "br-document",
                                    }
                                },
                                "additionalProperties": False,
                            }
                        }
                    },
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


DOCUMENTS_OPERATION = schemathesis.openapi.from_dict(RAW_SCHEMA)["/documents"]["POST"]


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS_OPERATION.as_strategy())
def test_schemathesis_generates_valid_documents(case: schemathesis.Case[Any]) -> None:
    assert isinstance(case.body, dict)
    document = case.body["document"]
    assert isinstance(document, str)
    assert is_valid_document(document), case.body


@pytest.mark.parametrize(
    ("value", "bare"),
    [
        ("12345678000195", "12345678000195"),
        ("12.345.678/0001-95", "12345678000195"),
        ("12.345.678/0001-96", None),  # a check digit wrong
        ("529.982.247-25", None),  # a valid CPF: no CNPJ
        (" 12345678000195", None),  # a layout is exact: no padding
        ("", None),
    ],
)
def test_a_cnpj_in_its_bare_form_or_none(value: str, bare: str | None) -> None:
    assert bare_cnpj(value) == bare
