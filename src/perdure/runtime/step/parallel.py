"""Parallel branches inside one step: ``ctx.parallel({...})`` and ``await ctx.gather({...})``.

Each branch is one effect (:class:`EffectCall`) or one model call (:class:`ModelCall`) under a
stable branch id. The branch's effect name is ``"<branch id>/<name>"``, so its effect key is
the same every time the step runs: after a crash, a branch whose effect was confirmed replays
its recorded result and only the others are called again (through their reconcilers, when the
crash left a call in flight).

The calls overlap; the bookkeeping does not move. Every branch is driven, as a generator, by
the run's execution thread (the thread that owns the run's store work and its lease): when a
branch reaches its call, the call is handed to a thread of a small pool (a plain callable) or
to the runtime's event loop as a task (an ``async def`` callable) and the branch yields; the
execution thread goes on with the other branches and resumes each one when its call is done,
recording outcomes one at a time. Results are returned in branch-id order, never completion
order. When a branch fails, the others still run to their recorded outcome, then the first
failure in branch-id order is raised.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any

from perdure.core.chat import ChatModel, Pricing, ToolSpec
from perdure.core.effect_calls import Compensate, Execute, Offloaded, Reconcile
from perdure.core.effects import check_deadline
from perdure.core.errors import DefinitionError
from perdure.core.ids import checked_id
from perdure.core.model import JSON, Message
from perdure.core.retry import RetryPolicy
from perdure.core.tools import ToolRegistry
from perdure.runtime.step.host import StepHost
from perdure.runtime.step.model_calls import call_spec, call_steps

MAX_BRANCH_THREADS = 16
"""The most plain callables of one ``ctx.parallel`` that run at once."""


@dataclass(frozen=True, slots=True)
class EffectCall:
    """A branch that makes one effect: the arguments of :meth:`Context.effect
    <perdure.runtime.step.context.Context.effect>` (its effect name becomes
    ``"<branch>/<name>"``)."""

    name: str
    target: str
    operation: str
    request: JSON
    execute: Execute
    reconcile: Reconcile | None = None
    compensate: Compensate | None = None
    retry: RetryPolicy | None = None
    deadline: float | None = None


@dataclass(frozen=True, slots=True)
class ModelCall:
    """A branch that makes one (unstreamed) model call: the arguments of
    :meth:`Context.model_call <perdure.runtime.step.context.Context.model_call>`; its effect name
    is ``"<branch>/model"``."""

    model: ChatModel
    messages: Sequence[Message] | None = None
    tools: ToolRegistry | Iterable[ToolSpec] = ()
    params: dict[str, JSON] | None = None
    retry: RetryPolicy | None = None
    pricing: Pricing | None = None


Call = EffectCall | ModelCall


def branch_ids(branches: Mapping[str, Call]) -> list[str]:
    """The branch ids in the order results are combined (sorted), each checked."""
    if not isinstance(branches, Mapping) or not branches:
        raise DefinitionError(
            "ctx.parallel takes a non-empty mapping of branch id to EffectCall or ModelCall"
        )
    for bid, call in branches.items():
        checked_id(bid, "branch id")
        if "/" in bid:
            raise DefinitionError(f"branch id {bid!r} contains '/'", fix="use another id")
        if not isinstance(call, EffectCall | ModelCall):
            raise DefinitionError(
                f"branch {bid!r} is {type(call).__name__}, not an EffectCall or a ModelCall"
            )
    return sorted(branches)


def run_branches(
    host: StepHost, messages: Callable[[], list[Message]], branches: Mapping[str, Call]
) -> dict[str, Any]:
    """Run the branches concurrently from the execution thread; see the module docstring.
    ``messages`` gives the thread as the step sees it (what a model call sends by default)."""
    ids = branch_ids(branches)
    host.flush_streams()
    steps = {bid: _steps(host, messages, bid, branches[bid]) for bid in ids}
    results: dict[str, Any] = {}
    errors: dict[str, Exception] = {}
    waiting: dict[Future[Any], str] = {}

    def advance(bid: str) -> None:
        try:
            while True:
                item = next(steps[bid])
                if isinstance(item, Offloaded):
                    waiting[item.future] = bid
                    return
        except StopIteration as end:
            results[bid] = end.value
        except Exception as exc:  # kept; raised once every branch has settled
            errors[bid] = exc

    with host.branch_calls(min(len(ids), MAX_BRANCH_THREADS)):
        for bid in ids:
            advance(bid)
        while waiting:
            done, _ = wait(list(waiting), return_when=FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: waiting[f]):
                advance(waiting.pop(future))
    if errors:
        raise errors[min(errors)]
    return {bid: results[bid] for bid in ids}


def _steps(
    host: StepHost, messages: Callable[[], list[Message]], bid: str, call: Call
) -> Generator[Any, None, Any]:
    """One branch as a generator driven by :func:`run_branches`."""
    if isinstance(call, ModelCall):
        sent = messages() if call.messages is None else call.messages
        spec = call_spec(
            host,
            call.model,
            sent,
            False,
            call.tools,
            f"{bid}/model",
            call.params,
            call.retry,
            call.pricing,
        )
        return (yield from call_steps(host, spec))
    name = f"{bid}/{call.name}"
    check_deadline(name, call.deadline)
    new = host.new_effect(name, call.target, call.operation, call.request, call.compensate)
    return (
        yield from host.drive_effect(
            new, call.execute, call.reconcile, call.retry, deadline=call.deadline
        )
    )
