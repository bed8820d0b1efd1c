"""Step latency percentiles for the overview page (nearest rank, per workflow and step)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from perdure.core.observed import StepTiming, latencies

T0 = datetime(2026, 12, 2, tzinfo=UTC)


def timing(step: str, seconds: float, workflow: str = "wf") -> StepTiming:
    return StepTiming(workflow, step, T0, T0 + timedelta(seconds=seconds))


def test_percentiles_are_nearest_rank_per_workflow_and_step() -> None:
    found = latencies([timing("a", s) for s in range(1, 101)] + [timing("b", 7, "other")])
    b, a = found  # by workflow, then step
    assert (a.workflow, a.step, a.count) == ("wf", "a", 100)
    assert (a.p50, a.p90, a.p99, a.longest) == (50, 90, 99, 100)
    assert (b.workflow, b.count, b.p50, b.p99, b.longest) == ("other", 1, 7, 7, 7)
    assert latencies([]) == []
