"""pydantic-ai's human in the loop on perdure's approvals.

A tool that needs approval (``requires_approval=True``, or one that raises ``ApprovalRequired``)
ends pydantic-ai's run with ``DeferredToolRequests`` as its output. The step keeps the
:class:`PendingApproval` in its state and ends with ``wait_for_approval(role, ...)``: the run
waits, holding no process, until a person of that role decides (``perdure approve``, the HTTP
API, the dashboard). The next step reads ``ctx.approval`` and runs the agent again from the
kept conversation with the decision as ``DeferredToolResults``:

    @step(next=["agent"])
    async def agent(ctx, s):
        if s.pending is None:
            result = await bot.run(s.question, capabilities=[durable(ctx)])
        else:
            pending = PendingApproval.from_json(s.pending)
            result = await bot.run(capabilities=[durable(ctx)], **pending.decided(ctx.approval))
        pending = PendingApproval.of(result)
        if pending is not None:
            s.pending = pending.to_json()
            return wait_for_approval("payments", pending.request, on_approve="agent",
                                     on_reject="agent")
        return done(result.output)

One decision answers every call the run asked approval for (perdure's approval is one request
with one decision); a rejection is told to the model with the approver's comment. Calls that
pydantic-ai defers to an external system (``CallDeferred``) wait for a signal instead
(:mod:`perdure.pydantic_ai.deferred`). When the reply that asked for approval also deferred
calls, pydantic-ai needs the answers of both before it continues: after the decision,
:meth:`PendingApproval.after` is the :class:`~perdure.pydantic_ai.deferred.PendingCalls` to wait
for (it keeps the decision), and its ``delivered`` continues the agent with everything:

        else:
            pending = PendingApproval.from_json(s.approval)
            waiting = pending.after(ctx.approval)
            if waiting is not None:               # the same reply deferred calls too
                s.pending = waiting.to_json()
                return wait_for_signal(waiting.signal, next="agent")
            result = await bot.run(capabilities=[durable(ctx)], **pending.decided(ctx.approval))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic_ai import (
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    ToolDenied,
)
from pydantic_ai.run import AgentRunResult

from perdure.core.errors import InvalidInputError
from perdure.core.model import JSON, Approval
from perdure.pydantic_ai.deferred import PendingCalls, external_calls
from perdure.pydantic_ai.records import jsonable


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """The tool calls an agent run asked a person to approve, and the conversation so far
    (pydantic-ai's JSON of its messages), as the step keeps them in its state."""

    history: JSON
    calls: tuple[dict[str, JSON], ...]
    deferred: tuple[dict[str, JSON], ...] = ()
    """The calls the same reply deferred to an external system (see :meth:`after`)."""

    @classmethod
    def of(cls, result: AgentRunResult[Any]) -> PendingApproval | None:
        """The approvals ``result`` waits for, or None when its output is not a request for
        approval."""
        output = result.output
        if not isinstance(output, DeferredToolRequests) or not output.approvals:
            return None
        calls = tuple(
            {"id": c.tool_call_id, "tool": c.tool_name, "arguments": jsonable(c.args_as_dict())}
            for c in output.approvals
        )
        history = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
        return cls(jsonable(history), calls, external_calls(output))

    @property
    def request(self) -> dict[str, JSON]:
        """What the approver is shown: each call's tool and arguments."""
        return {"tool_calls": [dict(c) for c in self.calls]}

    def decided(self, approval: Approval | None) -> dict[str, Any]:
        """The arguments that continue the agent run with ``approval`` (``ctx.approval``):
        ``message_history`` and ``deferred_tool_results`` for ``agent.run(...)``. A reply that
        also deferred calls cannot continue yet (see :meth:`after`)."""
        if self.deferred:
            raise InvalidInputError(
                "the reply that asked for approval also deferred calls to an external system; "
                "pydantic-ai continues only with their results too",
                fix="wait for them first: waiting = pending.after(ctx.approval), then "
                "wait_for_signal(waiting.signal) and continue with waiting.delivered(...)",
            )
        answer = self._answer(approval)
        return {
            "message_history": ModelMessagesTypeAdapter.validate_python(self.history),
            "deferred_tool_results": DeferredToolResults(
                approvals={str(c["id"]): answer for c in self.calls}
            ),
        }

    def after(self, approval: Approval | None) -> PendingCalls | None:
        """The calls the same reply deferred to an external system, with ``approval`` kept for
        its calls that needed it: the record to wait on (``wait_for_signal(waiting.signal)``)
        before the agent continues. None when the reply deferred no call
        (:meth:`decided` continues it at once)."""
        if not self.deferred:
            return None
        answer = self._answer(approval)
        kept: JSON = True if answer is True else {"denied": answer.message}
        return PendingCalls(
            self.history, self.deferred, approvals={str(c["id"]): kept for c in self.calls}
        )

    @staticmethod
    def _answer(approval: Approval | None) -> Literal[True] | ToolDenied:
        if approval is None or approval.status == "pending":
            raise InvalidInputError(
                "the approval is not decided yet",
                fix="continue the agent after the step that waited for the approval",
            )
        if approval.approved:
            return True
        return ToolDenied(approval.comment or f"rejected by {approval.decided_by}")

    def to_json(self) -> dict[str, JSON]:
        """The record as the step's state keeps it."""
        found: dict[str, JSON] = {"history": self.history, "calls": [dict(c) for c in self.calls]}
        if self.deferred:
            found["deferred"] = [dict(c) for c in self.deferred]
        return found

    @classmethod
    def from_json(cls, data: Any) -> PendingApproval:
        """Read what :meth:`to_json` wrote."""
        if not isinstance(data, Mapping) or not isinstance(data.get("calls"), list):
            raise InvalidInputError(
                "a pending approval record has no calls",
                fix="keep what PendingApproval.to_json() returned in the step's state",
            )
        calls = tuple(dict(c) for c in data["calls"] if isinstance(c, Mapping))
        deferred = data.get("deferred")
        external = (
            tuple(dict(c) for c in deferred if isinstance(c, Mapping))
            if isinstance(deferred, list)
            else ()
        )
        return cls(data.get("history"), calls, external)
