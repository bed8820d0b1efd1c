"""What an operator observes about the whole store at once: counts of runs and effects by
status, and the queue of runnable runs. Plain records for dashboards and metrics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from perdure.core.effects import EffectStatus
from perdure.core.model import RunStatus


@dataclass(frozen=True, slots=True)
class RunCount:
    """How many runs of ``workflow`` in ``tenant_id`` are in ``status``."""

    tenant_id: str
    workflow: str
    status: RunStatus
    count: int


@dataclass(frozen=True, slots=True)
class EffectCount:
    """How many effects of ``tenant_id`` are in ``status``."""

    tenant_id: str
    status: EffectStatus
    count: int


@dataclass(frozen=True, slots=True)
class Queue:
    """Runs a worker could claim now (``depth``), and since when the oldest has been
    claimable (``oldest``: its creation or due time; None when the queue is empty)."""

    depth: int
    oldest: datetime | None


@dataclass(frozen=True, slots=True)
class SpendCount:
    """What the runs of ``workflow`` in ``tenant_id`` used so far, as their budgets record it
    (model tokens and cost charged with ``ctx.charge``); runs without a budget record none."""

    tenant_id: str
    workflow: str
    tokens: int
    cost: float


@dataclass(frozen=True, slots=True)
class PeriodCount:
    """How many runs of a tenant created in ``period`` are in ``status`` now. ``period`` is
    the UTC hour (``2026-12-02T10``) or day (``2026-12-02``) they were created in."""

    period: str
    status: RunStatus
    count: int


@dataclass(frozen=True, slots=True)
class StepTiming:
    """One committed step of a run of ``workflow``: when it started and when its boundary
    committed (what ``perdure_step_seconds`` measures, read back from the store)."""

    workflow: str
    step: str
    started_at: datetime
    finished_at: datetime

    @property
    def seconds(self) -> float:
        """How long the step took."""
        return (self.finished_at - self.started_at).total_seconds()


@dataclass(frozen=True, slots=True)
class StepLatency:
    """How long step ``step`` of ``workflow`` took over ``count`` committed runs of it:
    percentiles 50, 90 and 99 and the longest, in seconds (nearest rank)."""

    workflow: str
    step: str
    count: int
    p50: float
    p90: float
    p99: float
    longest: float


def latencies(timings: Sequence[StepTiming]) -> list[StepLatency]:
    """Percentiles of each (workflow, step) of ``timings``, by workflow and step name."""
    by: dict[tuple[str, str], list[float]] = {}
    for t in timings:
        by.setdefault((t.workflow, t.step), []).append(max(t.seconds, 0.0))
    out = []
    for (workflow, step), seconds in sorted(by.items()):
        ranked = sorted(seconds)
        out.append(
            StepLatency(
                workflow,
                step,
                len(ranked),
                _rank(ranked, 0.50),
                _rank(ranked, 0.90),
                _rank(ranked, 0.99),
                ranked[-1],
            )
        )
    return out


def _rank(ranked: list[float], q: float) -> float:
    """The nearest-rank ``q`` percentile of a sorted, non-empty list."""
    return ranked[max(math.ceil(q * len(ranked)) - 1, 0)]
