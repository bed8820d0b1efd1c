"""Checkpoint strategies: when a run's step boundaries become durable, by the cost of losing work.

A step's boundary is always *written*; a strategy decides when the boundaries handed to the
run's committer are *flushed* (committed, fsync'd) and so what a crash can lose. Choose one
for a workflow, and override it for single steps::

    agent = Workflow("agent", state=S, steps=[...], checkpoint=hybrid(30))

    @step(next=["reply"], checkpoint=per_step())
    def pay(ctx, s): ...

Every strategy keeps the effect protocol's two guarantees: an effect's intent is durable
before its call (the intent is its own record, written before the call whatever the
strategy), and the boundaries that led to a side-effecting effect are flushed before the
effect is sent, so the state that decided it is never lost once the call may have happened. A
run that waits (approval, signal, timer, children) or ends flushes too. What differs is
everything in between:

==================  ========================================================================
strategy            flushes (besides the waits, the end and before every side effect)
==================  ========================================================================
``per_step()``      every boundary, before the next step starts (the ``sync`` durability)
``per_effect()``    before every effect call, model calls included (the ``exit`` durability)
``timed(s)``        a boundary written ``s`` seconds or more after the last flush
``hybrid(s)``       as ``timed(s)``, and at once the boundary of a step that made a side effect
                    or started a child run
==================  ========================================================================

A side effect here is every recorded call that is not a model call: ``ctx.effect``, a tool
with ``side_effect=True``, and (conservatively) a ``cache=True`` tool's recorded call; starting
a child run counts as one too.

The time is the runtime's injected clock (:class:`perdure.core.clock.Clock`). The decisions are
pure functions of the strategy and what just happened, so the sync and the async runtimes and
every durability share them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum

from perdure.core.errors import DefinitionError


class StrategyKind(StrEnum):
    """The four checkpoint strategies (see the module docstring)."""

    PER_STEP = "per_step"
    PER_EFFECT = "per_effect"
    TIMED = "timed"
    HYBRID = "hybrid"


@dataclass(frozen=True, slots=True)
class CheckpointStrategy:
    """When buffered step boundaries are flushed; build one with :func:`per_step`,
    :func:`per_effect`, :func:`timed` or :func:`hybrid`.

    ``seconds`` is the longest time (by the runtime's clock) a boundary of ``timed`` and
    ``hybrid`` waits for a flush while steps go on; None for the other two.
    """

    kind: StrategyKind
    seconds: float | None = None

    def __post_init__(self) -> None:
        timer = self.kind in (StrategyKind.TIMED, StrategyKind.HYBRID)
        if timer and (self.seconds is None or not math.isfinite(self.seconds)):
            raise DefinitionError(
                f"{self.kind}: seconds must be a finite number",
                fix=f"write {self.kind}(30) for a flush at least every 30 seconds",
            )
        if timer and self.seconds is not None and self.seconds <= 0:
            raise DefinitionError(
                f"{self.kind}({self.seconds}): seconds must be greater than 0",
                fix="use per_step() for a flush at every boundary",
            )
        if not timer and self.seconds is not None:
            raise DefinitionError(f"{self.kind} takes no seconds")

    def flush_after_boundary(self, *, side_effect: bool, elapsed: float) -> bool:
        """Whether the boundary just handed over is flushed at once (with every earlier one).

        ``side_effect``: its step made (or replayed) a side-effecting effect; ``elapsed``: the
        seconds since the last flush, by the runtime's clock. A boundary that waits or ends the
        run is always flushed; this decides the ones that continue to a next step."""
        if self.kind is StrategyKind.PER_STEP:
            return True
        if self.kind is StrategyKind.PER_EFFECT:
            return False
        if self.kind is StrategyKind.HYBRID and side_effect:
            return True
        return self.seconds is not None and elapsed >= self.seconds

    def flush_before_effect(self, *, model: bool) -> bool:
        """Whether the buffered boundaries are flushed before an effect's call. Always for a
        side-effecting effect (the effect protocol); for a model call only under
        ``per_effect`` and ``per_step`` (under ``per_step`` nothing is ever buffered)."""
        if not model:
            return True
        return self.kind in (StrategyKind.PER_STEP, StrategyKind.PER_EFFECT)

    @property
    def recovery_point(self) -> str:
        """What a crash can lose under this strategy, in one sentence (for docs and tools)."""
        return RECOVERY_POINTS[self.kind].format(seconds=self.seconds)

    def __str__(self) -> str:
        if self.seconds is None:
            return f"{self.kind}()"
        return f"{self.kind}({self.seconds:g})"


RECOVERY_POINTS = {
    StrategyKind.PER_STEP: "nothing a step completed",
    StrategyKind.PER_EFFECT: (
        "the steps completed since the last effect call; they run again and replay "
        "their recorded effects"
    ),
    StrategyKind.TIMED: (
        "up to {seconds:g} seconds of completed steps (none since the last side effect, "
        "wait or flush); they run again, replaying recorded effects and model calls"
    ),
    StrategyKind.HYBRID: (
        "up to {seconds:g} seconds of steps that made no side effect; a step that made one "
        "is never lost"
    ),
}
"""What a crash can lose under each strategy."""


def per_step() -> CheckpointStrategy:
    """Flush every step boundary before the next step starts (the ``sync`` durability, the
    default). A crash loses nothing a step completed."""
    return CheckpointStrategy(StrategyKind.PER_STEP)


def per_effect() -> CheckpointStrategy:
    """Flush before every recorded call (``ctx.effect``, recorded tools, model calls) and child
    run, at waits and at the end; boundaries in between are kept in memory. A crash loses the
    steps completed since the last such call. The ``exit`` durability is this strategy."""
    return CheckpointStrategy(StrategyKind.PER_EFFECT)


def timed(seconds: float) -> CheckpointStrategy:
    """Flush a boundary written ``seconds`` or more (by the runtime's clock) after the last
    flush, before every side-effecting effect, at waits and at the end. A crash loses at most
    ``seconds`` of steps, which run again and replay their recorded effects and model calls."""
    return CheckpointStrategy(StrategyKind.TIMED, _seconds("timed", seconds))


def hybrid(seconds: float) -> CheckpointStrategy:
    """:func:`timed`, and the boundary of every step that made a side effect (or asks for an
    approval) is flushed at once: a crash never loses a step that acted on the world, and at
    most ``seconds`` of the steps that only thought (model calls, reads)."""
    return CheckpointStrategy(StrategyKind.HYBRID, _seconds("hybrid", seconds))


def _seconds(kind: str, seconds: object) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise DefinitionError(
            f"{kind}({seconds!r}): seconds must be a number", fix=f"write {kind}(30)"
        )
    return float(seconds)


__all__ = [
    "RECOVERY_POINTS",
    "CheckpointStrategy",
    "StrategyKind",
    "hybrid",
    "per_effect",
    "per_step",
    "timed",
]
