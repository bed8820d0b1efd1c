from __future__ import annotations

from dataclasses import dataclass, field

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perdure.core.errors import DecodeError, InvalidInputError
from perdure.core.serde import Limits, OversizeError, StateCodec, depth, dumps


@dataclass
class Inner:
    x: int


@dataclass
class State:
    name: str
    inner: Inner
    tags: list[str] = field(default_factory=list)
    score: float | None = None


class Model(pydantic.BaseModel):
    name: str
    count: int = 0


def test_a_dataclass_state_round_trips_through_fields() -> None:
    codec = StateCodec(State)
    state = State("a", Inner(3), ["t"], 1.5)
    fields = codec.to_fields(state)
    assert set(fields) == {"name", "inner", "tags", "score"}
    assert codec.from_fields(fields) == state


def test_a_pydantic_state_round_trips() -> None:
    codec = StateCodec(Model)
    assert codec.from_fields(codec.to_fields(Model(name="x", count=2))) == Model(name="x", count=2)


def test_a_wrong_type_in_stored_state_is_a_decode_error() -> None:
    codec = StateCodec(State)
    fields = codec.to_fields(State("a", Inner(3)))
    fields["inner"] = dumps({"x": "three"})
    with pytest.raises(DecodeError, match=r"inner\.x"):
        codec.from_fields(fields)


@dataclass
class Shelf:
    notes: list[dict[str, object]] = field(default_factory=list)
    inners: list[Inner] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    flags: list[bool] = field(default_factory=list)


def test_a_large_list_decodes_without_copying_what_needs_no_check() -> None:
    codec = StateCodec(Shelf)
    shelf = Shelf([{"n": i} for i in range(1_000)], [Inner(i) for i in range(3)], {"a": 1.5})
    back = codec.from_fields(codec.to_fields(shelf))
    assert back == shelf and isinstance(back.inners[2], Inner)


@pytest.mark.parametrize(
    ("name", "value", "path"),
    [
        ("notes", [{"n": 1}, {"n": 2}, 3], r"Shelf\.notes\[2\]: expected an object"),
        ("inners", [{"x": 1}, {"x": "two"}], r"Shelf\.inners\[1\]\.x: expected int"),
        ("scores", {"a": 1.0, "b": True}, r"Shelf\.scores\.b: expected float"),
        ("words", ["a", 2], r"Shelf\.words\[1\]: expected str"),
        ("flags", [True, 1], r"Shelf\.flags\[1\]: expected bool"),
    ],
)
def test_a_wrong_item_deep_in_a_list_is_named_by_its_path(
    name: str, value: object, path: str
) -> None:
    codec = StateCodec(Shelf)
    fields = {**codec.to_fields(Shelf()), name: dumps(value)}
    with pytest.raises(DecodeError, match=path):
        codec.from_fields(fields)


def test_an_undeclared_field_is_a_decode_error() -> None:
    codec = StateCodec(State)
    fields = {**codec.to_fields(State("a", Inner(3))), "extra": b"1"}
    with pytest.raises(DecodeError, match="not declared"):
        codec.from_fields(fields)


def test_malformed_json_is_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        StateCodec(State).from_fields({"name": b"{not json"})


def test_input_that_is_not_an_object_is_refused_clearly() -> None:
    with pytest.raises(InvalidInputError, match="must be an object"):
        StateCodec(State).coerce([1, 2])


def test_canonical_json_sorts_keys() -> None:
    assert dumps({"b": 1, "a": 2}) == b'{"a":2,"b":1}'


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(alphabet='[]{}"\\ab,:\n'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='[]{}"\\k', max_size=3), inner, max_size=4)
    ),
    max_leaves=40,
)


def nesting(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    return 0


@given(JSON_VALUES)
def test_depth_read_from_the_text_is_the_depth_of_the_value(value: object) -> None:
    assert depth(dumps(value)) == nesting(value)


def test_limits_read_depth_only_from_the_fields_that_changed() -> None:
    limits = Limits(max_depth=3)
    deep = {"old": b"[[[[1]]]]", "new": b"[1]"}
    limits.check(deep, changed=["new"])  # "old" was checked when it was written
    with pytest.raises(OversizeError, match="'old' nests deeper than 3"):
        limits.check(deep)
    with pytest.raises(OversizeError, match="state is"):
        Limits(max_bytes=10).check({"a": b"[1,2,3,4,5,6,7,8]"}, changed=[])
