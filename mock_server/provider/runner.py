"""Runs the flows against the provider and the oracle (the mock, in process, on the same scenario) side by side,
and compares each pair of answers; shrinks the flow of each difference to the fewest steps that still show it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import httpx
from starlette.types import ASGIApp

from mock_server.domain.answers import Answer, Noise, generated_id
from mock_server.http.outbound import (
    Outbound,
    UnusableAnswer,
    answer_differences,
    async_client,
    call_failures,
    decoded,
    exchange,
    no_answer,
)
from mock_server.provider.flows import Catalogue, Flow, Request, Step
from mock_server.spec.openapi import Spec
from mock_server.wire.excerpt import excerpt, excerpt_lines

USER_AGENT = "mock-server-verify-provider"
MAX_SHRUNK = 10  # differences whose flow is shrunk (each shrink replays shortened flows against the provider)
KEPT_BODY_BYTES = 64 * 1024  # of each answer a check keeps for the report (which shows 2000 characters of it)
KEPT_DIFFERENCES, DIFFERENCE_CHARACTERS = 50, 1000  # lines of differences a check keeps, characters of each
# The mock in process, as the oracle side is called: bounded like the provider, with time to spare on a busy machine.
ORACLE = Outbound("http://oracle", timeout=120.0)


class Unreachable(Exception):
    """The provider answered nothing at all to the first call: a wrong URL, a refused connection, a TLS failure."""


@dataclass(frozen=True)
class StepExchange:
    """One step as it went: what the provider was sent, what the mock answered, what the provider answered."""

    step: Step
    sent: Request
    expected: Answer
    actual: Answer


@dataclass
class Check:
    """One step of one flow: ok, differs (with its differences), or not run (a step it needs went wrong)."""

    flow: Flow
    number: int  # the flow's how-manyth run (flows repeat with --flows)
    index: int  # the step's position in the flow
    exchange: StepExchange | None
    differences: list[str] = field(default_factory=list)
    not_run: str | None = None  # why the step was not run
    seconds: float = 0.0
    smallest: list[StepExchange] | None = None  # the fewest steps that show the difference, the last one differing

    @property
    def step(self) -> Step:
        return self.flow.steps[self.index]

    @property
    def operation_id(self) -> str:
        return self.step.operation_id

    @property
    def ok(self) -> bool:
        return not self.differences and self.not_run is None


class Side:
    """One side of the comparison: the provider over the network, or the oracle in process; each call bounded as
    `outbound` says (a whole-call deadline, the bytes of an answer)."""

    def __init__(self, client: httpx.AsyncClient, outbound: Outbound) -> None:
        self.client = client
        self.outbound = outbound

    async def send(self, request: Request) -> Answer:
        headers = {"Content-Type": request.content_type} if request.content_type else {}
        try:
            received = await exchange(self.client, self.outbound, request.method, request.path, headers, request.body)
        except call_failures() as exc:
            return Answer(None, error=no_answer(exc, self.outbound))
        return Answer(received.status, decoded(received.content))


def kept(answer: Answer) -> Answer:
    """An answer as a check keeps it for the report, once compared: its body cut to an excerpt (forty 8 MiB
    answers are not held until the end, nor printed whole)."""
    body, _ = excerpt(answer.body, KEPT_BODY_BYTES)
    return answer if body is answer.body else Answer(answer.status, body, answer.error)


@dataclass
class Verification:
    """What a run found: every check in flow order."""

    checks: list[Check]
    seconds: float
    flows: int

    @property
    def differing(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    @property
    def agrees(self) -> bool:
        return not self.differing


class Runner:
    def __init__(
        self,
        target: httpx.AsyncClient,
        oracle: httpx.AsyncClient,
        spec: Spec,
        noise: Mapping[str, Noise],
        new_account: Callable[[], str],
        outbound: Outbound,
    ) -> None:
        self.target = Side(target, outbound)
        self.oracle = Side(oracle, ORACLE)
        self.spec = spec
        self.noise = noise
        self.new_account = new_account

    def _noise(self, operation_id: str) -> Noise:
        return self.noise.get("*", Noise()) | self.noise.get(operation_id, Noise())

    def compare(self, step: Step, expected: Answer, actual: Answer) -> list[str]:
        return answer_differences(self.spec, step.operation_id, expected, actual, self._noise(step.operation_id))

    async def run_flow(self, flow: Flow, number: int = 1) -> list[Check]:
        accounts = {name: self.new_account() for name in flow.accounts}
        values = {"target": dict(accounts), "oracle": dict(accounts)}
        checks: list[Check] = []
        for index, step in enumerate(flow.steps):
            missing = sorted(step.needs - values["target"].keys() | step.needs - values["oracle"].keys())
            if missing:
                why = f"needs the {', '.join(missing)} id an earlier step did not answer"
                checks.append(Check(flow, number, index, None, not_run=why))
                continue
            try:
                checks.append(await self._run_step(flow, number, index, values))
            except Exception as exc:  # a bug met on this flow: its difference, not the end of every other flow
                failed = f"the step could not be checked: {type(exc).__name__}: {exc}"
                checks.append(Check(flow, number, index, None, excerpt_lines([failed], 1, DIFFERENCE_CHARACTERS)))
                checks += [
                    Check(flow, number, later, None, not_run="an earlier step could not be checked")
                    for later in range(index + 1, len(flow.steps))
                ]
                break
        return checks

    async def _run_step(self, flow: Flow, number: int, index: int, values: dict[str, dict[str, str]]) -> Check:
        step = flow.steps[index]
        expected = await self.oracle.send(step.request(values["oracle"]))
        sent = step.request(values["target"])
        started = time.perf_counter()
        actual = await self.target.send(sent)
        seconds = time.perf_counter() - started
        found = excerpt_lines(self.compare(step, expected, actual), KEPT_DIFFERENCES, DIFFERENCE_CHARACTERS)
        if step.keeps is not None:
            for side, answer in (("oracle", expected), ("target", actual)):
                generated = generated_id(step.operation_id, answer)
                if generated is not None:
                    values[side][step.keeps] = generated
        exchanged = StepExchange(step, sent, kept(expected), kept(actual))
        return Check(flow, number, index, exchanged, found, seconds=seconds)

    async def shrink(self, check: Check) -> list[StepExchange] | None:
        """The fewest steps of the check's flow, up to its step, that still show a difference at that step: each
        earlier step is left out in turn (unless a later one needs its id), and the shorter flow replayed on new
        accounts; kept out when the last step still differs the same way. None when no step could go."""
        flow = check.flow.until(check.index)
        last: list[Check] | None = None
        index = 0
        while index < len(flow.steps) - 1:
            kept = flow.steps[index].keeps
            if kept is not None and any(kept in step.needs for step in flow.steps[index + 1 :]):
                index += 1
                continue
            shorter = flow.without(index)
            replayed = await self.run_flow(shorter, check.number)
            if replayed[-1].differences == check.differences:
                flow, last = shorter, replayed
            else:
                index += 1
        if last is None:
            return None
        return [c.exchange for c in last if c.exchange is not None]

    async def run(self, catalogue: Catalogue, flows: int, concurrency: int) -> Verification:
        started = time.perf_counter()
        plan = [(catalogue.flows[i % len(catalogue.flows)], i // len(catalogue.flows) + 1) for i in range(flows)]
        results: list[list[Check]] = [[] for _ in plan]
        gate = asyncio.Semaphore(concurrency)

        async def one(position: int, flow: Flow, number: int) -> None:
            async with gate:
                results[position] = await self.run_flow(flow, number)

        async with asyncio.TaskGroup() as group:
            for position, (flow, number) in enumerate(plan):
                group.create_task(one(position, flow, number))
        shrunk: set[tuple[str, int]] = set()  # a step shrunk once is not shrunk again in a later run of its flow
        for checks in results:
            for check in checks:
                if not check.differences:
                    continue
                as_run = [c.exchange for c in checks[: check.index + 1] if c.exchange is not None]
                check.smallest = as_run
                where = (check.flow.name, check.index)
                # A call that got no answer is not shrunk: replaying shorter flows against a provider that does not
                # answer would cost a --timeout per step and show nothing new.
                answered = check.exchange is not None and check.exchange.actual.status is not None
                if answered and len(shrunk) < MAX_SHRUNK and check.index > 0 and where not in shrunk:
                    shrunk.add(where)
                    smaller = await self.shrink(check)
                    if smaller is not None and len(smaller) < len(as_run):
                        check.smallest = smaller
        checks = [check for flow_checks in results for check in flow_checks]
        return Verification(checks, time.perf_counter() - started, len(plan))


async def reachable(outbound: Outbound, path: str) -> None:
    """Raise Unreachable unless the provider answers a harmless call, its answer read whole within the call's
    deadline (any status will do; a body over the bound too: it answered)."""
    async with async_client(outbound) as client:
        try:
            await exchange(client, outbound, "GET", path)
        except UnusableAnswer:
            return  # it answered: what it answered is for the checks to judge
        except call_failures() as exc:
            raise Unreachable(f"{outbound.base_url}: {no_answer(exc, outbound)}") from None


async def verify(
    outbound: Outbound,
    oracle_app: ASGIApp,
    spec: Spec,
    catalogue: Catalogue,
    noise: Mapping[str, Noise],
    new_account: Callable[[], str],
    flows: int,
    concurrency: int,
    probe_path: str,
) -> Verification:
    await reachable(outbound, probe_path)
    transport = httpx.ASGITransport(app=oracle_app)
    async with (
        async_client(outbound, max_connections=concurrency) as target,
        httpx.AsyncClient(transport=transport, base_url=ORACLE.base_url) as oracle,
    ):
        runner = Runner(target, oracle, spec, noise, new_account, outbound)
        return await runner.run(catalogue, flows, concurrency)
