"""An agent graph with its model calls and tool calls recorded: each agent reachable from the
starting one (through handoffs, cycles included) is cloned once, with its ``Model`` instance
recorded and its function tools replaced (:func:`~perdure.openai_agents.tools.durable_tool`);
a ``Handoff`` object's target agent is wrapped when the handoff happens. Handoffs themselves
need nothing more: they happen because a recorded reply asked for them, so a replayed reply
hands off to the same agent."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from agents import Agent, Handoff
from agents.models.interface import Model
from agents.tool import FunctionTool, Tool

from perdure.openai_agents.tools import durable_tool
from perdure.runtime.step.frameworks import FrameworkCalls
from perdure.runtime.step.tool_policy import ToolPolicy


class AgentWrapping:
    """Clones of the agents of one runner, each made once (so an agent keeps one identity for
    the SDK through handoffs and approvals)."""

    def __init__(
        self,
        calls: FrameworkCalls,
        policy: ToolPolicy,
        prefix: str,
        record: Callable[[Model, str], Model],
    ) -> None:
        self._calls = calls
        self._policy = policy
        self._prefix = prefix
        self._record = record
        self._clones: dict[int, tuple[Agent[Any], Agent[Any]]] = {}  # id -> (original, clone)
        self._made: set[int] = set()

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """The recorded clone of ``agent`` (a clone is its own)."""
        if id(agent) in self._made:
            return agent
        found = self._clones.get(id(agent))
        if found is not None:
            return found[1]
        model = agent.model
        changed: dict[str, Any] = {"tools": [self._tool(t) for t in agent.tools]}
        if isinstance(model, Model):
            changed["model"] = self._record(model, getattr(model, "model", None) or agent.name)
        clone = agent.clone(**changed)
        self._clones[id(agent)] = (agent, clone)  # the original is held: its id stays its own
        self._made.add(id(clone))
        clone.handoffs = [self._handoff(h) for h in agent.handoffs]
        return clone

    def _tool(self, tool: Tool) -> Tool:
        if isinstance(tool, FunctionTool):
            return durable_tool(tool, self._calls, self._policy, self._prefix)
        return tool

    def _handoff(self, handoff: Agent[Any] | Handoff[Any, Any]) -> Agent[Any] | Handoff[Any, Any]:
        if isinstance(handoff, Agent):
            return self.agent(handoff)
        invoke = handoff.on_invoke_handoff

        async def on_invoke_handoff(*args: Any) -> Any:
            return self.agent(await invoke(*args))

        return dataclasses.replace(handoff, on_invoke_handoff=on_invoke_handoff)
