"""pydantic-ai's calls deferred to an external system, on perdure's signals.

A tool that raises ``CallDeferred`` (its result will come from outside: a job queue, another
service, a person's form) ends pydantic-ai's run with ``DeferredToolRequests`` whose ``calls``
list it. The step keeps the :class:`PendingCalls` in its state and ends with
``wait_for_signal(pending.signal, next=...)``: the run waits, holding no process, until the
external system delivers the results as one signal (``perdure signal RUN tool_results --payload
'{"<tool call id>": <result>, ...}'``, ``Runtime.signal``, the HTTP API). The next step runs the
agent again from the kept conversation with those results as ``DeferredToolResults``:

    @step(next=["agent"])
    async def agent(ctx, s):
        if s.pending is None:
            result = await bot.run(s.question, capabilities=[durable(ctx)])
        else:
            pending = PendingCalls.from_json(s.pending)
            result = await bot.run(capabilities=[durable(ctx)],
                                   **pending.delivered(ctx.signal(pending.signal)))
        pending = PendingCalls.of(result)
        if pending is not None:
            s.pending = pending.to_json()
            return wait_for_signal(pending.signal, next="agent")
        s.pending = None
        return done(result.output)

A call the signal gives no result for is told to the model as a failed call (``ModelRetry``), so
the agent can go on.

A reply that asked for approvals and deferred calls at once needs an answer for every one of
its calls before pydantic-ai continues: the approvals are asked first
(:class:`~perdure.pydantic_ai.approvals.PendingApproval`), and once a person decided,
``PendingApproval.after(ctx.approval)`` is the :class:`PendingCalls` of the same reply that keeps
the decision (``approvals``); its :meth:`PendingCalls.delivered` answers both together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import (
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessagesTypeAdapter,
    ModelRetry,
    ToolDenied,
)
from pydantic_ai.run import AgentRunResult

from perdure.core.errors import InvalidInputError
from perdure.core.ids import checked_id
from perdure.core.model import JSON
from perdure.pydantic_ai.records import jsonable

SIGNAL = "tool_results"
"""The signal that delivers deferred calls' results unless another name is given."""


@dataclass(frozen=True, slots=True)
class PendingCalls:
    """The tool calls an agent run deferred to an external system, the conversation so far
    (pydantic-ai's JSON of its messages) and the signal that will deliver their results, as
    the step keeps them in its state. ``approvals``: the decisions already taken on the same
    reply's calls that needed approval (by tool call id: ``true``, or ``{"denied": message}``),
    given to the agent with the results."""

    history: JSON
    calls: tuple[dict[str, JSON], ...]
    signal: str = SIGNAL
    approvals: Mapping[str, JSON] = field(default_factory=dict)

    @classmethod
    def of(cls, result: AgentRunResult[Any], *, signal: str = SIGNAL) -> PendingCalls | None:
        """The external calls ``result`` waits for, or None when its output does not defer
        any (approvals alone: :class:`~perdure.pydantic_ai.approvals.PendingApproval`)."""
        output = result.output
        if not isinstance(output, DeferredToolRequests) or not output.calls:
            return None
        if output.approvals:
            return None  # the approvals are answered first; the calls come again after them
        history = ModelMessagesTypeAdapter.dump_python(result.all_messages(), mode="json")
        return cls(jsonable(history), external_calls(output), checked_id(signal, "signal"))

    @property
    def request(self) -> dict[str, JSON]:
        """What the external system is asked: each call's id, tool, arguments and metadata."""
        return {"tool_calls": [dict(c) for c in self.calls], "signal": self.signal}

    def delivered(self, payload: JSON) -> dict[str, Any]:
        """The arguments that continue the agent run with the signal's ``payload`` (an object
        of results by tool call id): ``message_history`` and ``deferred_tool_results``."""
        if not isinstance(payload, Mapping):
            raise InvalidInputError(
                f"the {self.signal!r} signal must carry an object of results by tool call id, "
                f"not {type(payload).__name__}",
                fix=f"send --payload '{{\"{self.calls[0]['id']}\": ...}}'",
            )
        results: dict[str, Any] = {}
        for call in self.calls:
            key = str(call["id"])
            results[key] = (
                payload[key]
                if key in payload
                else ModelRetry(f"no result was delivered for the call {key}")
            )
        return {
            "message_history": ModelMessagesTypeAdapter.validate_python(self.history),
            "deferred_tool_results": DeferredToolResults(
                calls=results, approvals={k: _decision(v) for k, v in self.approvals.items()}
            ),
        }

    def to_json(self) -> dict[str, JSON]:
        """The record as the step's state keeps it."""
        found: dict[str, JSON] = {
            "history": self.history,
            "calls": [dict(c) for c in self.calls],
            "signal": self.signal,
        }
        if self.approvals:
            found["approvals"] = dict(self.approvals)
        return found

    @classmethod
    def from_json(cls, data: Any) -> PendingCalls:
        """Read what :meth:`to_json` wrote."""
        if not isinstance(data, Mapping) or not isinstance(data.get("calls"), list):
            raise InvalidInputError(
                "a pending calls record has no calls",
                fix="keep what PendingCalls.to_json() returned in the step's state",
            )
        calls = tuple(dict(c) for c in data["calls"] if isinstance(c, Mapping))
        if not calls:
            raise InvalidInputError(
                "a pending calls record has no calls",
                fix="keep what PendingCalls.to_json() returned in the step's state",
            )
        approvals = data.get("approvals")
        return cls(
            data.get("history"),
            calls,
            checked_id(data.get("signal", SIGNAL), "signal"),
            dict(approvals) if isinstance(approvals, Mapping) else {},
        )


def external_calls(output: DeferredToolRequests) -> tuple[dict[str, JSON], ...]:
    """The calls ``output`` deferred to an external system, as a record keeps them: each
    call's id, tool, arguments and the tool's metadata."""
    return tuple(
        {
            "id": c.tool_call_id,
            "tool": c.tool_name,
            "arguments": jsonable(c.args_as_dict()),
            "metadata": jsonable(output.metadata.get(c.tool_call_id)),
        }
        for c in output.calls
    )


def _decision(kept: JSON) -> bool | ToolDenied:
    """A kept decision as pydantic-ai's answer to a call that needed approval."""
    if isinstance(kept, Mapping):
        return ToolDenied(str(kept.get("denied") or "rejected"))
    return kept is True
