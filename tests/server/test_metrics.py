"""Metrics scraped after a known workload show the expected counts: from the server's
``/metrics`` (one tenant) and from a worker's metrics port (every tenant, the queue)."""

from __future__ import annotations

import socket

import httpx
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from perdure import FakeClock, Runtime
from perdure.server import metrics
from tests.server.conftest import WORKFLOWS, Served


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape, by name and labels."""
    found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            found[(s.name, frozenset(s.labels.items()))] = s.value
    return found


def value(
    found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def test_the_server_metrics_count_a_known_workload(served: Served, clock: FakeClock) -> None:
    rt = served.runtime
    for _ in range(3):
        rt.start("plain", tenant="t1")
    rt.start("charge", tenant="t1")
    rt.start("job", {"ticks": 0}, tenant="t1")
    flaky = rt.start("flaky", tenant="t1")
    rt.start("plain", tenant="t2")
    for _ in range(2):
        rt.start("spend", tenant="t1")
    rt.run_until_idle(tenant="t1")
    clock.advance(2)  # the retry of flaky comes due
    rt.run_until_idle(tenant="t1")
    assert rt.get(flaky.run_id, tenant="t1").status == "SUCCEEDED"
    with served.client("admin") as c:
        r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    m = samples(r.text)
    assert value(m, "perdure_runs", tenant="t1", workflow="plain", status="SUCCEEDED") == 3
    assert value(m, "perdure_runs", tenant="t1", workflow="charge", status="NEEDS_ATTENTION") == 1
    assert value(m, "perdure_runs", tenant="t1", workflow="job", status="WAITING_APPROVAL") == 1
    assert not any(dict(labels).get("tenant") == "t2" for _, labels in m)  # another tenant's
    assert value(m, "perdure_effects", tenant="t1", status="ambiguous") == 1
    assert value(m, "perdure_effects_ambiguous", tenant="t1") == 1
    assert (
        value(m, "perdure_step_outcomes_total", workflow="plain", step="only", outcome="done") == 3
    )
    assert (
        value(m, "perdure_step_outcomes_total", workflow="flaky", step="wobble", outcome="retry")
        == 1
    )
    assert value(m, "perdure_step_retries_total", workflow="flaky", step="wobble") == 1
    assert (
        value(m, "perdure_step_outcomes_total", workflow="charge", step="pay", outcome="escalated")
        == 1
    )
    assert value(m, "perdure_step_duration_seconds_count", workflow="plain", step="only") == 3
    assert value(m, "perdure_claims_total", workflow="plain") == 3
    assert value(m, "perdure_claims_total", workflow="flaky") == 2
    # plain 3, flaky 1, job 2 (begin, ask), spend 2: one commit per step in sync mode
    assert value(m, "perdure_commit_duration_seconds_count") == 8
    # runs advanced one at a time: every commit transaction carried one run
    assert value(m, "perdure_commit_group_runs_count") == 8
    assert value(m, "perdure_commit_group_runs_sum") == 8
    assert value(m, "perdure_lease_takeovers_total", workflow="plain") == 0
    assert value(m, "perdure_tokens_used", tenant="t1", workflow="spend") == 100
    assert value(m, "perdure_cost_used", tenant="t1", workflow="spend") == 0.25


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_worker_metrics_port_shows_every_tenant_the_queue_and_takeovers(
    served: Served, clock: FakeClock
) -> None:
    url = served.runtime.store.url
    crashed = Runtime(url, clock=clock, workflows=WORKFLOWS, owner="gone", lease_seconds=10)
    rt = Runtime(url, clock=clock, workflows=WORKFLOWS, owner="worker-2")
    try:
        port = free_port()
        metrics.serve(rt, port, store=True)
        lost = metrics.registry_for(crashed)
        taken = crashed.start("plain", tenant="t1")
        stale = crashed.claim_next()  # claimed, then its owner "freezes"
        assert stale is not None
        crashed.start("plain", tenant="t2")
        crashed.start("plain", tenant="t2")
        clock.advance(30)
        m = samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        assert value(m, "perdure_queue_depth") == 3  # the expired lease counts as claimable
        assert value(m, "perdure_oldest_runnable_age_seconds") == 30
        assert value(m, "perdure_runs", tenant="t2", workflow="plain", status="PENDING") == 2
        assert rt.run_until_idle() == 3
        m = samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)
        assert value(m, "perdure_lease_takeovers_total", workflow="plain") == 1
        assert value(m, "perdure_claims_total", workflow="plain") == 3
        assert value(m, "perdure_queue_depth") == 0
        assert rt.get(taken.run_id, tenant="t1").status == "SUCCEEDED"
        assert crashed.advance_claimed(stale).reason == "lost"  # it wakes up too late
        m = samples(generate_latest(lost).decode())
        assert value(m, "perdure_leases_lost_total", workflow="plain") == 1
    finally:
        rt.close()
        crashed.close()


def test_the_server_metrics_answer_in_openmetrics_when_asked_and_count_trouble_from_zero(
    served: Served,
) -> None:
    with served.client("admin") as c:
        plain = c.get("/metrics")
        negotiated = c.get(
            "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"}
        )
    assert plain.headers["content-type"].startswith("text/plain")
    assert negotiated.headers["content-type"].startswith("application/openmetrics-text")
    assert negotiated.text.rstrip().endswith("# EOF")
    m = samples(plain.text)
    assert ("perdure_runs_quarantined", frozenset({("tenant", "t1")})) in m
    assert ("perdure_effects_ambiguous", frozenset({("tenant", "t1")})) in m
    assert value(m, "perdure_effects_ambiguous", tenant="t1") == 0
