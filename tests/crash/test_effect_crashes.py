"""Crash windows around effects, with real processes and external systems that apply every
call they receive (no deduplication)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perdure.demos.light import SmartLight
from perdure.testing import FileClock, run_matrix
from tests.conftest import ROOT, cli_env, run_cli

APP = "tests.apps.effects_app"
POINTS = [
    "before_intent",
    "after_intent",
    "after_call",
    "after_outcome",
    "before_commit",
    "after_commit",
]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_the_crash_matrix_never_duplicates_an_effect(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    rows = run_matrix(
        APP, "two_effects", {"a": "a.db", "b": "b.db"}, durability=mode, workdir=tmp_path
    )
    reference, crashes = rows[0], rows[1:]
    assert reference.status == "SUCCEEDED"
    assert len(crashes) == 4 * 2 + 2 * 3, "four points per effect, two per step"
    for row in crashes:
        assert row.reached, row.point
        assert not row.duplicate, row.point
    by_point = {r.point: r for r in crashes}
    assert by_point["after_call:notify"].status == "NEEDS_ATTENTION", (
        "no reconciler: an unknown outcome goes to a person, never resent"
    )
    for point, row in by_point.items():
        if point != "after_call:notify":
            assert row.matches, point
    for folder in sorted(tmp_path.glob("row-*")):
        assert SmartLight(folder / "a.db").status()["commands"] == 1, folder.name
        assert SmartLight(folder / "b.db", initial=0).status()["commands"] == 1, folder.name


@pytest.mark.parametrize("point", POINTS)
def test_the_brightness_contract_holds_at_every_crash_point(db_url: str, point: str) -> None:
    crashed = run_cli(db_url, "demo", "brightness", "start", "--crash-at", point)
    assert crashed.returncode == 75, crashed.stderr
    assert f"CRASH {point}" in crashed.stderr
    resumed = run_cli(db_url, "demo", "brightness", "resume")
    assert resumed.returncode == 0, resumed.stderr
    status = json.loads(run_cli(db_url, "demo", "brightness", "status", "--json").stdout)
    assert status["status"] == "SUCCEEDED"
    assert (status["brightness"], status["commands_applied"]) == (70, 1)
    again = run_cli(db_url, "demo", "brightness", "resume")
    assert "nothing to resume" in again.stdout
    assert (
        json.loads(run_cli(db_url, "demo", "brightness", "status", "--json").stdout)[
            "commands_applied"
        ]
        == 1
    )


def test_an_ambiguous_effect_is_resolved_by_a_person_through_the_cli(
    db_url: str, tmp_path: Path
) -> None:
    start = run_cli(
        db_url,
        "start",
        "two_effects",
        "--app",
        APP,
        "--input",
        json.dumps({"a": str(tmp_path / "a.db"), "b": str(tmp_path / "b.db")}),
    )
    run_id = start.stdout.split()[1]
    crashed = run_cli(
        db_url, "resume", run_id, "--app", APP, env=cli_env(PERDURE_CRASH_AT="after_call:notify")
    )
    assert crashed.returncode == 75
    assert run_cli(db_url, "resume", run_id, "--app", APP).returncode == 3, (
        "exit code 3: the run needs a person"
    )
    shown = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert shown["status"] == "NEEDS_ATTENTION"
    assert shown["error"]["reason"] == "ambiguous_effect"

    listed = json.loads(run_cli(db_url, "effects", "--status", "ambiguous", "--json").stdout)
    assert [e["name"] for e in listed] == ["notify"]
    key = listed[0]["key"]
    refused = run_cli(db_url, "effects", "resolve", key, "--as", "ops", "--reason", "x")
    assert refused.returncode == 1 and "--confirmed or --not-applied" in refused.stderr
    ok = run_cli(
        db_url,
        "effects",
        "resolve",
        key,
        "--confirmed",
        "--receipt",
        "cmd-1",
        "--as",
        "ops-alice",
        "--reason",
        "light B shows the command",
    )
    assert ok.returncode == 0, ok.stderr
    assert run_cli(db_url, "resume", run_id, "--app", APP).returncode == 0
    final = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert final["status"] == "SUCCEEDED"
    assert SmartLight(tmp_path / "b.db", initial=0).status()["commands"] == 1
    (effect,) = json.loads(
        run_cli(db_url, "effects", "--run", run_id, "--status", "confirmed", "--json").stdout
    )[1:]
    assert effect["resolution"]["by"] == "ops-alice"


@pytest.mark.parametrize(
    "point", ["after_call:reserve.compensate", "after_outcome:reserve.compensate"]
)
def test_compensation_is_crash_safe(db_url: str, tmp_path: Path, point: str) -> None:
    light = tmp_path / "a.db"
    start = run_cli(db_url, "start", "saga", "--app", APP, "--input", json.dumps({"a": str(light)}))
    run_id = start.stdout.split()[1]
    crashed = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(PERDURE_CRASH_AT=point))
    assert crashed.returncode == 75
    assert run_cli(db_url, "resume", run_id, "--app", APP).returncode == 1, (
        "exit code 1: the run ended FAILED"
    )
    final = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert final["status"] == "FAILED"
    status = SmartLight(light).status()
    assert status["commands"] == 2, "one reservation, one compensation, never a second"
    assert status["brightness"] == 80
    effects = {
        e["name"]: e["status"]
        for e in json.loads(run_cli(db_url, "effects", "--run", run_id, "--json").stdout)
    }
    if point.startswith("after_outcome"):
        assert effects["reserve"] == "compensated"
    else:
        assert effects["reserve.compensate"] == "ambiguous", "unknown outcome: flagged, not resent"
        assert final["error"]["unresolved_compensations"]


def test_a_retry_wait_survives_the_process_and_a_worker_finishes_it(
    db_url: str, tmp_path: Path, shared_clock: FileClock
) -> None:
    light = tmp_path / "a.db"
    start = run_cli(
        db_url, "start", "flaky", "--app", APP, "--input", json.dumps({"a": str(light)})
    )
    run_id = start.stdout.split()[1]
    first = run_cli(db_url, "resume", run_id, "--app", APP, env=cli_env(RETRY_AFTER="60"))
    assert first.returncode == 0
    waiting = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert (waiting["status"], waiting["owner"]) == ("RUNNING", None)
    shared_clock.advance(59)
    early = run_cli(db_url, "resume", run_id, "--app", APP)
    assert early.returncode == 1 and "waits to retry" in early.stderr
    idle = run_cli(db_url, "worker", "--app", APP, "--until-idle")
    assert idle.returncode == 0, idle.stderr
    assert json.loads(run_cli(db_url, "show", run_id, "--json").stdout)["status"] == "RUNNING"
    shared_clock.advance(1)
    worker = run_cli(db_url, "worker", "--app", APP, "--until-idle")
    assert worker.returncode == 0, worker.stderr
    final = json.loads(run_cli(db_url, "show", run_id, "--json").stdout)
    assert final["status"] == "SUCCEEDED"
    assert SmartLight(light).status() == {"brightness": 70, "commands": 1}


def _effects(db_url: str, run_id: str) -> dict[str, dict[str, Any]]:
    listed = json.loads(run_cli(db_url, "effects", "--run", run_id, "--json").stdout)
    return {e["name"]: e for e in listed}


def _started(db_url: str, tmp_path: Path) -> tuple[str, Path, Path]:
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    start = run_cli(
        db_url,
        "start",
        "two_effects",
        "--app",
        APP,
        "--input",
        json.dumps({"a": str(a), "b": str(b)}),
    )
    return start.stdout.split()[1], a, b


def _killed_after_intent(db_url: str, run_id: str, effect: str) -> dict[str, Any]:
    """Resume the run with a crash right after ``effect``'s intent; its record then."""
    crash = cli_env(PERDURE_CRASH_AT=f"after_intent:{effect}")
    crashed = run_cli(db_url, "resume", run_id, "--app", APP, env=crash)
    assert crashed.returncode == 75, crashed.stderr
    found: dict[str, Any] = _effects(db_url, run_id)[effect]
    return found


def _resumed_to_the_end(db_url: str, run_id: str) -> None:
    assert run_cli(db_url, "resume", run_id, "--app", APP).returncode == 0
    assert json.loads(run_cli(db_url, "show", run_id, "--json").stdout)["status"] == "SUCCEEDED"


def test_a_kill_between_a_reconciled_intent_and_its_call_is_reconciled_then_sent_once(
    db_url: str, tmp_path: Path
) -> None:
    run_id, a, b = _started(db_url, tmp_path)
    dim = _killed_after_intent(db_url, run_id, "dim")
    assert (dim["status"], dim["attempts"]) == ("executing", 1), (
        "with a reconciler, the intent is the first attempt under way: one write before the call"
    )
    assert SmartLight(a).status()["commands"] == 0, "the call was never made"
    _resumed_to_the_end(db_url, run_id)
    dim = _effects(db_url, run_id)["dim"]
    assert (dim["status"], dim["attempts"]) == ("confirmed", 1), (
        "the reconciler found nothing: the interrupted attempt is not counted, the call is made"
    )
    assert SmartLight(a).status()["commands"] == 1
    assert SmartLight(b, initial=0).status()["commands"] == 1


def test_a_kill_between_an_unreconciled_intent_and_its_call_sends_it_again(
    db_url: str, tmp_path: Path
) -> None:
    run_id, _, b = _started(db_url, tmp_path)
    notify = _killed_after_intent(db_url, run_id, "notify")
    assert (notify["status"], notify["attempts"]) == ("planned", 0), (
        "without a reconciler, the intent says that nothing was sent"
    )
    _resumed_to_the_end(db_url, run_id)
    assert SmartLight(b, initial=0).status()["commands"] == 1
