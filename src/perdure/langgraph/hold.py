"""Who writes a LangGraph thread: holds (perdure's lease and fence on the thread's run) and
quarantine.

A hold is the claim of the thread's run: its fence travels in the invocation's config
(``configurable`` keys that start with ``__``, which LangGraph keeps out of checkpoint
metadata) to every ``put`` and ``put_writes``, where the store compares it with the run's
fence inside the write's transaction. A lease left by a process of this host that no longer
exists (SIGKILL) is taken over at once; any other lease only once it expires.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig

from perdure.core.errors import (
    GraphThreadBusyError,
    GraphThreadQuarantinedError,
    InvalidInputError,
    PerdureError,
    RunNotFoundError,
    StaleStateError,
)
from perdure.core.graph import GRAPH_WORKFLOW, GraphHold, graph_run_id
from perdure.core.ids import checked_id
from perdure.core.model import Run, RunStatus
from perdure.core.records import RunError
from perdure.core.transitions import allowed
from perdure.runtime.leases import Lease, is_dead_local_owner
from perdure.runtime.runtime import Runtime

FENCE_KEY = "__perdure_fence__"
"""The ``configurable`` key that carries a hold's fence."""
OWNER_KEY = "__perdure_owner__"
"""The ``configurable`` key that carries a hold's owner."""
LEASE_KEY = "__perdure_lease_seconds__"
"""The ``configurable`` key that carries how long each held write extends the lease."""


def where(config: RunnableConfig) -> tuple[str, str, str | None]:
    """The thread id, namespace and checkpoint id a config names."""
    conf = config.get("configurable") or {}
    thread = conf.get("thread_id")
    if thread is None or thread == "":
        raise InvalidInputError(
            "the config names no thread", fix='pass config={"configurable": {"thread_id": ...}}'
        )
    ns = str(conf.get("checkpoint_ns") or "")
    checkpoint_id = conf.get("checkpoint_id") or None
    return (
        checked_id(str(thread), "thread"),
        checked_id(ns, "checkpoint namespace") if ns else "",
        None if checkpoint_id is None else checked_id(str(checkpoint_id), "checkpoint id"),
    )


def held_by(config: RunnableConfig) -> GraphHold | None:
    """The hold a config carries (None: an unheld write)."""
    conf = config.get("configurable") or {}
    fence = conf.get(FENCE_KEY)
    if not isinstance(fence, int):
        return None
    owner = conf.get(OWNER_KEY)
    seconds = conf.get(LEASE_KEY)
    return GraphHold(
        fence,
        owner if isinstance(owner, str) else None,
        float(seconds) if isinstance(seconds, (int, float)) else 0.0,
    )


@dataclass(frozen=True, slots=True)
class Held:
    """One hold, to give back: the thread's run, its fence, the renewed lease."""

    thread_id: str
    run_id: str
    fence: int
    lease: Lease | None


class Holds:
    """Takes and gives back holds on threads of one tenant, and quarantines threads."""

    def __init__(self, runtime: Runtime, tenant: str, *, renew: bool) -> None:
        self.runtime = runtime
        self.store = runtime.store
        self.tenant = tenant
        self.renew = renew

    def take(self, config: RunnableConfig) -> tuple[RunnableConfig, Held]:
        """Claim the config's thread; return the config that carries the hold."""
        thread, _, _ = where(config)
        rt, run_id = self.runtime, graph_run_id(self.tenant, thread)
        now = rt.clock.now()
        self.store.graphs.open_thread(self.tenant, thread, now)
        run = self.store.get_run(self.tenant, run_id)
        if run.status is RunStatus.QUARANTINED:
            raise GraphThreadQuarantinedError(f"thread {thread} is quarantined; it cannot be held")
        dead = run.owner if is_dead_local_owner(run.owner) else None
        until = now + timedelta(seconds=rt.lease_seconds)
        claimed = self.store.claim(
            rt.owner,
            until,
            now,
            [GRAPH_WORKFLOW],
            tenant_id=self.tenant,
            run_id=run_id,
            dead_owner=dead,
        )
        if claimed is None:
            current = self.store.get_run(self.tenant, run_id)
            until_text = current.lease_until.isoformat() if current.lease_until else "-"
            raise GraphThreadBusyError(
                f"thread {thread} is held by another invocation ({current.owner}, fence "
                f"{current.fence}, lease until {until_text})"
            )
        lease = rt.heartbeat.hold(self.tenant, run_id, claimed.fence) if self.renew else None
        conf: dict[str, Any] = {
            **(config.get("configurable") or {}),
            FENCE_KEY: claimed.fence,
            OWNER_KEY: rt.owner,
            LEASE_KEY: rt.lease_seconds,
        }
        held: RunnableConfig = {**config, "configurable": conf}
        return held, Held(thread, run_id, claimed.fence, lease)

    def writer(self, config: RunnableConfig) -> tuple[Run, int]:
        """The config's thread's run (created if needed) and the fence a write of this
        invocation goes under: its hold's, or for an unheld invocation the thread's current
        fence — refused with :class:`GraphThreadBusyError` while another invocation holds the
        thread, as its checkpoints are."""
        thread, _, _ = where(config)
        run_id, now = graph_run_id(self.tenant, thread), self.runtime.clock.now()
        try:
            run = self.store.get_run(self.tenant, run_id)
        except RunNotFoundError:
            self.store.graphs.open_thread(self.tenant, thread, now)
            run = self.store.get_run(self.tenant, run_id)
        if run.status is RunStatus.QUARANTINED:
            raise GraphThreadQuarantinedError(f"thread {thread} is quarantined")
        hold = held_by(config)
        if hold is not None and hold.fence is not None:
            return run, hold.fence  # the store compares it with the run's on every write
        if run.owner is not None and run.lease_until is not None and run.lease_until >= now:
            raise GraphThreadBusyError(
                f"thread {thread} is held by another invocation ({run.owner}, fence "
                f"{run.fence}) until {run.lease_until.isoformat()}"
            )
        return run, run.fence

    def give_back(self, held: Held) -> None:
        """Stop renewing and release the lease (a no-op when it was taken over meanwhile)."""
        if held.lease is not None:
            self.runtime.heartbeat.drop(held.lease)
        self.store.release(
            self.tenant, held.run_id, self.runtime.owner, held.fence, self.runtime.clock.now()
        )

    def quarantine(self, thread: str, ns: str, checkpoint_id: str, exc: PerdureError) -> None:
        """Move the thread's run to QUARANTINED with the reason ``checkpoint_unreadable``."""
        run_id = graph_run_id(self.tenant, thread)
        error = RunError(
            reason="checkpoint_unreadable",
            message=exc.message,
            evidence={"checkpoint_ns": ns, "checkpoint_id": checkpoint_id},
            suggested_action=exc.fix,
        )
        for _ in range(3):
            run = self.store.get_run(self.tenant, run_id)
            if not allowed(run.status, RunStatus.QUARANTINED):
                return
            try:
                self.store.set_status(
                    self.tenant,
                    run_id,
                    expected_status=run.status,
                    expected_version=run.state_version,
                    status=RunStatus.QUARANTINED,
                    fence=None,
                    now=self.runtime.clock.now(),
                    data=error.to_json(),
                    release_lease=True,
                )
                return
            except StaleStateError:
                continue

    def reopen(self, thread: str) -> None:
        """Move a quarantined thread's run back to RUNNING (after its history was deleted)."""
        run_id = graph_run_id(self.tenant, thread)
        try:
            run = self.store.get_run(self.tenant, run_id)
        except RunNotFoundError:
            return
        if run.status is not RunStatus.QUARANTINED:
            return
        self.store.set_status(
            self.tenant,
            run_id,
            expected_status=RunStatus.QUARANTINED,
            expected_version=run.state_version,
            status=RunStatus.RUNNING,
            fence=None,
            now=self.runtime.clock.now(),
            data={"reason": "thread_deleted"},
        )
