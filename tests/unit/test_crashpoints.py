"""How a crash or fault point names an effect: every effect so named (``model.1``), the effect
of one step (``model.1@think``) or of one occurrence of the step (``model.1@think#3``); pure."""

from __future__ import annotations

from perdure.runtime.crashpoints import effect_target, selects


def test_a_bare_name_still_selects_every_effect_so_named() -> None:
    assert selects("model.1", "model.1", "think", 1)
    assert selects("model.1", "model.1", "think", 3)
    assert selects("model.1", "model.1")
    assert not selects("model.1", "tool.call_1", "act", 2)
    assert selects("", "anything", "step", 1), "no name: every effect and step"


def test_a_qualified_name_selects_one_step_or_one_occurrence() -> None:
    assert selects("model.1@think", "model.1", "think", 1)
    assert selects("model.1@think", "model.1", "think", 3)
    assert not selects("model.1@think", "model.1", "answer", 4)
    assert selects("model.1@think#3", "model.1", "think", 3)
    assert not selects("model.1@think#3", "model.1", "think", 1)
    assert not selects("model.1@think", "model.1"), "a step's own point is never an effect's"
    assert effect_target("tool.call_1", "act", 2) == "tool.call_1@act#2"
    assert effect_target("tool.call_1", "act") == "tool.call_1@act"
