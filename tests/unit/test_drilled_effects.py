"""How the drills label the reference run's effects (unique in the run, ``think#3/model.1``)
and pick them with ``--effect``; pure."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from perdure.core.effects import EffectRecord, EffectStatus
from perdure.core.errors import ConfigError
from perdure.core.model import JSON
from perdure.drills.effects import chosen, labelled
from perdure.drills.receipts import normalised, provider_values


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


def charged(receipt: str, reply_id: str) -> list[EffectRecord]:
    """A charge with a provider receipt and a model reply with a provider id, as one run
    recorded them."""
    charge = dataclasses.replace(
        record("pay", 1, "charge", "ledger"),
        result={"amount": 40, "receipt": receipt},
        receipt=receipt,
    )
    reply = dataclasses.replace(
        record("think", 2, "model.1"),
        result={"id": reply_id, "text": "charged 40 euros", "message_id": "msg_" + reply_id[-8:]},
    )
    return [charge, reply]


def test_fresh_provider_ids_are_put_aside_but_amounts_and_words_are_compared() -> None:
    ref: dict[str, JSON] = {"receipt": "ch_1a2b3c4d5e", "note": "run run-1 paid", "n": 40}
    drill: dict[str, JSON] = {"receipt": "ch_9z8y7x6w5v", "note": "run run-2 paid", "n": 40}
    ref["reply"], drill["reply"] = "cmpl-111aaa222", "cmpl-999zzz888"
    ref_ids = provider_values(charged("ch_1a2b3c4d5e", "cmpl-111aaa222"))
    drill_ids = provider_values(charged("ch_9z8y7x6w5v", "cmpl-999zzz888"))
    assert normalised(ref, ref_ids, "run-1") == normalised(drill, drill_ids, "run-2")
    assert normalised(ref, ref_ids, "run-1") == {
        "receipt": "<pay/charge receipt>",
        "note": "run <run> paid",
        "n": 40,
        "reply": "<think/model.1:$.id>",
    }
    paid_twice = {**drill, "n": 80}
    assert normalised(ref, ref_ids, "run-1") != normalised(paid_twice, drill_ids, "run-2")
    other_text = {**drill, "note": "run run-2 refunded"}
    assert normalised(ref, ref_ids, "run-1") != normalised(other_text, drill_ids, "run-2")
    assert "charged 40 euros" not in drill_ids, "a reply's words are not an id"
