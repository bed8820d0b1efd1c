"""Lazy fields (in the artifact store, read on first access) and derived fields (never stored,
rebuilt on resume), on each database and object store."""

from __future__ import annotations

import pytest

from perdure import Runtime
from perdure.core.artifacts import pointed
from perdure.core.fields import Lazy
from perdure.core.model import RunStatus
from perdure.runtime.artifacts import object_key
from tests.apps import artifacts_app as app
from tests.artifacts.conftest import Objects


def waiting(rt: Runtime, read_cache: bool = True) -> str:
    run = rt.start(app.rag, {"read_cache": read_cache})
    rt.run_until_idle()
    assert rt.get(run.run_id).status is RunStatus.WAITING_EXTERNAL
    return run.run_id


def test_a_lazy_field_is_stored_as_an_artifact_and_a_derived_field_is_not_stored(
    runtime: Runtime,
) -> None:
    run_id = waiting(runtime)
    stored = runtime.store.load_state("default", run_id)
    assert "index" not in stored, "a derived field is never stored"
    ref = pointed(stored["cache"])
    assert ref is not None, "a lazy field is an artifact, however small"
    runtime.signal(run_id, "go")
    runtime.run_until_idle()
    done = runtime.get(run_id)
    assert done.status is RunStatus.SUCCEEDED, done.error
    assert done.result == {"index": {"q": "WHY"}, "docs": 3}, "rebuilt from the stored question"
    changed = {c.field for c in runtime.history.entries(run_id)[2].changes}
    assert changed == set(), "reading a lazy field does not write it again"


def test_an_unread_lazy_field_is_never_fetched_and_a_read_one_is_checked(
    runtime: Runtime, objects: Objects
) -> None:
    unread, read = waiting(runtime, read_cache=False), waiting(runtime, read_cache=True)
    ref = pointed(runtime.store.load_state("default", read)["cache"])
    assert ref is not None
    objects.remove(object_key("default", ref.digest))  # both runs' caches are the same bytes
    for run_id in (unread, read):
        runtime.signal(run_id, "go")
    runtime.run_until_idle()
    assert runtime.get(unread).status is RunStatus.SUCCEEDED, "never read, so never missed"
    stopped = runtime.get(read)
    assert stopped.status is RunStatus.NEEDS_ATTENTION
    assert stopped.error is not None and stopped.error.reason == "artifact_missing"


def test_a_lazy_value_outside_a_step_says_how_to_read_it() -> None:
    from perdure.core.artifacts import ArtifactRef, digest_of
    from perdure.core.errors import InvalidInputError

    value: Lazy[int] = Lazy(ref=ArtifactRef(digest_of(b"1"), 1))
    with pytest.raises(InvalidInputError, match="not bound"):
        _ = value.value
    assert Lazy().value is None and not Lazy().loaded
