"""The SDK's tool approvals (``needs_approval``) on perdure's approvals.

A tool that needs approval interrupts the SDK's run: ``result.interruptions`` lists the calls,
``result.to_state()`` is where the run stands. The step keeps the :class:`PendingApproval` (the
run state's JSON) in its state and ends with ``wait_for_approval(role, ...)``; the run waits,
holding no process, until a person of that role decides. The next step continues with
``PerdureRunner.resume(agent, pending, ctx.approval)``, which approves or rejects every
interrupted call and runs on:

    @step(next=["agent"])
    async def agent(ctx, s):
        runner = PerdureRunner(ctx, side_effects={"refund"})
        if s.pending is None:
            result = await runner.run(bot, s.question)
        else:
            result = await runner.resume(bot, PendingApproval.from_json(s.pending), ctx.approval)
        pending = PendingApproval.of(result)
        if pending is not None:
            s.pending = pending.to_json()
            return wait_for_approval("payments", pending.request, on_approve="agent",
                                     on_reject="agent")
        return done(result.final_output)

One decision answers every interrupted call (perdure's approval is one request with one
decision); a rejection is told to the model with the approver's comment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.result import RunResult

from perdure.core.errors import InvalidInputError
from perdure.core.model import JSON
from perdure.openai_agents.records import jsonable


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """The tool calls an agent run waits to have approved, and the SDK's run state (its JSON),
    as the step keeps them in its state."""

    state: JSON
    calls: tuple[dict[str, JSON], ...]

    @classmethod
    def of(cls, result: RunResult) -> PendingApproval | None:
        """The approvals ``result`` waits for, or None when it was not interrupted."""
        if not result.interruptions:
            return None
        calls = tuple(
            {
                "id": str(getattr(item.raw_item, "call_id", "") or ""),
                "tool": item.tool_name or str(getattr(item.raw_item, "name", "")),
                "arguments": _arguments(getattr(item.raw_item, "arguments", None)),
            }
            for item in result.interruptions
        )
        return cls(jsonable(result.to_state().to_json()), calls)

    @property
    def request(self) -> dict[str, JSON]:
        """What the approver is shown: each call's tool and arguments."""
        return {"tool_calls": [dict(c) for c in self.calls]}

    def to_json(self) -> dict[str, JSON]:
        """The record as the step's state keeps it."""
        return {"state": self.state, "calls": [dict(c) for c in self.calls]}

    @classmethod
    def from_json(cls, data: Any) -> PendingApproval:
        """Read what :meth:`to_json` wrote."""
        if not isinstance(data, Mapping) or not isinstance(data.get("state"), dict):
            raise InvalidInputError("a pending approval record has no run state")
        calls = tuple(dict(c) for c in data.get("calls") or () if isinstance(c, Mapping))
        return cls(data["state"], calls)


def _arguments(raw: Any) -> JSON:
    if isinstance(raw, str):
        import json

        try:
            return jsonable(json.loads(raw))
        except ValueError:
            return raw
    return jsonable(raw)
