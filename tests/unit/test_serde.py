from __future__ import annotations

from dataclasses import dataclass, field

import pydantic
import pytest

from perdure.core.errors import DecodeError, InvalidInputError
from perdure.core.serde import StateCodec, dumps


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
