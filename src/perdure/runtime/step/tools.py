"""One round of tool calls: take an assistant message's tool calls, run each, and append one
tool message per call, with the call's id, in the order of the calls.

* a call to an unknown tool, or with arguments that cannot be read, gets a tool message that
  says so (the model may try again); the run goes on;
* a ``side_effect=True`` tool runs as an effect named ``tool.<call id>`` (target ``tool``,
  operation the tool's name): a re-executed step gets its recorded result, a crash during it is
  reconciled (the tool's ``reconcile=``) or handed to a person, never repeated blindly; a
  transient failure is tried again under the tool's ``retry=`` policy (without one, a person
  decides); a rejected effect becomes an error message for the model;
* a ``cache=True`` tool runs once per distinct arguments in a step (an effect keyed by the
  arguments' hash), other read-only tools simply run; an exception they raise becomes an error
  message for the model.

:func:`arun_tools` is the same for ``async def`` steps: read-only tools run concurrently on the
event loop; effects are taken one at a time by the run's execution thread.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from perdure.core.effects import EffectRejectedError, request_hash
from perdure.core.model import JSON, Message, ToolCall
from perdure.core.serde import dumps
from perdure.core.tools import Tool, ToolArgumentError, ToolRegistry
from perdure.runtime.step.context import Context

if TYPE_CHECKING:  # imported where used: a sync-only process never loads asyncio
    import asyncio


@dataclass(frozen=True, slots=True)
class _Planned:
    call: ToolCall
    tool: Tool | None
    arguments: dict[str, JSON] | None
    error: str | None
    effect: str | None  # the effect name, or None for a plain call


def _plan(calls: tuple[ToolCall, ...], tools: ToolRegistry) -> list[_Planned]:
    plans: list[_Planned] = []
    for index, call in enumerate(calls):
        tool = tools.get(call.name)
        if tool is None:
            plans.append(_Planned(call, None, None, f"error: there is no tool {call.name!r}", None))
            continue
        try:
            arguments = tool.bind(call.arguments)
        except ToolArgumentError as exc:
            plans.append(_Planned(call, tool, None, f"error: {exc.message}", None))
            continue
        effect = None
        if tool.side_effect:
            effect = f"tool.{call.id or index}"
        elif tool.cache:
            effect = f"tool.{tool.name}.{request_hash(arguments)[:16]}"
        plans.append(_Planned(call, tool, arguments, None, effect))
    return plans


def _message(call: ToolCall, result: Any) -> Message:
    text = result if isinstance(result, str) else dumps(result).decode()
    return Message("tool", text, (), call.id)


def _failed(exc: Exception) -> str:
    if isinstance(exc, EffectRejectedError):
        return f"error: the tool call was rejected ({exc.message})"
    if isinstance(exc, ToolArgumentError):
        return f"error: {exc.message}"
    return f"error: {type(exc).__name__}: {exc}"[:2000]


def run_tools(ctx: Context, message: Message, tools: ToolRegistry) -> list[Message]:
    """Run the tool calls of ``message`` in order and append their tool messages to the thread
    (at the step's boundary); return the tool messages."""
    out: list[Message] = []
    recorded: dict[str, Any] = {}  # effect name -> result, for repeated cached calls
    for plan in _plan(message.tool_calls, tools):
        if plan.error is not None or plan.tool is None or plan.arguments is None:
            out.append(_message(plan.call, plan.error))
            continue
        tool, arguments = plan.tool, plan.arguments
        if plan.effect is None:
            try:
                result = _settled(ctx, tool.invoke(arguments))
            except Exception as exc:  # a read-only tool's failure is news for the model
                result = _failed(exc)
            out.append(_message(plan.call, result))
            continue
        if plan.effect in recorded:
            out.append(_message(plan.call, recorded[plan.effect]))
            continue
        try:
            result = ctx.effect(
                plan.effect,
                target="tool",
                operation=tool.name,
                request={"arguments": arguments},
                execute=partial(_execute, tool, arguments),
                reconcile=tool.reconcile,
                retry=tool.retry,
            )
        except EffectRejectedError as exc:
            result = _failed(exc)
        recorded[plan.effect] = result
        out.append(_message(plan.call, result))
    for m in out:
        ctx.add_message("tool", m.content, tool_call_id=m.tool_call_id)
    return out


async def arun_tools(ctx: Context, message: Message, tools: ToolRegistry) -> list[Message]:
    """:func:`run_tools` for ``async def`` steps: ``await arun_tools(ctx, reply.message,
    tools)``. Tools may be ``async def``; read-only ones run concurrently."""
    import asyncio

    effects: dict[str, asyncio.Future[Any]] = {}

    async def one(plan: _Planned) -> Message:
        if plan.error is not None or plan.tool is None or plan.arguments is None:
            return _message(plan.call, plan.error)
        tool, arguments = plan.tool, plan.arguments
        if plan.effect is None:
            try:
                value = tool.invoke(arguments)
                result = (await value) if inspect.isawaitable(value) else value
            except Exception as exc:  # a read-only tool's failure is news for the model
                result = _failed(exc)
            return _message(plan.call, result)
        if plan.effect not in effects:
            effects[plan.effect] = asyncio.ensure_future(
                ctx.aeffect(
                    plan.effect,
                    target="tool",
                    operation=tool.name,
                    request={"arguments": arguments},
                    execute=partial(_execute, tool, arguments),
                    reconcile=tool.reconcile,
                    retry=tool.retry,
                )
            )
        try:
            result = await asyncio.shield(effects[plan.effect])
        except EffectRejectedError as exc:
            result = _failed(exc)
        return _message(plan.call, result)

    out = list(await asyncio.gather(*(one(p) for p in _plan(message.tool_calls, tools))))
    for m in out:
        ctx.add_message("tool", m.content, tool_call_id=m.tool_call_id)
    return out


def _settled(ctx: Context, value: Any) -> Any:
    """A read-only tool's result in a plain step (an async tool runs on the event loop)."""
    if inspect.isawaitable(value):
        return ctx._host.awaited(value)
    return value


def _execute(tool: Tool, arguments: dict[str, JSON], _request: object, key: str) -> Any:
    """Call a tool inside an effect (with its effect's ``key`` when it asks for it): a
    side-effecting tool's exception is classified by the effect protocol; a cached read-only
    tool's becomes its (recorded) error message."""
    if tool.side_effect:
        return tool.invoke(arguments, key)
    try:
        value = tool.invoke(arguments, key)
    except Exception as exc:
        return _failed(exc)
    if inspect.isawaitable(value):
        return _caught(value)
    return value


async def _caught(value: Any) -> Any:
    try:
        return await value
    except Exception as exc:
        return _failed(exc)
