"""The Runtime's part for data that must not grow forever: garbage collection under
retention settings, and erasing a conversation or a run on request.

``gc`` works in small transactions (``Retention.batch`` runs at a time), so workers keep
committing while it runs, and never touches what a live run needs: only finished runs past
their retention (and without a live savepoint) are deleted; messages of a thread that still
has a live run are kept; an artifact object is deleted only when no reference and no message
of its tenant points to it any more. Objects are deleted after the rows that referenced them:
a crash in between leaves an object nothing points to, which the next ``gc`` removes.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from perdure.core.errors import RunNotFoundError
from perdure.core.history import Erasure, GcReport, Removed, Retention
from perdure.core.ids import checked_id
from perdure.runtime.admin.archive import Archive
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.artifacts import Artifacts, object_key, parse_key


class Retainer:
    """See the module docstring; the :class:`~perdure.runtime.runtime.Runtime` exposes its
    methods."""

    def __init__(self, parts: RuntimeParts, artifacts: Artifacts) -> None:
        self.parts = parts
        self.artifacts = artifacts
        self.cold = Archive(parts, artifacts)

    def gc(
        self, retention: Retention | None = None, *, objects: bool = True, archive: bool = False
    ) -> GcReport:
        """Delete what expired under ``retention`` (default :class:`Retention`: finished runs
        after 30 days), then expired memory items (``rows["memory"]``), then orphaned artifact
        uploads, then (with ``objects``) artifact objects nothing references that are older
        than ``retention.orphan_grace``. With
        ``archive``, each expired run is first written to the archive (see
        :mod:`perdure.runtime.admin.archive`), from where ``restore`` brings it back."""
        policy = retention or Retention()
        now = self.parts.clock.now()
        removed = Removed({})
        runs = 0
        overrides = list(policy.workflows)
        plans: list[tuple[str | None, list[str], timedelta | None]] = [
            (name, [], age) for name, age in policy.workflows.items()
        ]
        plans.append((None, overrides, policy.finished))
        for workflow, exclude, age in plans:
            if age is None:
                continue
            before = now - age
            while True:
                batch = self.parts.store.retention.expired_runs(
                    before, now, workflow=workflow, exclude=exclude, limit=policy.batch
                )
                if not batch:
                    break
                if archive:
                    for tenant_id, run_id in batch:
                        self.cold.archive(tenant_id, run_id)
                done = self.parts.store.retention.delete_runs(batch, now)
                runs += done.rows.get("runs", 0)
                removed = removed.plus(self._free(done))
                if not done.rows.get("runs"):
                    break  # nothing deletable left in this batch: never spin
        for part, age in (("events", policy.events), ("history", policy.history)):
            if age is None:
                continue
            pruned = 0
            while n := self.parts.store.retention.prune_finished(
                part, now - age, now, limit=policy.batch
            ):
                pruned += n
            if pruned:
                removed = removed.plus(Removed({part: pruned}))
        expired = 0
        while n := self.parts.store.memory.expire(now, limit=policy.batch):
            expired += n
        if expired:
            removed = removed.plus(Removed({"memory": expired}))
        orphans = 0
        while True:
            found = self.parts.store.artifacts.orphan_uploads(limit=policy.batch)
            if not found:
                break
            done = self.parts.store.artifacts.drop([a.id for a in found])
            orphans += len(found)
            removed = removed.plus(self._free(done))
        deleted = removed.rows.get("objects", 0)
        if objects:
            deleted += self._orphan_objects(now, policy)
        rows = {k: v for k, v in removed.rows.items() if k != "objects"}
        return GcReport(runs, rows, orphans, deleted)

    def delete_thread(
        self, thread: str, *, tenant: Tenant = DEFAULT_TENANT, by: str | None = None
    ) -> Erasure:
        """Erase a conversation completely: every run of the thread with its steps, state and
        history, events, effects, approvals, signals, savepoints and artifact references, all
        the thread's messages, the artifact objects nothing else points to, and the thread's
        archived runs (``gc --archive``). An erasure
        record (ids and counts, no content) says it happened. Refused
        (:class:`~perdure.core.errors.RunBusyError`) while a worker holds one of its runs."""
        tenant_id = tenant_of(tenant)
        checked_id(thread, "thread")
        now = self.parts.clock.now()
        who = by or self.parts.owner
        done = self.parts.store.retention.erase_thread(tenant_id, thread, by=who, now=now)
        gone = self._free(done).rows.get("objects", 0) + self.cold.erase(tenant_id, thread=thread)
        return Erasure(tenant_id, thread, None, done.rows, gone, who, now)

    def delete_run(
        self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT, by: str | None = None
    ) -> Erasure:
        """Erase one run like :meth:`delete_thread` erases each run of a thread (its own
        messages go with it; the thread's other runs and messages stay), and its archive. A run
        that is only archived (``gc --archive``) loses its archive; the erasure record is
        written for a run whose rows were in the database."""
        tenant_id = tenant_of(tenant)
        now = self.parts.clock.now()
        who = by or self.parts.owner
        try:
            done = self.parts.store.retention.erase_run(tenant_id, run_id, by=who, now=now)
        except RunNotFoundError:
            archived = self.cold.erase(tenant_id, run_id=run_id)
            if not archived:
                raise
            return Erasure(tenant_id, None, run_id, {}, archived, who, now)
        gone = self._free(done).rows.get("objects", 0) + self.cold.erase(tenant_id, run_id=run_id)
        return Erasure(tenant_id, None, run_id, done.rows, gone, who, now)

    def _free(self, done: Removed) -> Removed:
        """Delete the objects ``done`` freed; count them under ``objects``."""
        store = self.artifacts.objects if done.freed else None
        for tenant_id, digest in done.freed:
            if store is not None:
                store.delete(object_key(tenant_id, digest))
        return Removed({**done.rows, "objects": len(done.freed)})

    def _orphan_objects(self, now: datetime, policy: Retention) -> int:
        """Delete objects no row points to, written more than the grace period ago."""
        by_tenant: dict[str, dict[str, str]] = defaultdict(dict)
        grace = policy.orphan_grace
        for obj in self.artifacts.objects.list():
            parsed = parse_key(obj.key)
            if parsed is None:
                continue
            if grace.total_seconds() > 0 and obj.modified > now - grace:
                continue
            by_tenant[parsed[0]][parsed[1]] = obj.key
        deleted = 0
        for tenant_id, keys in by_tenant.items():
            digests = sorted(keys)
            for start in range(0, len(digests), policy.batch):
                chunk = digests[start : start + policy.batch]
                used = self.parts.store.artifacts.referenced(tenant_id, chunk)
                for digest in chunk:
                    if digest not in used:
                        self.artifacts.objects.delete(keys[digest])
                        deleted += 1
        return deleted
