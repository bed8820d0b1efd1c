"""Reducers: updates from branches combine in branch order whatever order they finished in;
two writes of a field without a reducer are a typed error, never last-writer-wins."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perdure.core.errors import ConflictingUpdatesError
from perdure.core.reducers import BUILTIN, append, combine, maximum, merge, total


@dataclass(frozen=True)
class S:
    items: list[int] = field(default_factory=list)
    tags: dict[str, int] = field(default_factory=dict)
    best: int | None = None
    spent: int = 0
    note: str = ""


REDUCERS = {"items": append, "tags": merge, "best": maximum, "spent": total}

update = st.fixed_dictionaries(
    {},
    optional={
        "items": st.lists(st.integers(-5, 5), max_size=3),
        "tags": st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), max_size=2),
        "best": st.integers(-100, 100),
        "spent": st.integers(0, 50),
    },
)
branches = st.dictionaries(st.text("xyz0123", min_size=1, max_size=3), update, max_size=6)


@given(branches, st.randoms())
def test_any_completion_order_of_the_branches_gives_the_same_state(
    updates: dict[str, dict[str, object]], rnd: object
) -> None:
    keys = list(updates)
    rnd.shuffle(keys)  # type: ignore[attr-defined]
    shuffled = {k: updates[k] for k in keys}  # the order they "finished" in
    start = S(items=[0], tags={"a": 1}, best=3, spent=1)
    assert combine(start, shuffled, REDUCERS) == combine(start, updates, REDUCERS)
    assert start == S(items=[0], tags={"a": 1}, best=3, spent=1), "the input is not changed"


def test_updates_apply_in_branch_id_order_through_each_reducer() -> None:
    out = combine(
        S(items=[0], spent=1),
        {"b": {"items": [2], "tags": {"k": 2}}, "a": {"items": [1], "tags": {"k": 1}}},
        REDUCERS,
    )
    assert (out.items, out.tags) == ([0, 1, 2], {"k": 2})


def test_one_writer_without_a_reducer_replaces_and_two_are_refused() -> None:
    assert combine(S(), {"a": {"note": "x"}}, REDUCERS).note == "x"
    with pytest.raises(ConflictingUpdatesError, match="'note'"):
        combine(S(), {"a": {"note": "x"}, "b": {"note": "y"}}, REDUCERS)


def test_dict_states_and_the_builtin_names() -> None:
    assert set(BUILTIN) == {"append", "merge", "max", "min", "sum"}
    assert combine({"n": 1}, {"a": {"n": 2}, "b": {"n": 3}}, {"n": total}) == {"n": 6}
