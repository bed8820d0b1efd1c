"""``perdure drills`` and ``perdure chaos --approve-as`` on the repository's own workflows: one
test per kind of drill outcome (held, not applicable, did not hold), in real processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from perdure.core.errors import ConfigError
from perdure.drills import DRILLS, run_drills
from perdure.testing import run_matrix
from tests.conftest import run_cli


def test_every_drill_holds_or_does_not_apply_on_a_workflow_with_two_effects(
    tmp_path: Path,
) -> None:
    # the drills make their own databases; --db is not used
    unused = f"sqlite:///{tmp_path / 'unused.db'}"
    out = run_cli(unused, "drills", "tests.apps.effects_app:two_effects", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    table = out.stdout.splitlines()
    assert table[0].split()[:3] == ["DRILL", "WHAT", "HAPPENED"]
    rows = {line[:48].strip(): line.rsplit(maxsplit=1)[-1] for line in table[1:11]}
    assert list(rows) == [title for _, title, _ in DRILLS]
    assert rows["artifact corrupted or lost"] == "n/a"
    assert rows["approval after hours"] == "n/a", "the workflow never waits for an approval"
    assert {v for k, v in rows.items() if "artifact" not in k and "approval" not in k} == {"yes"}
    assert "not applicable: the run stores no artifact" in out.stdout
    assert "10 drills, 8 applied, 0 did not hold" in out.stdout


def test_the_artifact_drill_corrupts_and_loses_a_runs_artifacts_and_the_run_asks_a_person(
    tmp_path: Path,
) -> None:
    (result,) = run_drills("tests.apps.artifacts_app", "big", workdir=tmp_path, only=("artifact",))
    assert result.held is True, result.happened
    assert "corrupted after step fill; handed to a person: artifact_corrupt" in result.happened
    assert "deleted after step fill; handed to a person: artifact_missing" in result.happened


def test_a_reconciler_that_does_not_look_fails_the_crash_drill(tmp_path: Path) -> None:
    results = run_drills("tests.apps.drills_app", "careless", workdir=tmp_path, only=("crash",))
    assert [(r.drill, r.held) for r in results] == [
        ("crash after a tool succeeded, before the write", False)
    ]
    # the effect's attempts cannot show it (the lying reconcile said the first never happened);
    # the business result does: the light moved twice
    assert "the reference with" in results[0].happened, results[0].happened


def test_the_approval_drill_needs_a_role_and_passes_with_one(tmp_path: Path) -> None:
    flow = ("perdure.demos.refund", "refund_review")
    without = run_drills(*flow, workdir=tmp_path / "without", only=("approval",))
    assert without[0].held is None and "--approve-as" in without[0].happened
    late = run_drills(
        *flow, workdir=tmp_path / "with", only=("approval",), approve_as="refund_manager"
    )
    assert late[0].held is True, late[0].happened
    assert "6 h later" in late[0].happened


def test_chaos_passes_approval_waits_with_approve_as(tmp_path: Path) -> None:
    rows = run_matrix(
        "perdure.demos.refund",
        "refund_review",
        workdir=tmp_path,
        approve_as="refund_manager",
        only=("after_call:refund",),
    )
    assert [r.point for r in rows] == ["reference", "after_call:refund"]
    assert rows[0].status == "SUCCEEDED", "the reference passed the approval"
    crashed = rows[1]
    assert crashed.reached and crashed.resumed_at == "execute_refund", crashed
    assert crashed.ok and crashed.calls["refund"] == 1


def test_an_unknown_drill_name_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no drill is named"):
        run_drills("tests.apps.effects_app", "two_effects", workdir=tmp_path, only=("nope",))


def test_the_database_drill_on_postgresql_ends_every_connection_and_the_run_holds(
    tmp_path: Path, pg_url: str
) -> None:
    results = run_drills(
        "tests.apps.effects_app", "two_effects", workdir=tmp_path, only=("database",), pg=pg_url
    )
    assert results[0].held is True, results[0].happened
    ended = int(results[0].happened.split("PostgreSQL: ")[1].split()[0])
    assert ended >= 1, results[0].happened
