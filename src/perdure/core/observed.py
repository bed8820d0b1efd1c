"""What an operator observes about the whole store at once: counts of runs and effects by
status, and the queue of runnable runs. Plain records for dashboards and metrics."""

from __future__ import annotations

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
