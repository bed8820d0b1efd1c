"""``PerdureRunner``: the OpenAI Agents SDK's ``Runner`` inside a perdure step.

    runner = PerdureRunner(ctx, side_effects={"send_email"})
    result = await runner.run(agent, "question")            # as Runner.run(agent, "question")

It runs the SDK's own agent loop (``Runner.run``, ``run_sync``, ``run_streamed``) with the
run's model provider and the agents recorded: every model request is a recorded model call
(:mod:`perdure.openai_agents.model`), every function tool call goes through the step's effects
as its tool's kind says (:mod:`perdure.openai_agents.tools`), and handoffs replay with the
replies that asked for them. ``resume`` continues a run that waited for a person's approval
(:mod:`perdure.openai_agents.approvals`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from agents import Agent, RunConfig, Runner
from agents.models.interface import Model
from agents.result import RunResult, RunResultStreaming
from agents.run_state import RunState

from perdure.core.chat import Pricing
from perdure.core.effect_calls import Reconcile
from perdure.core.errors import InvalidInputError
from perdure.core.model import Approval
from perdure.core.retry import RetryPolicy
from perdure.openai_agents.approvals import PendingApproval
from perdure.openai_agents.model import DurableModel
from perdure.openai_agents.provider import DurableProvider
from perdure.openai_agents.wrapping import AgentWrapping
from perdure.runtime.step.context import Context
from perdure.runtime.step.frameworks import FrameworkCalls
from perdure.runtime.step.tool_policy import ToolPolicy


class PerdureRunner:
    """Runs agents in the step whose ``ctx`` it is given; see the module docstring.

    ``side_effects``: names of function tools whose calls change the world (exactly once, each
    with its idempotency key if it takes an ``idempotency_key`` parameter; ``reconcile[name]
    (request, key)`` finds a call whose outcome a crash left unknown). ``cached``: read-only
    tools whose output is recorded per distinct arguments. Other tools run again when the step
    does. ``prefix`` starts every effect name; ``pricing`` prices the replies; ``retry`` is the
    model calls' retry policy.
    """

    def __init__(
        self,
        ctx: Context,
        *,
        side_effects: Iterable[str] = (),
        cached: Iterable[str] = (),
        reconcile: Mapping[str, Reconcile] | None = None,
        prefix: str = "openai_agents",
        pricing: Pricing | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.calls = FrameworkCalls.of(ctx)
        self.prefix = prefix
        self.pricing = pricing
        self.retry = retry
        policy = ToolPolicy.of(side_effects, cached, reconcile)
        self._agents = AgentWrapping(self.calls, policy, prefix, self._record)

    async def run(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run`` (same arguments), recorded, in an ``async def`` step."""
        agent, options = self._prepared(starting_agent, kwargs)
        return await Runner.run(agent, input, **options)

    def run_sync(self, starting_agent: Agent[Any], input: Any, **kwargs: Any) -> RunResult:
        """``Runner.run_sync`` (same arguments), recorded, in a plain step."""
        agent, options = self._prepared(starting_agent, kwargs)
        return Runner.run_sync(agent, input, **options)

    def run_streamed(
        self, starting_agent: Agent[Any], input: Any, **kwargs: Any
    ) -> RunResultStreaming:
        """``Runner.run_streamed`` (same arguments), recorded, in an ``async def`` step: each
        model request streams its events as they arrive and its text to the reply's durable
        token stream."""
        agent, options = self._prepared(starting_agent, kwargs)
        return Runner.run_streamed(agent, input, **options)

    async def resume(
        self,
        starting_agent: Agent[Any],
        pending: PendingApproval,
        approval: Approval | None,
        **kwargs: Any,
    ) -> RunResult:
        """Continue the run ``pending`` kept, every interrupted call approved or rejected as
        ``approval`` (``ctx.approval``) says."""
        if approval is None or approval.status == "pending":
            raise InvalidInputError(
                "the approval is not decided yet",
                fix="resume the agent after the step that waited for the approval",
            )
        agent, options = self._prepared(starting_agent, kwargs)
        state: RunState[Any] = await RunState.from_json(agent, dict(pending.state))
        for item in state.get_interruptions():
            if approval.approved:
                state.approve(item)
            else:
                message = approval.comment or f"rejected by {approval.decided_by}"
                state.reject(item, rejection_message=message)
        return await Runner.run(agent, state, **options)

    def _prepared(
        self, agent: Agent[Any], kwargs: dict[str, Any]
    ) -> tuple[Agent[Any], dict[str, Any]]:
        config = kwargs.get("run_config")
        if config is None:
            config = RunConfig()
        elif isinstance(config, dict):
            config = RunConfig(**config)
        changed: dict[str, Any] = {
            "model_provider": DurableProvider(config.model_provider, self._record)
        }
        if isinstance(config.model, Model):
            changed["model"] = self._record(config.model, getattr(config.model, "model", "run"))
        return self._agents.agent(agent), {
            **kwargs,
            "run_config": dataclasses.replace(config, **changed),
        }

    def _record(self, model: Model, name: str) -> Model:
        if isinstance(model, DurableModel):
            return model
        return DurableModel(
            model, str(name), self.calls, prefix=self.prefix, pricing=self.pricing, retry=self.retry
        )
