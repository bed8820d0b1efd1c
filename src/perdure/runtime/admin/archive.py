"""The cold tier: finished runs written to object storage before ``gc`` deletes them, and
brought back by ``restore``.

An archived run is one JSON Lines object, ``_archive/<tenant>/<thread>/<run id>.jsonl`` in the
artifact store (one :class:`~perdure.core.history.ArchivedRow` per line: the run, its steps,
state and history, events, effects, approvals, signals, savepoints, lineage, artifact references
and its own messages), and a copy of each artifact it refers to,
``_archive/<tenant>/<thread>/<run id>/<digest>``, so the archive stands alone once the database
rows and the shared objects are gone. Restoring puts the artifacts back (checked), writes the
rows back in one transaction, then removes the archive. Erasing a thread or a run erases its
archives too.
"""

from __future__ import annotations

from urllib.parse import quote, unquote

import orjson

from perdure.core.artifacts import ArtifactRef, verify
from perdure.core.errors import InvalidInputError, RunNotFoundError
from perdure.core.history import ArchivedRow
from perdure.core.model import Run
from perdure.core.serde import loads
from perdure.runtime.admin.parts import DEFAULT_TENANT, RuntimeParts, Tenant, tenant_of
from perdure.runtime.artifacts import Artifacts, object_key

PREFIX = "_archive"


def _folder(tenant_id: str) -> str:
    return f"{PREFIX}/{quote(tenant_id, safe='')}"


class Archive:
    """See the module docstring; the :class:`~perdure.runtime.runtime.Runtime` exposes
    :meth:`restore` and :meth:`archived`, and ``gc(archive=True)`` calls :meth:`archive`."""

    def __init__(self, parts: RuntimeParts, artifacts: Artifacts) -> None:
        self.parts = parts
        self.artifacts = artifacts

    def archive(self, tenant_id: str, run_id: str) -> str:
        """Write the run and copies of its artifacts to the archive; return the archive key.
        The database is not changed (``gc`` deletes the run afterwards)."""
        rows = self.parts.store.archive.export_run(tenant_id, run_id)
        objects = self.artifacts.objects
        thread = str(rows[0].row["thread_id"])
        base = f"{_folder(tenant_id)}/{quote(thread, safe='')}/{quote(run_id, safe='')}"
        for ref in _refs(rows):
            data = objects.get(object_key(tenant_id, ref.digest))
            if data is not None:
                objects.put(f"{base}/{ref.digest}", data)
        body = b"".join(orjson.dumps(r.to_json()) + b"\n" for r in rows)
        objects.put(f"{base}.jsonl", body)
        return f"{base}.jsonl"

    def archived(self, *, tenant: Tenant = DEFAULT_TENANT) -> list[str]:
        """Ids of the archived runs of a tenant."""
        return sorted(self._bases(tenant_of(tenant)))

    def _bases(self, tenant_id: str, thread: str | None = None) -> dict[str, str]:
        """Archived run id -> the archive's key without ``.jsonl`` (of one thread, or all)."""
        folder = _folder(tenant_id) + "/"
        if thread is not None:
            folder += quote(thread, safe="") + "/"
        found: dict[str, str] = {}
        for o in self.artifacts.objects.list(folder):
            parts = o.key[len(_folder(tenant_id)) + 1 :].split("/")
            if len(parts) == 2 and parts[1].endswith(".jsonl"):
                found[unquote(parts[1].removesuffix(".jsonl"))] = o.key.removesuffix(".jsonl")
        return found

    def erase(self, tenant_id: str, *, thread: str | None = None, run_id: str | None = None) -> int:
        """Delete the archives of a thread (or of one run) with their artifact copies; return
        how many objects went."""
        bases = self._bases(tenant_id, thread)
        if run_id is not None:
            bases = {k: v for k, v in bases.items() if k == run_id}
        objects = self.artifacts.objects
        gone = 0
        for base in bases.values():
            for o in list(objects.list(base + "/")):
                objects.delete(o.key)
                gone += 1
            objects.delete(base + ".jsonl")
            gone += 1
        return gone

    def restore(self, run_id: str, *, tenant: Tenant = DEFAULT_TENANT) -> Run:
        """Bring an archived run back into the database (its artifacts first), then delete
        the archive; return the run. :class:`~perdure.core.errors.RunNotFoundError` when no
        archive holds it."""
        tenant_id = tenant_of(tenant)
        objects = self.artifacts.objects
        base = self._bases(tenant_id).get(run_id, "")
        body = objects.get(f"{base}.jsonl") if base else None
        if body is None:
            raise RunNotFoundError(
                f"no archived run {run_id} in tenant {tenant_id}",
                fix="`perdure restore --list` shows the archived runs",
            )
        try:
            rows = [ArchivedRow.from_json(loads(line)) for line in body.splitlines() if line]
        except Exception as exc:
            raise InvalidInputError(f"the archive of run {run_id} is unreadable: {exc}") from exc
        copies: list[str] = []
        for ref in _refs(rows):
            key = f"{base}/{ref.digest}"
            data = objects.get(key)
            if data is None:
                continue  # the artifact was already missing when the run was archived
            verify(ref, data, f"archive of run {run_id}")
            objects.put(object_key(tenant_id, ref.digest), data)
            copies.append(key)
        run = self.parts.store.archive.import_run(tenant_id, rows, self.parts.clock.now())
        for key in [*copies, f"{base}.jsonl"]:
            objects.delete(key)
        return run


def _refs(rows: list[ArchivedRow]) -> list[ArtifactRef]:
    """The artifacts the archived rows point to (references and offloaded messages)."""
    found: dict[str, ArtifactRef] = {}
    for r in rows:
        if r.table == "artifacts":
            row = r.row
            ref = ArtifactRef(str(row["digest"]), int(row["size"]), str(row["media_type"]))
            found[ref.digest] = ref
        elif r.table == "messages" and r.row.get("content_artifact"):
            ref = ArtifactRef.from_json(loads(str(r.row["content_artifact"])))
            found[ref.digest] = ref
    return list(found.values())
