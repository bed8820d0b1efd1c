"""The agent's tools as perdure records: a ``WrapperToolset`` around the toolset pydantic-ai
assembled for the run (function tools, MCP servers, any toolset), so every tool call passes
through :meth:`DurableToolset.call_tool`.

* a side-effecting tool's call is the effect ``<prefix>.tool.<tool call id>`` (target ``tool``,
  operation the tool's name): replayed, or reconciled, never repeated blindly. A call made
  after a person approved it (``RunContext.tool_call_approved``) is named ``....approved``, so
  it never meets the record of the call that asked for the approval;
* a cached tool's call is the effect ``<prefix>.tool.<name>.<hash of the arguments>``;
* any other tool runs as pydantic-ai runs it.

What a tool raises to steer the run (``ModelRetry``, ``ToolFailed``, ``ApprovalRequired``,
``CallDeferred``) is recorded as its outcome and raised again on a replay.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import WrapperToolset
from pydantic_ai.toolsets.abstract import ToolsetTool

from perdure.core.effects import Reconciled, request_hash
from perdure.core.model import JSON
from perdure.core.tools import KEY_PARAMETER
from perdure.pydantic_ai.keyed import KeyedValidator
from perdure.pydantic_ai.records import CONTROL_FLOW, jsonable, outcome, raised, returned
from perdure.runtime.step.frameworks import FrameworkCalls
from perdure.runtime.step.tool_policy import ToolKind, ToolPolicy, call_request, without_key


@dataclass
class DurableToolset(WrapperToolset[Any]):
    """See the module docstring."""

    calls: FrameworkCalls | None = None
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    prefix: str = "pydantic_ai"

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The wrapped toolset's tools; a tool that takes ``idempotency_key`` is offered to
        the model without it."""
        tools = await self.wrapped.get_tools(ctx)
        out: dict[str, ToolsetTool[Any]] = {}
        for name, tool in tools.items():
            schema = self.policy.keyed_schema(name, tool.tool_def.parameters_json_schema)
            if schema is None:
                out[name] = tool
                continue
            out[name] = replace(
                tool,
                tool_def=replace(tool.tool_def, parameters_json_schema=schema),
                args_validator=KeyedValidator(tool.args_validator),
            )
        return out

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Call a tool as its kind says (see the module docstring)."""
        kind = self.policy.kind(name)
        if kind is ToolKind.PLAIN or self.calls is None:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        arguments = jsonable(without_key(tool_args))
        keyed = KEY_PARAMETER in tool_args

        async def execute(_request: JSON, key: str) -> JSON:
            args = {**tool_args, KEY_PARAMETER: key} if keyed else tool_args
            try:
                return returned(await self.wrapped.call_tool(name, args, ctx, tool))
            except CONTROL_FLOW as exc:
                return raised(exc)

        if kind is ToolKind.SIDE_EFFECT:
            effect = f"{self.prefix}.tool.{ctx.tool_call_id}"
            if ctx.tool_call_approved:
                effect += ".approved"
            reconcile = self.policy.reconcile.get(name)
            recorded = await self.calls.effect(
                effect,
                target="tool",
                operation=name,
                request=call_request(name, arguments),
                execute=execute,
                reconcile=None if reconcile is None else _enveloped(reconcile),
            )
        else:
            effect = f"{self.prefix}.tool.{name}.{request_hash(arguments)[:16]}"
            recorded = await self.calls.effect(
                effect,
                target="tool",
                operation=name,
                request=call_request(name, arguments),
                execute=execute,
                cache=True,
            )
        return outcome(recorded)


def _enveloped(reconcile: Any) -> Any:
    """The user's ``reconcile(request, key)``, its confirmed result recorded as a tool call's
    outcome (the reconciler returns what the tool would have returned)."""

    async def found(request: Any, key: str) -> Reconciled:
        answer = reconcile(request, key)
        if isinstance(answer, Awaitable):
            answer = await answer
        if answer.status != "confirmed":
            return answer  # type: ignore[no-any-return]
        return Reconciled.confirmed(returned(answer.result), answer.receipt)

    return found
