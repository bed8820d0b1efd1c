"""Rebuildable cache fields (``cache(rebuild=fn)``) on each database and object store: written
only when set, never encoded or rewritten at a boundary that did not set them, read lazily, and
rebuilt (with a ``cache_rebuilt`` event, never an error) when the stored value is missing,
corrupted or was never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from perdure import Lazy, Runtime, cache
from perdure.core.artifacts import pointed
from perdure.core.errors import InvalidInputError
from perdure.core.model import RunStatus
from perdure.runtime.artifacts import object_key
from tests.apps.cache_app import TURNS, Rag, rag, retrieve
from tests.artifacts.conftest import Objects


def waiting(rt: Runtime, log: Path, **fields: object) -> str:
    run = rt.start(rag, Rag(log=str(log), wait=True, **fields))  # type: ignore[arg-type]
    rt.run_until_idle()
    assert rt.get(run.run_id).status is RunStatus.WAITING_EXTERNAL
    return run.run_id


def finish(rt: Runtime, run_id: str) -> None:
    rt.signal(run_id, "go")
    rt.run_until_idle()
    done = rt.get(run_id)
    assert done.status is RunStatus.SUCCEEDED, done.error
    assert done.result == {"turns": TURNS, "seen": 20 * TURNS}


def rebuilt(rt: Runtime, run_id: str) -> list[dict[str, object]]:
    return [
        e.data  # type: ignore[misc]
        for e in rt.store.events("default", run_id, limit=1000)
        if e.type == "cache_rebuilt"
    ]


def docs_written(rt: Runtime, run_id: str) -> list[str | None]:
    """The steps whose boundary wrote the cache field."""
    steps = rt.history.entries(run_id)[1:]  # 0 is the start
    return [h.step for h in steps if any(c.field == "docs" for c in h.changes)]


def test_a_cache_is_stored_once_when_set_and_never_rewritten_by_steps_that_read_it(
    runtime: Runtime, tmp_path: Path
) -> None:
    run_id = waiting(runtime, tmp_path / "log")
    ref = pointed(runtime.store.load_state("default", run_id)["docs"])
    assert ref is not None, "a cache field lives in the artifact store"
    finish(runtime, run_id)
    assert docs_written(runtime, run_id) == ["fetch"]
    assert rebuilt(runtime, run_id) == []
    assert not (tmp_path / "log").exists(), "a readable cache is never rebuilt"


@pytest.mark.parametrize("damage", ["artifact_missing", "artifact_corrupt"])
def test_a_damaged_cache_is_rebuilt_once_recorded_and_stored_again(
    runtime: Runtime, objects: Objects, tmp_path: Path, damage: str
) -> None:
    run_id = waiting(runtime, tmp_path / "log")
    ref = pointed(runtime.store.load_state("default", run_id)["docs"])
    assert ref is not None
    key = object_key("default", ref.digest)
    if damage == "artifact_missing":
        objects.remove(key)
    else:
        objects.write(key, b'{"docs": "tampered"}')
    finish(runtime, run_id)
    events = rebuilt(runtime, run_id)
    assert events == [{"field": "docs", "reason": damage, "step": "answer", "step_seq": 2}]
    assert (tmp_path / "log").read_text() == "rebuilt why\n", "rebuilt once, then kept"
    assert docs_written(runtime, run_id) == ["fetch", "answer"], "the rebuilt value is stored"
    assert key in objects.list(), "the rebuilt value's bytes are in the store again"


def test_a_cache_never_set_is_built_on_first_read(runtime: Runtime, tmp_path: Path) -> None:
    run_id = waiting(runtime, tmp_path / "log", fill=False)
    assert runtime.store.load_state("default", run_id)["docs"] == b"null"
    finish(runtime, run_id)
    assert [e["reason"] for e in rebuilt(runtime, run_id)] == ["absent"]
    assert docs_written(runtime, run_id) == ["answer"]


def test_a_cache_outside_a_step_says_how_to_read_it() -> None:
    from perdure.core.artifacts import ArtifactRef, digest_of

    with pytest.raises(InvalidInputError, match="not bound to an artifact store"):
        _ = Lazy(ref=ArtifactRef(digest_of(b"{}"), 2), rebuild=lambda s: {}).value
    with pytest.raises(InvalidInputError, match="takes the function"):
        cache(rebuild=None)  # type: ignore[arg-type]


def test_a_cache_not_set_since_it_was_read_is_stored_as_its_pointer() -> None:
    from perdure.core.artifacts import ArtifactRef, digest_of, pointer
    from perdure.core.serde import dumps

    value = retrieve("why")
    ref = ArtifactRef(digest_of(dumps(value)), len(dumps(value)))
    field: Lazy[dict[str, object]] = Lazy(ref=ref, rebuild=lambda s: {})
    field.bind(lambda _ref: value, owner=object(), name="docs")
    assert field.value == value
    assert field.kept() == pointer(ref), "read, not set: nothing to encode"
    field.set({"docs": []})
    assert field.kept() is None, "set: encoded at the next boundary"
    field.keep(b'{"docs":[]}')
    assert field.kept() == b'{"docs":[]}'
