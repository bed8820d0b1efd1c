"""One round of tool calls inside a step: results appended in the calls' order with their ids;
a side-effecting tool is an effect (never repeated by a re-executed step); malformed arguments
and unknown tools become error messages for the model; async tools run concurrently."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from perdure import (
    Context,
    FakeClock,
    RetryPolicy,
    RunStatus,
    Runtime,
    TransientError,
    Workflow,
    done,
    step,
)
from perdure.core.effects import EffectStatus
from perdure.core.errors import DefinitionError
from perdure.core.model import Message, ToolCall
from perdure.core.tools import ToolRegistry
from perdure.runtime.step.tools import arun_tools, run_tools

CALLS = (
    ToolCall("c1", "search", '{"query": "perdure"}'),
    ToolCall("c2", "send_email", {"to": "ana@example.com", "body": "hi"}),
    ToolCall("c3", "search", "{query: broken"),
    ToolCall("c4", "nope", {}),
    ToolCall("c5", "lookup", '{"word": "durable"}'),
    ToolCall("c6", "lookup", '{"word": "durable"}'),
)


@dataclass
class S:
    pass


def registry(counts: dict[str, int]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def search(query: str) -> list[str]:
        """Search."""
        counts["search"] = counts.get("search", 0) + 1
        return [f"result for {query}"]

    @tools.tool(side_effect=True)
    def send_email(to: str, body: str) -> dict[str, Any]:
        """Send an email."""
        counts["send_email"] = counts.get("send_email", 0) + 1
        return {"sent_to": to}

    @tools.tool(cache=True)
    def lookup(word: str) -> str:
        """Look a word up."""
        counts["lookup"] = counts.get("lookup", 0) + 1
        return f"{word}: lasting"

    return tools


def test_a_round_appends_results_in_order_and_a_reexecuted_step_sends_no_second_email(
    runtime: Runtime, clock: FakeClock
) -> None:
    counts: dict[str, int] = {}
    tools = registry(counts)
    fail_once = [TransientError("timeout")]

    @step
    def act(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        ctx.add_message("assistant", "", tool_calls=CALLS)
        results = run_tools(ctx, Message("assistant", "", CALLS), tools)

        def flaky(request: Any, key: str) -> str:
            if fail_once:
                raise fail_once.pop()
            return "ok"

        ctx.effect(
            "after", target="x", operation="y", request=1, execute=flaky, retry=RetryPolicy()
        )
        return done([(m.tool_call_id, m.content) for m in results])

    run = runtime.start(Workflow("act", state=S, steps=[act]))
    runtime.run_until_idle()
    clock.advance(60)
    runtime.run_until_idle()
    view = runtime.get(run.run_id)
    assert view.status is RunStatus.SUCCEEDED
    assert view.result == [
        ["c1", '["result for perdure"]'],
        ["c2", '{"sent_to":"ana@example.com"}'],
        ["c3", "error: the arguments are not JSON: '{query: broken'"],
        ["c4", "error: there is no tool 'nope'"],
        ["c5", "durable: lasting"],
        ["c6", "durable: lasting"],
    ]
    assert counts == {"search": 2, "send_email": 1, "lookup": 1}
    email = next(e for e in runtime.effects.list(run_id=run.run_id) if e.operation == "send_email")
    assert (email.target, email.name, email.status) == ("tool", "tool.c2", EffectStatus.CONFIRMED)
    thread = runtime.store.messages("default", view.thread_id)
    assert [m.tool_call_id for m in thread if m.role == "tool"] == [c.id for c in CALLS]


def test_async_tools_run_concurrently_and_answer_in_order(runtime: Runtime) -> None:
    started: list[str] = []
    tools = ToolRegistry()

    async def wait_for(other: str) -> None:
        for _ in range(10_000):  # bounded: both tools must be in flight at once
            if other in started:
                return
            await asyncio.sleep(0)
        raise AssertionError(f"{other} never started: the tools ran one after the other")

    @tools.tool
    async def first(x: int) -> int:
        started.append("first")
        await wait_for("second")
        return x + 1

    @tools.tool
    async def second(x: int) -> int:
        started.append("second")
        await wait_for("first")
        return x * 10

    calls = (ToolCall("a", "first", {"x": 1}), ToolCall("b", "second", {"x": 2}))

    @step
    async def act(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        results = await arun_tools(ctx, Message("assistant", "", calls), tools)
        return done([m.content for m in results])

    run = runtime.start(Workflow("act", state=S, steps=[act]))
    runtime.run_until_idle()
    assert runtime.get(run.run_id).result == ["2", "20"]


def test_the_model_never_sees_or_sets_the_key() -> None:
    tools = ToolRegistry()

    @tools.tool(side_effect=True)
    def refund(order: str, idempotency_key: str) -> str:
        return f"{order}:{idempotency_key}"

    made = tools.get("refund")
    assert made is not None
    assert made.parameters["properties"] == {"order": {"type": "string"}}
    assert made.invoke(made.bind({"order": "o1"}), "k1") == "o1:k1"
    with pytest.raises(Exception, match="no parameters"):
        made.bind({"order": "o1", "idempotency_key": "forged"})
    with pytest.raises(DefinitionError, match="only a tool run as an effect"):

        @tools.tool
        def lookup(order: str, idempotency_key: str) -> str:
            return order


def test_a_side_effecting_tool_with_a_retry_policy_is_sent_again_after_a_timeout(
    runtime: Runtime, clock: FakeClock
) -> None:
    sent: list[str] = []
    tools = ToolRegistry()

    @tools.tool(side_effect=True, retry=RetryPolicy(max_attempts=3, jitter=False))
    def send_email(to: str) -> dict[str, Any]:
        """Send an email."""
        if not sent:
            sent.append("timed out")
            raise TransientError("timeout", "the mail server did not answer")
        sent.append(to)
        return {"sent_to": to}

    call = (ToolCall("c1", "send_email", {"to": "ana@example.com"}),)

    @step
    def act(ctx: Context, s: S):  # type: ignore[no-untyped-def]
        (result,) = run_tools(ctx, Message("assistant", "", call), tools)
        return done(result.content)

    run = runtime.start(Workflow("act", state=S, steps=[act]))
    runtime.run_until_idle()
    assert sent == ["timed out"], "the second attempt waits for its (durable) delay"
    clock.advance(60)
    runtime.run_until_idle()
    view = runtime.get(run.run_id)
    assert view.status is RunStatus.SUCCEEDED, view.error
    assert view.result == '{"sent_to":"ana@example.com"}'
    assert sent == ["timed out", "ana@example.com"]


def test_only_a_side_effecting_tool_takes_a_retry_policy() -> None:
    tools = ToolRegistry()
    with pytest.raises(DefinitionError, match="only a side-effecting tool has a retry"):

        @tools.tool(retry=RetryPolicy())
        def search(query: str) -> str:
            return query
