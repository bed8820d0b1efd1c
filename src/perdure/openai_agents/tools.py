"""An agent's function tools as perdure records: each ``FunctionTool`` is replaced by a copy
whose ``on_invoke_tool`` goes through the step's effects as its tool's kind says.

* a side-effecting tool's call is the effect ``<prefix>.tool.<call id>`` (target ``tool``,
  operation the tool's name): replayed, or reconciled, never repeated blindly; the call id
  comes from the recorded model reply, so it is the same when the step runs again;
* a cached tool's call is the effect ``<prefix>.tool.<name>.<hash of the arguments>``;
* any other tool runs as the SDK runs it.

A tool that takes ``idempotency_key`` is offered to the model without it and receives the
effect's key. Its output is recorded as JSON and given to the SDK as recorded, the first time
too.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from agents.tool import FunctionTool
from agents.tool_context import ToolContext

from perdure.core.effects import request_hash
from perdure.core.model import JSON
from perdure.core.tools import KEY_PARAMETER
from perdure.openai_agents.records import jsonable
from perdure.runtime.step.frameworks import FrameworkCalls
from perdure.runtime.step.tool_policy import ToolKind, ToolPolicy, call_request, without_key


def durable_tool(
    tool: FunctionTool, calls: FrameworkCalls, policy: ToolPolicy, prefix: str
) -> FunctionTool:
    """``tool`` with its calls recorded as ``policy`` says (``tool`` itself is not changed)."""
    kind = policy.kind(tool.name)
    schema = policy.keyed_schema(tool.name, tool.params_json_schema)
    if kind is ToolKind.PLAIN:
        return tool
    invoke = tool.on_invoke_tool
    keyed = schema is not None

    async def on_invoke_tool(context: ToolContext[Any], input: str) -> Any:
        try:
            arguments = json.loads(input or "{}")
        except ValueError:
            return await invoke(context, input)  # the SDK tells the model its JSON is broken
        if not isinstance(arguments, dict):
            return await invoke(context, input)
        sent = jsonable(without_key(arguments))

        async def execute(_request: JSON, key: str) -> JSON:
            given = json.dumps({**arguments, KEY_PARAMETER: key}) if keyed else input
            return jsonable(await invoke(context, given))

        if kind is ToolKind.SIDE_EFFECT:
            return await calls.effect(
                f"{prefix}.tool.{context.tool_call_id}",
                target="tool",
                operation=tool.name,
                request=call_request(tool.name, sent),
                execute=execute,
                reconcile=policy.reconcile.get(tool.name),
            )
        return await calls.effect(
            f"{prefix}.tool.{tool.name}.{request_hash(sent)[:16]}",
            target="tool",
            operation=tool.name,
            request=call_request(tool.name, sent),
            execute=execute,
            cache=True,
        )

    changed: dict[str, Any] = {"on_invoke_tool": on_invoke_tool}
    if schema is not None:
        changed["params_json_schema"] = schema
    return dataclasses.replace(tool, **changed)
