"""How the drills label the reference run's effects (unique in the run, ``think#3/model.1``)
and pick them with ``--effect``; pure."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from perdure.core.effects import EffectRecord, EffectStatus
from perdure.core.errors import ConfigError
from perdure.drills.effects import chosen, labelled


def record(step: str, seq: int, name: str, target: str = "model") -> EffectRecord:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    return EffectRecord(
        key=f"default/wf/run/{seq}.{step}/{name}",
        tenant_id="default",
        run_id="run",
        step=step,
        step_seq=seq,
        name=name,
        target=target,
        operation="op",
        request_hash="h",
        request=None,
        status=EffectStatus.CONFIRMED,
        attempts=1,
        result=None,
        receipt=None,
        last_error=None,
        compensator=None,
        resolution=None,
        created_at=now,
        updated_at=now,
    )


def test_effects_are_labelled_by_step_and_by_step_number_when_a_step_runs_twice() -> None:
    records = [
        record("think", 1, "model.1"),
        record("act", 2, "tool.call_1", "tool"),
        record("act", 2, "tool.call_1.compensate", "tool"),
        record("think", 3, "model.1"),
    ]
    effects = labelled(records, ["think", "act", "think"])
    assert [e.label for e in effects] == ["think#1/model.1", "act/tool.call_1", "think#3/model.1"]
    assert [e.point for e in effects] == [
        "model.1@think#1",
        "tool.call_1@act#2",
        "model.1@think#3",
    ]
    assert effects[1].target == "tool"


def test_effect_patterns_match_the_label_or_step_and_name() -> None:
    effects = labelled(
        [record("think", 1, "model.1"), record("act", 2, "tool.call_1", "tool")],
        ["think", "act"],
    )
    assert [e.label for e in chosen(effects, ["act/tool.*"])] == ["act/tool.call_1"]
    assert [e.label for e in chosen(effects, ["*/model.*", "act/*"])] == [
        "think/model.1",
        "act/tool.call_1",
    ]
    assert chosen(effects, []) == effects
    with pytest.raises(ConfigError, match=r"names no effect .*it made: think/model.1, act/"):
        chosen(effects, ["nope/*"])
