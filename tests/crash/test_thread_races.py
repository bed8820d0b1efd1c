"""Starts racing on one thread from several processes at once, under each policy, on each
backend: the store alone keeps one writer per thread (there is no memory to share)."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Barrier

import pytest

from perdure import Runtime, ThreadBusyError
from perdure.core.model import RunStatus
from perdure.core.threads import ThreadPolicy
from tests.apps.streams_app import turn

RACERS = 3


def race(db_url: str, policy: str, barrier: Barrier, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """One racer: open a runtime, wait for the others, start on the shared thread."""
    with Runtime(db_url, workflows=[turn]) as rt:
        barrier.wait(timeout=60)
        try:
            results.put(("created", rt.start(turn, thread="contested", policy=policy).run_id))
        except ThreadBusyError as exc:
            results.put(("rejected", exc.code))


@pytest.mark.parametrize("policy", [p.value for p in ThreadPolicy])
def test_starts_racing_from_processes_follow_the_threads_policy(db_url: str, policy: str) -> None:
    with Runtime(db_url, workflows=[turn]):  # migrated before the race
        pass
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(RACERS)
    results: multiprocessing.Queue = spawn.Queue()  # type: ignore[type-arg]
    racers = [
        spawn.Process(target=race, args=(db_url, policy, barrier, results)) for _ in range(RACERS)
    ]
    for p in racers:
        p.start()
    outcomes = [results.get(timeout=120) for _ in racers]
    for p in racers:
        p.join(timeout=60)
        assert p.exitcode == 0
    created = [value for kind, value in outcomes if kind == "created"]
    rejected = [value for kind, value in outcomes if kind == "rejected"]
    with Runtime(db_url, workflows=[turn]) as rt:
        info = rt.threads.get("contested")
        if policy == "reject":
            assert (len(created), rejected) == (1, ["thread_busy"] * (RACERS - 1))
            assert (info.active, info.queued) == (created[0], ())
        else:
            assert len(created) == RACERS and not rejected
        if policy == "enqueue":
            assert info.active in created and sorted([info.active, *info.queued]) == sorted(created)
        if policy == "interrupt":
            statuses = [rt.get(r).status for r in created]
            assert statuses.count(RunStatus.PENDING) == 1, "only the last start is left to run"
            assert statuses.count(RunStatus.CANCELLED) == RACERS - 1, "each start interrupted"
            assert info.queued == () and rt.get(info.active or "").status is RunStatus.PENDING
        rt.run_until_idle()
        ended = [rt.get(r) for r in created]
        assert all(r.status.terminal for r in ended)
        ran = sorted((r for r in ended if r.status is RunStatus.SUCCEEDED), key=lambda r: r.run_id)
        assert len(ran) == (1 if policy == "interrupt" else len(created))
