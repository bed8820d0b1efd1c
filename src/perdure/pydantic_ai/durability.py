"""``PerdureDurability``: the capability that makes a pydantic-ai agent run inside a perdure step
durable, the way pydantic-ai's own durable integrations (Temporal, DBOS, Prefect) attach to an
agent as a capability and wrap its model and toolset through the public interface.

    durable = PerdureDurability(ctx, side_effects={"refund"})
    result = await agent.run(question, capabilities=[durable])

Every model request of the run is a recorded model call (:mod:`perdure.pydantic_ai.model`),
every tool call passes through the run's effects as its tool's kind says
(:mod:`perdure.pydantic_ai.toolset`). Give it to ``run``, ``run_sync`` (in a plain step),
``run_stream`` or ``iter`` of any agent; the agent itself is not changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models import Model
from pydantic_ai.run import AgentRunResult
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset

from perdure.core.chat import Pricing
from perdure.core.effect_calls import Reconcile
from perdure.core.retry import RetryPolicy
from perdure.core.signals import ControlFlow
from perdure.pydantic_ai.model import DurableModel
from perdure.pydantic_ai.toolset import DurableToolset
from perdure.runtime.step.context import Context
from perdure.runtime.step.frameworks import FrameworkCalls
from perdure.runtime.step.tool_policy import ToolPolicy


@dataclass(init=False)
class PerdureDurability(AbstractCapability[Any]):
    """Records an agent run in the step whose ``ctx`` it is given.

    ``side_effects``: names of tools whose calls change the world (exactly once, each with its
    idempotency key if it takes an ``idempotency_key`` parameter; ``reconcile[name](request,
    key)`` finds a call whose outcome a crash left unknown). ``cached``: read-only tools whose
    result is recorded per distinct arguments. Other tools run again when the step does.
    ``prefix`` starts every effect name (give two agents run side by side in one step their own
    prefixes). ``pricing`` prices the replies (else pydantic-ai's own price, if any); ``retry``
    is the model calls' retry policy (default five attempts with durable waits).
    """

    def __init__(
        self,
        ctx: Context,
        *,
        side_effects: Iterable[str] = (),
        cached: Iterable[str] = (),
        reconcile: Mapping[str, Reconcile] | None = None,
        prefix: str = "pydantic_ai",
        pricing: Pricing | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.calls = FrameworkCalls.of(ctx)
        self.policy = ToolPolicy.of(side_effects, cached, reconcile)
        self.prefix = prefix
        self.pricing = pricing
        self.retry = retry

    def get_wrapper_model(self, model: Model) -> Model | None:
        """Each request, by whichever model serves it, is a recorded model call."""
        if isinstance(model, DurableModel):
            return None
        return DurableModel(
            model, self.calls, prefix=self.prefix, pricing=self.pricing, retry=self.retry
        )

    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        """Each tool call goes through the run's effects as its tool's kind says."""
        return DurableToolset(toolset, calls=self.calls, policy=self.policy, prefix=self.prefix)

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Any) -> AgentRunResult[Any]:
        """Let perdure's own signals (a spent budget, a call for a person, a cancelled run) leave
        the run as they are, not wrapped in the task group that raised them."""
        try:
            result: AgentRunResult[Any] = await handler()
        except BaseExceptionGroup as group:
            signal = _first_signal(group)
            if signal is None:
                raise
            raise signal from None
        return result


def _first_signal(group: BaseExceptionGroup[Any]) -> ControlFlow | None:
    for exc in group.exceptions:
        if isinstance(exc, ControlFlow):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_signal(exc)
            if found is not None:
                return found
    return None
