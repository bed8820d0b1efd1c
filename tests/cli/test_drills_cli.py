"""``perdure drills`` and ``perdure chaos --approve-as`` on the repository's own workflows: one
test per kind of drill outcome (held, not applicable, did not hold), the effect drills on every
effect of an agent (model calls and a side-effecting tool, one step run twice), in real
processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdure.core.errors import ConfigError
from perdure.drills import DRILLS, run_drills
from perdure.runtime.runtime import Runtime
from perdure.testing import run_matrix
from tests.conftest import cli_env, run_cli

EFFECT_DRILLS = ("timeout", "crash", "unknown")
HELPDESK = ("think#1/model.1", "act/tool.call_1", "think#3/model.1")


def test_every_drill_holds_or_does_not_apply_on_a_workflow_with_two_effects(
    tmp_path: Path,
) -> None:
    # the drills make their own databases; --db is not used
    unused = f"sqlite:///{tmp_path / 'unused.db'}"
    out = run_cli(unused, "drills", "tests.apps.effects_app:two_effects", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    table = out.stdout.splitlines()
    assert table[0].split() == ["DRILL", "EFFECT", "HELD", "WHAT", "HAPPENED"]
    rows = [(line[:48].strip(), line[48:].split()[0], line[48:].split()[1]) for line in table[1:14]]
    titles = dict(DRILLS)
    assert [r[:2] for r in rows[:6]] == [
        (titles[short], effect)
        for short in EFFECT_DRILLS
        for effect in ("dim/dim", "notify/notify")
    ], "the effect drills run once per effect"
    assert [r[0] for r in rows[6:]] == [titles[s] for s, _ in DRILLS if s not in EFFECT_DRILLS]
    verdicts = {title: held for title, _, held in rows}
    assert verdicts["artifact corrupted or lost"] == "n/a"
    assert verdicts["approval after hours"] == "n/a", "the workflow never waits for an approval"
    assert {h for t, _, h in rows if "artifact" not in t and "approval" not in t} == {"yes"}
    assert "not applicable: the run stores no artifact" in out.stdout
    # notify has neither a reconciler nor a retry policy: a person, and the row says what helps
    assert "notify/notify timed out before it was sent; needs a person: timeout" in out.stdout
    assert "a reconcile= on the effect would have found it was never sent" in out.stdout
    assert "dim/dim timed out before it was sent; needs a person: timeout" in out.stdout
    assert "a retry= policy on the effect would have retried it" in out.stdout
    assert "13 drills, 11 applied, 0 did not hold" in out.stdout


def test_drills_json_lists_every_effect_of_an_agent_including_its_side_effecting_tool(
    tmp_path: Path,
) -> None:
    unused = f"sqlite:///{tmp_path / 'unused.db'}"
    out = run_cli(unused, "drills", "tests.apps.helpdesk_app:helpdesk", "--json", timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert all({"drill", "effect", "held", "what_happened"} <= set(r) for r in rows)
    aimed = [(r["drill"], r["effect"]) for r in rows if r["effect"] is not None]
    assert aimed == [(d, e) for d in EFFECT_DRILLS for e in HELPDESK]
    assert [r["drill"] for r in rows if r["effect"] is None] == [
        s for s, _ in DRILLS if s not in EFFECT_DRILLS
    ]
    by = {(r["drill"], r["effect"]): r for r in rows}
    assert all(r["held"] is not False for r in rows), rows
    crash = by["crash", "act/tool.call_1"]["what_happened"]
    assert "ended SUCCEEDED as the reference" in crash, "the tool's reconciler found the email"
    assert "tool.call_1 1x" in crash
    timeout = by["timeout", "act/tool.call_1"]["what_happened"]
    assert "needs a person: timeout (retries_exhausted)" in timeout
    assert "a retry= policy on the tool would have retried it" in timeout
    assert "ended SUCCEEDED as the reference" in by["timeout", "think#3/model.1"]["what_happened"]


def test_the_effect_drills_aim_only_at_the_effects_a_pattern_names(tmp_path: Path) -> None:
    results = run_drills(
        "tests.apps.helpdesk_app",
        "helpdesk",
        workdir=tmp_path,
        only=("crash",),
        effects=("*/model.*",),
    )
    assert [(r.short, r.effect, r.held) for r in results] == [
        ("crash", "think#1/model.1", True),
        ("crash", "think#3/model.1", True),
    ]
    assert "resumed at think" in results[1].happened
    with pytest.raises(ConfigError, match="names no effect of the reference run"):
        run_drills(
            "tests.apps.helpdesk_app",
            "helpdesk",
            workdir=tmp_path / "none",
            only=("crash",),
            effects=("nope/*",),
        )


def test_a_crash_point_can_name_one_occurrence_of_an_effect_whose_name_repeats(
    tmp_path: Path,
) -> None:
    db = f"sqlite:///{tmp_path / 'perdure.db'}"
    app = ("--app", "tests.apps.helpdesk_app")
    given = json.dumps({"outbox": str(tmp_path / "outbox.db")})
    started = run_cli(db, "start", "helpdesk", *app, "--input", given)
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.split()[1]
    crash = cli_env(PERDURE_CRASH_AT="after_call:model.1@think#3")
    out = run_cli(db, "resume", run_id, *app, env=crash)
    assert out.returncode == 75, out.stdout + out.stderr
    with Runtime(db, migrate=False) as rt:
        effects = rt.effects.list(run_id=run_id)
    assert [(e.step_seq, e.name, str(e.status)) for e in effects] == [
        (1, "model.1", "confirmed"),
        (2, "tool.call_1", "confirmed"),
        (3, "model.1", "executing"),
    ], "the first model.1 passed the point; the second one died there"


def test_the_artifact_drill_corrupts_and_loses_a_runs_artifacts_and_the_run_asks_a_person(
    tmp_path: Path,
) -> None:
    (result,) = run_drills("tests.apps.artifacts_app", "big", workdir=tmp_path, only=("artifact",))
    assert result.held is True, result.happened
    assert "corrupted after step fill; handed to a person: artifact_corrupt" in result.happened
    assert "deleted after step fill; handed to a person: artifact_missing" in result.happened


def test_a_reconciler_that_does_not_look_fails_the_crash_drill(tmp_path: Path) -> None:
    results = run_drills("tests.apps.drills_app", "careless", workdir=tmp_path, only=("crash",))
    assert [(r.short, r.effect, r.held) for r in results] == [("crash", "book/book", False)]
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


def test_a_fresh_provider_id_in_the_result_is_not_a_failed_drill(tmp_path: Path) -> None:
    results = run_drills(
        "tests.apps.receipts_app",
        "receipts",
        workdir=tmp_path,
        only=("timeout", "crash", "unknown", "duplicate"),
    )
    assert [(r.short, r.effect) for r in results] == [
        ("timeout", "pay/charge"),
        ("crash", "pay/charge"),
        ("unknown", "pay/charge"),
        ("duplicate", None),
    ]
    assert all(r.held for r in results), [r.happened for r in results]
    for r in results:
        assert "calls: charge 1x" in r.happened or "calls: charge 2x" in r.happened, r.happened
    assert "ended SUCCEEDED as the reference, provider ids aside" in results[0].happened
    # each folder's ledger charged once, with a receipt of its own
    receipts = set()
    for folder in ("reference", "timeout-pay-charge", "crash-pay-charge", "unknown-pay-charge"):
        lines = (tmp_path / folder / "ledger.jsonl").read_text().splitlines()
        assert len(lines) == 1, folder
        receipts.add(json.loads(lines[0])["receipt"])
    assert len(receipts) == 4, "every run got a fresh receipt id"


def test_a_row_that_did_not_hold_shows_each_effects_calls_beside_the_reference(
    tmp_path: Path,
) -> None:
    (result,) = run_drills("tests.apps.drills_app", "careless", workdir=tmp_path, only=("crash",))
    assert result.held is False
    assert "calls: book " in result.happened, result.happened
