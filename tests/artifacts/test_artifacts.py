"""Artifacts on each database and each object store: upload first, verified reads, typed
stops for missing or corrupt bytes, automatic offload of big state and messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from perdure import FakeClock, Runtime
from perdure.core.artifacts import ArtifactRef, digest_of, pointed
from perdure.core.history import ArtifactStatus
from perdure.core.model import RunStatus
from perdure.runtime.artifacts import object_key
from tests.apps import artifacts_app as app
from tests.artifacts.conftest import Objects


def started(rt: Runtime, label: str) -> str:
    run = rt.start(app.report, {"label": label})
    rt.run_until_idle()
    return run.run_id


def test_a_step_uploads_an_artifact_that_a_later_step_reads_back(
    runtime: Runtime, objects: Objects
) -> None:
    run_id = started(runtime, "a")
    run = runtime.get(run_id)
    assert run.status is RunStatus.WAITING_EXTERNAL
    [record] = runtime.store.artifacts.find("default", run_id=run_id)
    assert record.status is ArtifactStatus.COMMITTED, "the reference is committed at the boundary"
    assert (record.step, record.step_seq, record.ref.media_type) == ("make", 1, "text/plain")
    assert object_key("default", record.ref.digest) in objects.list()
    state = runtime.state_at(run_id, 1)
    assert state["report"] == record.ref.to_json()
    assert runtime.history(run_id)[1].artifacts == (record.ref.uri,)
    runtime.signal(run_id, "go")
    runtime.run_until_idle()
    done = runtime.get(run_id)
    assert done.status is RunStatus.SUCCEEDED
    assert done.result == {"size": record.ref.size, "first": ("report of a\n" * 4)[:40]}


def test_the_same_bytes_are_stored_once_per_tenant(runtime: Runtime, objects: Objects) -> None:
    a, b = started(runtime, "same"), started(runtime, "same")
    refs = [runtime.store.artifacts.find("default", run_id=r)[0].ref for r in (a, b)]
    assert refs[0] == refs[1]
    assert len(objects.list()) == 1


def test_a_corrupt_artifact_and_a_missing_one_stop_their_runs_with_evidence_while_others_finish(
    runtime: Runtime, objects: Objects
) -> None:
    corrupt, missing, fine = (started(runtime, n) for n in ("corrupt", "missing", "fine"))
    ref_of = {
        r: runtime.store.artifacts.find("default", run_id=r)[0].ref for r in (corrupt, missing)
    }
    objects.write(object_key("default", ref_of[corrupt].digest), b"tampered bytes")
    objects.remove(object_key("default", ref_of[missing].digest))
    for r in (corrupt, missing, fine):
        runtime.signal(r, "go")
    assert runtime.run_until_idle() == 3, "the worker goes on after each stopped run"
    assert runtime.get(fine).status is RunStatus.SUCCEEDED
    bad = runtime.get(corrupt)
    assert bad.status is RunStatus.NEEDS_ATTENTION
    assert bad.error is not None and bad.error.reason == "artifact_corrupt"
    assert bad.error.evidence["expected_sha256"] == ref_of[corrupt].digest
    assert bad.error.evidence["found_sha256"] == digest_of(b"tampered bytes")
    assert bad.error.evidence["found_size"] == len(b"tampered bytes")
    assert "restore" in (bad.error.suggested_action or "")
    gone = runtime.get(missing)
    assert gone.status is RunStatus.NEEDS_ATTENTION
    assert gone.error is not None and gone.error.reason == "artifact_missing"
    assert gone.error.evidence["artifact"] == ref_of[missing].uri
    # put the right bytes back: the run resumes from its checkpoint and finishes
    body = ("report of missing\n" * 2000).encode()
    objects.write(object_key("default", ref_of[missing].digest), body)
    assert runtime.resume(missing, by="ops").status is RunStatus.SUCCEEDED


def test_a_two_megabyte_state_and_a_five_megabyte_tool_output_just_work(
    runtime: Runtime, objects: Objects
) -> None:
    run = runtime.start(app.big)
    runtime.run_until_idle()
    done = runtime.get(run.run_id)
    assert done.status is RunStatus.SUCCEEDED, done.error
    assert done.result == {"blob": app.BIG_STATE, "tool": app.BIG_MESSAGE}
    stored = runtime.store.load_state("default", run.run_id)
    assert len(stored["blob"]) < 300, "the row holds a pointer, not 2 MB"
    [tool] = [m for m in runtime.store.messages("default", run.thread_id) if m.role == "tool"]
    assert tool.content == "" and tool.artifact is not None
    assert tool.artifact.size == app.BIG_MESSAGE
    view = runtime.status(run.run_id)
    assert len(next(m for m in view.messages if m.role == "tool").content) == app.BIG_MESSAGE
    assert runtime.state_at(run.run_id, 1)["blob"] == "x" * app.BIG_STATE
    kinds = sorted(
        a.ref.media_type for a in runtime.store.artifacts.find("default", run_id=run.run_id)
    )
    assert kinds == ["application/json", "text/plain; charset=utf-8"]


def test_an_offloaded_state_field_that_went_missing_needs_a_person_on_resume(
    runtime: Runtime, objects: Objects, clock: FakeClock
) -> None:
    run = runtime.start(app.report, {"label": "x" * 100_000})
    runtime.run_until_idle()
    stored = runtime.store.load_state("default", run.run_id)
    ref = pointed(stored["label"])
    assert ref is not None
    objects.remove(object_key("default", ref.digest))
    runtime.signal(run.run_id, "go")
    runtime.run_until_idle()
    stopped = runtime.get(run.run_id)
    assert stopped.status is RunStatus.NEEDS_ATTENTION
    assert stopped.error is not None and stopped.error.reason == "artifact_missing"
    assert stopped.error.evidence["where"] == "state field label"


def test_put_artifact_streams_a_file_and_refuses_text(runtime: Runtime, tmp_path: Path) -> None:
    path = tmp_path / "in.bin"
    path.write_bytes(b"\x00\x01" * 5000)
    run = runtime.start(app.report)
    claimed = runtime.claim_next()
    assert claimed is not None
    from perdure.runtime.artifacts import Writer

    who = Writer("default", run.run_id, "make", 1, claimed.fence)
    ref, _ = runtime.artifacts.put(who, path, "application/octet-stream")
    assert ref == ArtifactRef(digest_of(path.read_bytes()), 10_000, "application/octet-stream")
    assert runtime.get_artifact(ref) == path.read_bytes()
    from perdure.core.errors import InvalidInputError

    with pytest.raises(InvalidInputError):
        runtime.artifacts.put(who, "text", "text/plain")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        runtime.artifacts.put(who, b"x", "not a media type")


def test_async_steps_put_and_get_artifacts_off_the_event_loop(runtime: Runtime) -> None:
    run = runtime.start(app.areport, {"label": "a1"})
    runtime.run_until_idle()
    done = runtime.get(run.run_id)
    assert done.status is RunStatus.SUCCEEDED, done.error
    assert done.result == {"text": "async a1"}


def test_an_artifact_that_became_a_directory_stops_its_run_as_corrupt(
    db_url: str, tmp_path: Path, clock: FakeClock
) -> None:
    store = tmp_path / "objects"
    with Runtime(db_url, clock=clock, artifacts=str(store)) as rt:
        run_id = started(rt, "dir")
        [record] = rt.store.artifacts.find("default", run_id=run_id)
        where = store / object_key("default", record.ref.digest)
        where.unlink()
        where.mkdir()
        rt.signal(run_id, "go")
        assert rt.run_until_idle() == 1, "one attempt, not a retry every lease period"
        run = rt.get(run_id)
        assert run.status is RunStatus.NEEDS_ATTENTION
        assert run.error is not None and run.error.reason == "artifact_corrupt"
        assert run.error.evidence["key"] == object_key("default", record.ref.digest)
        assert "cannot be read" in str(run.error.evidence["found"])


def test_an_artifact_store_that_keeps_failing_hands_the_run_to_a_person_after_bounded_tries(
    db_url: str, tmp_path: Path, clock: FakeClock
) -> None:
    store = tmp_path / "objects"
    store.mkdir()
    with Runtime(db_url, clock=clock, artifacts=str(store)) as rt:
        store.rmdir()
        store.write_text("not a directory any more")
        run = rt.start(app.report, {"label": "broken"})
        for _ in range(10):
            rt.run_until_idle()
            clock.advance(60)
        stopped = rt.get(run.run_id)
        assert stopped.status is RunStatus.NEEDS_ATTENTION
        assert stopped.error is not None and stopped.error.reason == "object_store_unavailable"
        assert stopped.error.evidence["attempts"] == 5
        store.unlink()
        store.mkdir()
        assert rt.resume(run.run_id, by="ops").status is RunStatus.WAITING_EXTERNAL
