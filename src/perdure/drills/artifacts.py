"""The artifact drill: an artifact the run stored is corrupted, another time lost, before the
run reads it again.

The run is killed (``os._exit``) right after the commit of the first step that stored an
artifact; every object the run holds is then overwritten with other bytes of the same size
(or deleted), and the run is resumed in a new process. It holds when the run stops in
NEEDS_ATTENTION with ``artifact_corrupt`` / ``artifact_missing`` (never a wrong value handed
on, never a crash), or, when it never reads those bytes again, ends as the reference did.
"""

from __future__ import annotations

from perdure.core.history import ArtifactRecord, ArtifactStatus
from perdure.drills.base import Drills
from perdure.runtime.artifacts import object_key
from perdure.store.objects import open_objects
from perdure.store.url import open_store
from perdure.testing import _Row

TENANT = "default"


def committed(db: str, run_id: str) -> list[ArtifactRecord]:
    """The artifacts a run's committed steps hold, oldest first."""
    store = open_store(db)
    try:
        found = store.artifacts.find(TENANT, run_id=run_id)
    finally:
        store.close()
    return [a for a in found if a.status is ArtifactStatus.COMMITTED and a.step]


def damage(row: _Row, how: str) -> int:
    """Corrupt (``corrupt``) or delete (``lose``) every object the row's run holds; how many."""
    objects = open_objects(None, row.db)
    records = committed(row.db, row.run_id)
    for record in records:
        key = object_key(TENANT, record.ref.digest)
        if how == "lose":
            objects.delete(key)
        else:
            body = objects.get(key) or b""
            objects.put(key, bytes(b ^ 0xFF for b in body) or b"\x00")
    return len(records)


def artifact_damaged(self: Drills) -> tuple[str, bool | None]:
    """See the module docstring: one row corrupts, one row loses, each judged on its own."""
    stored = committed(self.ref_row.db, self.ref_row.run_id)
    if not stored:
        return "not applicable: the run stores no artifact", None
    step = stored[0].step
    texts, held = [], True
    for how, reason in (("corrupt", "artifact_corrupt"), ("lose", "artifact_missing")):
        row = self.row(f"artifact-{how}")
        if not self.inject(row, crash=f"after_commit:{step}"):
            return f"not run: the run never committed step {step}", None
        hit = damage(row, how)
        seen, _ = row.settle(self.approve_as)
        verb = "corrupted" if how == "corrupt" else "deleted"
        what = f"{hit} artifact(s) {verb} after step {step}"
        if seen.status == "NEEDS_ATTENTION" and seen.error == reason:
            text = f"{what}; handed to a person: {reason} ({self.calls(seen)})"
            ok = not self.duplicated(seen)
        else:
            text, ok = self.judge(row, seen, f"{what}; never read again")
            ok = ok and self.matches(row, seen)
        texts.append(text)
        held = held and ok
    return "; ".join(texts), held
