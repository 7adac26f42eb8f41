"""MOCK_SERVER_* variables: the default an option takes from its variable, and what is said when one is wrong.

- An option's variable is MOCK_SERVER_ and its dest in capitals (`--max-sessions` reads MOCK_SERVER_MAX_SESSIONS).
- A variable's value goes through the option's own type and choices, only when no flag overrides it; a bad one is
  a usage error (exit 2) that names the variable, since that is what the user has to fix, not the flag they
  never typed.
- A MOCK_SERVER_* variable that nothing reads (a typo: MOCK_SERVER_PROT) is named in a warning on stderr,
  with the closest name that is read, instead of being ignored in silence.

Standard library only: `mock-server healthcheck` and `wait` (probe.py) use it without loading the server.
"""

from __future__ import annotations

import argparse
import difflib
import os
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

PREFIX = "MOCK_SERVER_"
# Read by others than the command line: the pytest plugin's base URL of an external server, its keep-failed switch,
# its TLS mode and its pact options (its other variables are options of `serve` too; tests/cli/test_first_contact.py
# holds the two lists together), `mock-server healthcheck`'s client certificate (a container's HEALTHCHECK against
# a server requiring one), and this repository's test suite's live server.
READ_ELSEWHERE = frozenset(
    {
        "MOCK_SERVER_URL",
        "MOCK_SERVER_KEEP_FAILED",
        "MOCK_SERVER_TLS",
        "MOCK_SERVER_HEALTHCHECK_CERT",
        "MOCK_SERVER_HEALTHCHECK_KEY",
        "MOCK_SERVER_PACT",
        "MOCK_SERVER_PACT_CONSUMER",
        "MOCK_SERVER_PACT_PROVIDER",
        "MOCK_SERVER_PACT_AMOUNTS",
        "MOCK_SERVER_PACT_MOCK_DEFINED",
        "MOCK_SERVER_TEST_URL",
    }
)
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


class FromEnvironment(str):
    """An option's default as its variable gives it: the text, and which variable it came from."""

    variable: str

    def __new__(cls, text: str, variable: str) -> FromEnvironment:
        value = super().__new__(cls, text)
        value.variable = variable
        return value


def variable_of(dest: str) -> str:
    return PREFIX + dest.upper().replace("-", "_")


def default(dest: str, fallback: Any = None, *, empty_is_unset: bool = True) -> Any:
    """The variable of option `dest` as a FromEnvironment text, or `fallback` when it is not set (or empty: a
    compose file's `MOCK_SERVER_SEED=` means "not set")."""
    variable = variable_of(dest)
    text = os.environ.get(variable)
    if text is None or (empty_is_unset and not text.strip()):
        return fallback
    return FromEnvironment(text, variable)


def boolean(text: str) -> bool:
    """A switch's variable: MOCK_SERVER_NO_ADMIN=1 (or true, yes, on; 0, false, no, off for the default)."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is neither {'/'.join(TRUE_WORDS)} nor {'/'.join(FALSE_WORDS)}")


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        action
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction | argparse._VersionAction)
    ]


def name_variables(parser: argparse.ArgumentParser) -> None:
    """Make every option of `parser` say which variable was wrong when its default came from one.

    argparse converts a text default with the option's `type` (only when the flag was not given); wrapped here,
    a value from a variable that the type or the choices refuse ends the parse with `parser.error` naming the
    variable. A value typed as a flag keeps argparse's own message."""
    for action in _options(parser):
        action.type = _naming(parser, action)


def _naming(parser: argparse.ArgumentParser, action: argparse.Action) -> Callable[[str], Any]:
    convert: Callable[[str], Any] = boolean if action.nargs == 0 else (action.type or str)  # type: ignore[assignment]
    flag = action.option_strings[-1]

    def from_text(text: str) -> Any:
        if not isinstance(text, FromEnvironment):
            return convert(text)
        try:
            value = convert(text)
        except argparse.ArgumentTypeError as exc:
            reason = str(exc)
        except (TypeError, ValueError):
            reason = f"{str(text)!r} is not {_what(convert)}"
        else:
            if action.choices is None or value in action.choices:
                return value
            reason = f"{str(text)!r} is not one of {', '.join(str(c) for c in action.choices)}"
        parser.error(f"variable {text.variable} (read as {flag}): {reason}")

    from_text.__name__ = getattr(convert, "__name__", "value")  # argparse names the type in a flag's error
    return from_text


def _what(convert: Callable[[str], Any]) -> str:
    return {"int": "a whole number", "float": "a number"}.get(getattr(convert, "__name__", ""), "a valid value")


def variables_read_by(*parsers: argparse.ArgumentParser) -> frozenset[str]:
    return frozenset(variable_of(action.dest) for parser in parsers for action in _options(parser))


def unknown_variables(known: Iterable[str], environ: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
    """(variable, the closest known one or None) for every MOCK_SERVER_* variable set that nothing reads."""
    names = sorted(set(known) | READ_ELSEWHERE)
    found = []
    for variable in sorted(os.environ if environ is None else environ):
        if not variable.startswith(PREFIX) or variable in names:
            continue
        suffixes = {name[len(PREFIX) :]: name for name in names}
        close = difflib.get_close_matches(variable[len(PREFIX) :].upper(), list(suffixes), n=1, cutoff=0.6)
        found.append((variable, suffixes[close[0]] if close else None))
    return found


def warn_unknown(prog: str, known: Iterable[str], stream: IO[str]) -> None:
    """One line on `stream` for each MOCK_SERVER_* variable that nothing reads."""
    for variable, closest in unknown_variables(known):
        hint = f"did you mean {closest}?" if closest else f"`{prog} --help` lists the variables"
        print(f"{prog}: warning: {variable} is not a variable {prog} reads ({hint}); it is ignored", file=stream)
