"""The MCP prompts: guided tasks, each naming the tools it uses (every one in the default list, or reached through
call_operation by its operationId). Pure data: mcp/server.py lists them and fills in their arguments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Prompt:
    name: str
    description: str
    arguments: tuple[tuple[str, str], ...]  # (name, description); every one optional, with a default below
    defaults: tuple[tuple[str, str], ...]
    tools: tuple[str, ...]
    text: str  # str.format()ted with the arguments


PROMPTS = (
    Prompt(
        name="pay-an-event-a-client-polls",
        description="Make an event become paid after a client's N-th lookup, and watch the client poll it.",
        arguments=(
            ("extraordinary_event_conciliation_key", "The event to pay (default: the default scenario's pending)."),
            ("after_lookups", "The lookup that sees it paid (default 3)."),
        ),
        defaults=(
            ("extraordinary_event_conciliation_key", "9f1c6f0e-3c8e-4a55-9d47-0a4c2b8f6d11"),
            ("after_lookups", "3"),
        ),
        tools=("call_operation", "mockListRequests"),
        text=(
            "Use the mock server's tools. 1. call_operation with operation_id mockScheduleTransition and arguments "
            '{{"extraordinary_event_conciliation_key": "{extraordinary_event_conciliation_key}", '
            '"body": {{"action": "pay", "after_lookups": {after_lookups}}}}}. 2. Run the client under test (or call '
            "call_operation with operation_id getExtraordinaryEvent and that key) until the event reads status paid. "
            "3. mockListRequests: report "
            "how many lookups the client made and when it saw the payment."
        ),
    ),
    Prompt(
        name="fail-the-next-limit-change",
        description="Make the next limit change answer a server error, and check the client retried it.",
        arguments=(("status", "The status the limit change answers once (default 503)."),),
        defaults=(("status", "503"),),
        tools=("call_operation", "createLimitUpdateRequest", "mockListRequests"),
        text=(
            "Use the mock server's tools. 1. call_operation with operation_id mockCreateFault and arguments "
            '{{"body": {{"operation_id": "createLimitUpdateRequest", "kind": "respond", "status": {status}, '
            '"times": 1}}}} (describe_operation mockCreateFault shows every option). 2. Run the client under test '
            "(or call createLimitUpdateRequest) so it proposes a limit change. 3. mockListRequests: check the "
            "first proposal answered {status} and the client sent it again, answered 201; say what it did."
        ),
    ),
    Prompt(
        name="export-the-clients-contract",
        description="Export what the client did as a Pact contract, after checking it did what it should.",
        arguments=(("consumer", "The consumer's name in the pact (default my-client)."),),
        defaults=(("consumer", "my-client"),),
        tools=("mockListRequests", "call_operation"),
        text=(
            "Use the mock server's tools. 1. mockListRequests: read what the client under test called. "
            "2. call_operation with operation_id mockVerify and arguments "
            '{{"body": {{"operation_id": "registerAccountLimit", "status": 201}}}} for each call the client must '
            "have made. 3. call_operation with operation_id mockGetPact and arguments "
            '{{"consumer": "{consumer}", "provider": "pix-limits"}}; show the interactions it holds.'
        ),
    ),
)


def rendered(prompt: Prompt, given: dict[str, str] | None) -> str:
    """The prompt's text with `given` arguments over its defaults (unknown names ignored)."""
    values = dict(prompt.defaults)
    values.update({k: v for k, v in (given or {}).items() if k in values})
    return prompt.text.format(**values)
