"""A process killed between an artifact's upload and the step boundary that records it: the
run holds no reference to the upload, the next claim runs the step again, and gc collects the
orphaned object once the run moved on (never before: the uploader might still commit)."""

from __future__ import annotations

import subprocess
from datetime import timedelta

import pytest

from perdure import Runtime
from perdure.core.history import ArtifactStatus, Retention
from perdure.core.model import RunStatus
from perdure.runtime.artifacts import object_key
from perdure.testing import FileClock
from tests.apps import artifacts_app as app
from tests.artifacts.conftest import S3_ENV, Objects, bucket, objects, s3_endpoint, s3_env
from tests.conftest import ROOT, cli_env, perdure_cmd

__all__ = ["bucket", "objects", "s3_endpoint", "s3_env"]  # fixtures used by this module

NOW = Retention(finished=timedelta(0), orphan_grace=timedelta(0))


def test_a_crash_after_the_upload_leaves_an_orphan_that_gc_collects_after_the_run_moves_on(
    db_url: str, objects: Objects, shared_clock: FileClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = Runtime(db_url, artifacts=objects.location)
    try:
        run = rt.start(app.report, {"label": "crash"})
        env = cli_env(
            PERDURE_CRASH_AT="after_upload:make",
            PERDURE_ARTIFACTS=objects.location,
            **S3_ENV,
        )
        done = subprocess.run(
            [*perdure_cmd(db_url, "worker", "--app", "tests.apps.artifacts_app", "--until-idle")],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 75, done.stderr
        assert "CRASH after_upload:make" in done.stderr
        crashed = rt.get(run.run_id)
        assert crashed.status is RunStatus.RUNNING and crashed.steps_done == 0
        assert rt.state_at(run.run_id, 0)["report"] is None, "no reference reached the run"
        [upload] = rt.store.artifacts.find("default", run_id=run.run_id)
        assert upload.status is ArtifactStatus.UPLOADED
        first = object_key("default", upload.ref.digest)
        assert first in objects.list()
        assert rt.gc(NOW).orphan_uploads == 0, "the uploader's fence still holds the run"
        assert first in objects.list()

        rt.register(app.report)
        env_suffix = "-second-try"
        monkeypatch.setenv("ARTIFACTS_APP_SUFFIX", env_suffix)  # the step uploads other bytes
        resumed = rt.resume(run.run_id)
        assert resumed.status is RunStatus.WAITING_EXTERNAL, resumed.error
        report = rt.gc(NOW)
        assert report.orphan_uploads == 1 and report.objects_deleted == 1
        assert first not in objects.list()
        [kept] = rt.store.artifacts.find("default", run_id=run.run_id)
        assert kept.status is ArtifactStatus.COMMITTED
        rt.signal(run.run_id, "go")
        rt.run_until_idle()
        result = rt.get(run.run_id).result
        assert result is not None and env_suffix in result["first"]
    finally:
        rt.close()
