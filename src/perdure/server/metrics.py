"""Prometheus metrics: what the store holds (read at each scrape) and what this process's
executions did (counted as they happen). See ``docs/observability.md`` for the list.

``/metrics`` of the server needs an ``admin`` key and shows that key's tenant: the store's
gauges and the server process's own counters. ``perdure worker --metrics-port`` serves the
counters of that worker's executions on a port of its own, and the store's gauges of every
tenant only with ``--metrics-store`` (give it to one worker, or scrape the server): gauges
exported by every process would be multiplied by ``sum()``.

Prometheus conventions: every labelled counter starts at 0 for the workflows and steps the
process knows (so the first takeover after a restart is an increase), a gauge that counts
trouble (quarantined runs, ambiguous effects) is present at 0, and both endpoints answer in
the OpenMetrics format when the scraper asks for it.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from perdure.core.effects import EffectStatus
from perdure.core.model import Run, RunStatus
from perdure.core.records import StepOutcome
from perdure.core.workflow import Workflow
from perdure.runtime.runtime import Runtime
from perdure.server.auth import ADMIN, principal_of, require

OUTCOMES = (*(str(o) for o in StepOutcome), "retry", "escalated", "cancelled", "error")
"""Every value of the ``outcome`` label of ``perdure_step_outcomes_total``."""

STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
GROUP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class StoreCollector(Collector):
    """Gauges read from the store at each scrape: runs by status and workflow, effects by
    status, quarantined runs, the runnable queue and its oldest run's age."""

    def __init__(self, runtime: Runtime, tenant: str | None = None) -> None:
        self.runtime = runtime
        self.tenant = tenant

    def collect(self) -> Iterator[Metric]:
        """See :class:`prometheus_client.registry.Collector`."""
        rt = self.runtime
        runs = GaugeMetricFamily(
            "perdure_runs",
            "Runs by tenant, workflow and status",
            labels=["tenant", "workflow", "status"],
        )
        quarantined = GaugeMetricFamily(
            "perdure_runs_quarantined", "QUARANTINED runs", labels=["tenant"]
        )
        counts = rt.activity.run_counts(tenant=self.tenant)
        tenants = {c.tenant_id for c in counts} | ({self.tenant} if self.tenant else set())
        held = dict.fromkeys(tenants, 0)  # present at 0: an alert on > 0 sees a series
        for c in counts:
            runs.add_metric([c.tenant_id, c.workflow, str(c.status)], c.count)
            if c.status is RunStatus.QUARANTINED:
                held[c.tenant_id] += c.count
        for tenant, n in sorted(held.items()):
            quarantined.add_metric([tenant], n)
        effects = GaugeMetricFamily(
            "perdure_effects", "Effects by tenant and status", labels=["tenant", "status"]
        )
        ambiguous = GaugeMetricFamily(
            "perdure_effects_ambiguous",
            "Effects whose outcome is unknown and needs a person",
            labels=["tenant"],
        )
        unknown = dict.fromkeys(tenants, 0)
        for e in rt.activity.effect_counts(tenant=self.tenant):
            effects.add_metric([e.tenant_id, str(e.status)], e.count)
            if e.status is EffectStatus.AMBIGUOUS:
                unknown[e.tenant_id] = unknown.get(e.tenant_id, 0) + e.count
        for tenant, n in sorted(unknown.items()):
            ambiguous.add_metric([tenant], n)
        tokens = GaugeMetricFamily(
            "perdure_tokens_used",
            "Model tokens the runs' budgets recorded (ctx.charge)",
            labels=["tenant", "workflow"],
        )
        cost = GaugeMetricFamily(
            "perdure_cost_used",
            "Cost the runs' budgets recorded (ctx.charge)",
            labels=["tenant", "workflow"],
        )
        for s in rt.activity.spend_counts(tenant=self.tenant):
            tokens.add_metric([s.tenant_id, s.workflow], s.tokens)
            cost.add_metric([s.tenant_id, s.workflow], s.cost)
        yield from (runs, quarantined, effects, ambiguous, tokens, cost)
        if self.tenant is None:  # the queue is the fleet's, across tenants
            queue = rt.activity.queue()
            age = (rt.clock.now() - queue.oldest).total_seconds() if queue.oldest else 0.0
            yield GaugeMetricFamily(
                "perdure_queue_depth", "Runs a worker could claim now", value=queue.depth
            )
            yield GaugeMetricFamily(
                "perdure_oldest_runnable_age_seconds",
                "How long the oldest claimable run has waited for a worker",
                value=max(age, 0.0),
            )


class ExecutionMetrics:
    """Counters and histograms of this process's executions (a telemetry observer)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        wf_step = ["workflow", "step"]
        self.step_seconds = Histogram(
            "perdure_step_duration_seconds",
            "Time a step took",
            wf_step,
            buckets=STEP_BUCKETS,
            registry=registry,
        )
        self.outcomes = Counter(
            "perdure_step_outcomes",
            "Steps by how they ended",
            [*wf_step, "outcome"],
            registry=registry,
        )
        self.retries = Counter(
            "perdure_step_retries", "Failed steps scheduled to retry", wf_step, registry=registry
        )
        self.commit_seconds = Histogram(
            "perdure_commit_duration_seconds",
            "Time a step-boundary commit took",
            buckets=COMMIT_BUCKETS,
            registry=registry,
        )
        self.group_runs = Histogram(
            "perdure_commit_group_runs",
            "Runs whose boundaries one commit transaction carried (group commit)",
            buckets=GROUP_BUCKETS,
            registry=registry,
        )
        self.claims = Counter("perdure_claims", "Runs claimed", ["workflow"], registry=registry)
        self.takeovers = Counter(
            "perdure_lease_takeovers",
            "Runs taken from an owner whose lease expired",
            ["workflow"],
            registry=registry,
        )
        self.lost = Counter(
            "perdure_leases_lost",
            "Executions that lost their run and stopped",
            ["workflow"],
            registry=registry,
        )

    def known(self, workflows: Iterable[Workflow[Any]]) -> None:
        """Start every labelled counter at 0 for these workflows and their steps (a counter
        that first appears at 1 shows no increase to ``rate()`` or ``increase()``)."""
        for wf in workflows:
            for counter in (self.claims, self.takeovers, self.lost):
                counter.labels(wf.name)
            for step in wf.steps:
                self.retries.labels(wf.name, step)
                for outcome in OUTCOMES:
                    self.outcomes.labels(wf.name, step, outcome)

    def step_finished(self, run: Run, step: str, outcome: str, seconds: float) -> None:
        """See :meth:`perdure.runtime.telemetry.Observer.step_finished`."""
        self.step_seconds.labels(run.workflow, step).observe(seconds)
        self.outcomes.labels(run.workflow, step, outcome).inc()

    def retried(self, run: Run, step: str) -> None:
        """See :meth:`perdure.runtime.telemetry.Observer.retried`."""
        self.retries.labels(run.workflow, step).inc()

    def committed(self, run: Run, boundaries: int, seconds: float) -> None:
        """See :meth:`perdure.runtime.telemetry.Observer.committed`."""
        self.commit_seconds.observe(seconds)

    def grouped(self, runs: int) -> None:
        """See :meth:`perdure.runtime.telemetry.Observer.grouped`."""
        self.group_runs.observe(runs)

    def claimed(self, run: Run, takeover: bool) -> None:
        """See :meth:`perdure.runtime.telemetry.Observer.claimed`."""
        self.claims.labels(run.workflow).inc()
        if takeover:
            self.takeovers.labels(run.workflow).inc()

    def lease_lost(self, run: Run) -> None:
        """See :meth:`perdure.runtime.telemetry.Observer.lease_lost`."""
        self.lost.labels(run.workflow).inc()


_EXECUTION: weakref.WeakKeyDictionary[Runtime, CollectorRegistry] = weakref.WeakKeyDictionary()
"""Each runtime's execution metrics, made once."""


def registry_for(
    runtime: Runtime, tenant: str | None = None, *, store: bool = True
) -> CollectorRegistry:
    """A registry with this runtime's execution metrics (registered with its telemetry once,
    every counter at 0 for the workflows it knows) and, with ``store``, the store's gauges (one
    tenant, or all)."""
    registry = CollectorRegistry(auto_describe=False)
    if store:
        registry.register(StoreCollector(runtime, tenant))
    execution = _EXECUTION.get(runtime)
    if execution is None:
        execution = _EXECUTION[runtime] = CollectorRegistry(auto_describe=False)
        counted = ExecutionMetrics(execution)
        counted.known(runtime.parts.workflows.values())
        runtime.services.telemetry.add(counted)
    registry.register(_Merged(execution))
    return registry


class _Merged(Collector):
    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Metric]:
        yield from self.registry.collect()


def endpoint(runtime: Runtime) -> Callable[[Request], Awaitable[Response]]:
    """``GET /metrics``: an admin key's tenant, in the Prometheus text format."""
    registry_for(runtime)  # count executions from the start

    async def metrics(request: Request) -> Response:
        who = await principal_of(request)
        require(who, ADMIN, "reading metrics")
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        body = await run_in_threadpool(encode, registry_for(runtime, who.tenant_id))
        return Response(body, media_type=content_type)

    return metrics


def serve(runtime: Runtime, port: int, host: str = "127.0.0.1", *, store: bool = False) -> None:
    """Serve this process's execution metrics on ``host:port`` (a thread of its own; for
    ``perdure worker --metrics-port``), with every tenant's store gauges when ``store``
    (``--metrics-store``). prometheus-client's server negotiates OpenMetrics itself."""
    start_http_server(port, addr=host, registry=registry_for(runtime, store=store))
