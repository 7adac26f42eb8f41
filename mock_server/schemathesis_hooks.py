"""Schemathesis hooks: teach it the `br-document` string format (CPF or CNPJ).

Load with `SCHEMATHESIS_HOOKS=mock_server.schemathesis_hooks st run ...`, or
import it from pytest before building the schema.

Only generation learns the format. Schemathesis 4.32.5 validates responses
with `jsonschema_rs`, passing no custom format checkers and leaving unknown
formats ignored, and offers no public API to add one; so in responses
`br-document` is not checked. Pair the format with
`pattern: DOCUMENT_PATTERN` in the schema to have at least the layout checked.
"""

from __future__ import annotations

import schemathesis
from hypothesis import strategies as st

from mock_server.documents import generate_cnpj, generate_cpf

FORMAT_NAME = "br-document"


def br_documents() -> st.SearchStrategy[str]:
    """Valid CPFs and CNPJs in both layouts, alphanumeric CNPJs included."""
    # Hypothesis drives these `Random`s from its own choice sequence, so a
    # failing document shrinks towards the smallest number like any other draw.
    rngs = st.randoms(use_true_random=False)
    cpfs = st.builds(generate_cpf, rngs, st.booleans())
    cnpjs = st.builds(generate_cnpj, rngs, st.booleans(), st.booleans())
    return st.one_of(cpfs, cnpjs)


def register() -> None:
    """Register `br-document` with Schemathesis; repeating it replaces the same entry."""
    schemathesis.openapi.format(FORMAT_NAME, br_documents())


register()
