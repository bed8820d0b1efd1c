"""``effect_tool``: a LangChain tool that runs as a perdure effect of its LangGraph thread.

Put it where the tool goes (``ToolNode([...])``, ``create_react_agent(model, [...])``,
``model.bind_tools([...])``): the model sees the same name, description and arguments. Each
call is keyed by the thread, the node's namespace and the tool call's id
(:func:`perdure.core.graph.graph_effect_key`), so the node running again — after an
``interrupt()`` was answered, after a crash, in another process — gets the recorded result
instead of calling again; see :class:`~perdure.langgraph.effects.ToolEffects` for what happens
to a call cut by a crash. The graph must be compiled with a
:class:`~perdure.langgraph.PerdureSaver` (or the tool given ``saver=``).

The tool receives its key in a parameter named ``idempotency_key`` (perdure's convention:
:data:`perdure.core.tools.KEY_PARAMETER`), which the model never sees: a function declares
it plainly; a LangChain tool declares it ``Annotated[str, InjectedToolArg]``. Pass it to the
provider as its idempotency key, and look the call up by it in ``reconcile(request, key)``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langchain_core.tools.base import create_schema_from_function

from perdure.core.effect_calls import Reconcile
from perdure.core.effects import EffectRejectedError, NewEffect, request_hash
from perdure.core.errors import DefinitionError, InvalidInputError
from perdure.core.graph import GraphToolCall, graph_effect_key, node_path
from perdure.core.model import JSON
from perdure.core.tools import KEY_PARAMETER
from perdure.langgraph.effects import ToolEffects
from perdure.langgraph.hold import where
from perdure.langgraph.saver import PerdureSaver

if TYPE_CHECKING:
    from pydantic import BaseModel

CHECKPOINTER_KEY = "__pregel_checkpointer"
"""Where LangGraph puts the graph's checkpointer in the config a node (and its tools) gets."""
_NOT_ARGUMENTS = frozenset({KEY_PARAMETER, "config", "run_manager", "callbacks"})


def effect_tool(
    tool: BaseTool | Callable[..., Any],
    *,
    reconcile: Reconcile | None = None,
    saver: PerdureSaver | None = None,
    name: str | None = None,
    description: str | None = None,
) -> BaseTool:
    """``tool`` (a function, sync or ``async def``, or a LangChain tool) as a tool whose
    calls are perdure effects: at most one call per tool call id of a thread while its outcome
    is known, the recorded result on every later run of the node.

    ``reconcile(request, key)`` (sync or ``async def``) asks the provider what it did under
    ``key`` after a crash during a call, returning a :class:`~perdure.core.effects.Reconciled`;
    without it such a call stops for a person
    (:class:`~perdure.core.errors.ToolEffectAmbiguousError`). ``saver`` is the saver whose
    store keeps the effects (default: the graph's checkpointer). A call the provider refused
    (a permanent error) is recorded and its message goes back to the model, every time. The
    tool's result must be JSON."""
    if isinstance(tool, BaseTool):
        visible, call, acall = _of_tool(tool)
        tool_name, text = name or tool.name, description or tool.description
    else:
        visible, call, acall = _of_function(tool, name)
        tool_name = name or tool.__name__
        text = description or inspect.getdoc(tool) or ""
        if not text:
            raise DefinitionError(
                f"tool {tool_name} has no description",
                fix="give the function a docstring, or pass description=",
            )
    from pydantic import create_model  # LangChain's tools are pydantic models

    schema = create_model(
        f"{tool_name}_call",
        __base__=visible,
        tool_call_id=(Annotated[str, InjectedToolCallId], ...),
    )
    run = partial(_run, tool_name, call, reconcile, saver)

    def sync(config: RunnableConfig, tool_call_id: str, **arguments: Any) -> Any:
        return run(config, tool_call_id, arguments, _value)

    async def coroutine(config: RunnableConfig, tool_call_id: str, **arguments: Any) -> Any:
        loop = asyncio.get_running_loop()

        def on_loop(value: Any) -> Any:
            if not inspect.isawaitable(value):
                return value
            return asyncio.run_coroutine_threadsafe(_awaited(value), loop).result()

        return await asyncio.to_thread(run, config, tool_call_id, arguments, on_loop, acall)

    return StructuredTool(
        name=tool_name,
        description=text,
        args_schema=schema,
        func=sync,
        coroutine=coroutine,
        handle_tool_error=True,
    )


Call = Callable[[dict[str, Any], str, RunnableConfig], Any]
"""Calls the wrapped tool with the model's arguments, the effect's key and the config."""


def _of_function(fn: Callable[..., Any], name: str | None) -> tuple[type[BaseModel], Call, Call]:
    params = inspect.signature(fn).parameters
    takes_key = KEY_PARAMETER in params
    takes_config = "config" in params
    visible = create_schema_from_function(
        name or fn.__name__, fn, filter_args=sorted(_NOT_ARGUMENTS), include_injected=False
    )

    def call(arguments: dict[str, Any], key: str, config: RunnableConfig) -> Any:
        extra: dict[str, Any] = {KEY_PARAMETER: key} if takes_key else {}
        if takes_config:
            extra["config"] = config
        return fn(**arguments, **extra)

    return cast("type[BaseModel]", visible), call, call


def _of_tool(tool: BaseTool) -> tuple[type[BaseModel], Call, Call]:
    fields = cast("type[BaseModel]", tool.get_input_schema()).model_fields
    takes_key = KEY_PARAMETER in fields
    visible = cast("type[BaseModel]", tool.tool_call_schema)
    hidden = set(fields) - set(visible.model_fields) - {KEY_PARAMETER}
    if hidden:
        raise DefinitionError(
            f"tool {tool.name} takes injected arguments ({', '.join(sorted(hidden))}), which an "
            "effect cannot record",
            fix="read the graph's state in the node and pass what the tool needs as arguments",
        )

    def given(arguments: dict[str, Any], key: str) -> dict[str, Any]:
        return {**arguments, KEY_PARAMETER: key} if takes_key else arguments

    def call(arguments: dict[str, Any], key: str, config: RunnableConfig) -> Any:
        return tool.invoke(given(arguments, key), config)

    def acall(arguments: dict[str, Any], key: str, config: RunnableConfig) -> Any:
        return tool.ainvoke(given(arguments, key), config)

    return visible, call, acall


def _run(
    name: str,
    call: Call,
    reconcile: Reconcile | None,
    saver: PerdureSaver | None,
    config: RunnableConfig,
    tool_call_id: str,
    arguments: dict[str, Any],
    resolve: Callable[[Any], Any],
    acall: Call | None = None,
) -> Any:
    owner = saver or (config.get("configurable") or {}).get(CHECKPOINTER_KEY)
    if not isinstance(owner, PerdureSaver):
        raise InvalidInputError(
            f"effect tool {name} runs in a graph without a PerdureSaver",
            fix="compile the graph with checkpointer=PerdureSaver(...), or pass "
            "effect_tool(..., saver=saver)",
        )
    thread, ns, _ = where(config)
    run, fence = owner.holds.writer(config)
    request: JSON = {"arguments": arguments}
    effect = NewEffect(
        key=graph_effect_key(owner.tenant, thread, ns, tool_call_id),
        step=node_path(ns),
        step_seq=0,
        name=name,
        target="tool",
        operation=name,
        request_hash=request_hash(request),
        request=request,
    )
    made = GraphToolCall(owner.tenant, thread, run.run_id, fence, run.status, effect)
    effects = ToolEffects(owner.store, owner.runtime.clock, owner.holds.still_held(thread, fence))
    chosen = acall or call

    def execute(key: str) -> Any:
        return chosen(arguments, key, config)

    try:
        with owner.calls.one():  # the saver's close waits for the call's effect records
            return effects.run(made, execute, reconcile, resolve)
    except EffectRejectedError as exc:
        raise ToolException(exc.message) from exc  # the model reads why, as in perdure's runs


def _value(value: Any) -> Any:
    if inspect.isawaitable(value):
        return asyncio.run(_awaited(value))
    return value


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value
