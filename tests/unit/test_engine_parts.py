"""The engine is one class per capability on one base: no capability may hide another's name.

``Engine`` inherits every capability class; Python takes the first definition of a name in the
method resolution order, so two capabilities defining the same method would leave one of them
silently unreachable. mypy holds ``Engine`` to the ``Store`` protocol; this holds the parts to
each other.
"""

from __future__ import annotations

from collections import Counter

from perdure.store.base import Store
from perdure.store.engine.base import EngineBase
from perdure.store.engine.engine import Engine


def capabilities() -> list[type]:
    return [c for c in Engine.__mro__[1:] if c not in (EngineBase, object)]


def test_every_capability_of_the_engine_stands_on_the_engine_base_alone() -> None:
    for capability in capabilities():
        assert capability.__bases__ == (EngineBase,), capability


def test_no_two_capabilities_of_the_engine_define_the_same_name() -> None:
    defined = Counter(
        name for capability in capabilities() for name in vars(capability) if name[:2] != "__"
    )
    assert [name for name, n in defined.items() if n > 1] == []


def test_the_engine_has_every_store_method_and_no_other_public_one() -> None:
    methods = {n for n in dir(Store) if not n.startswith("_") and callable(getattr(Store, n))}
    public = {n for n in dir(Engine) if not n.startswith("_")}
    assert public == methods
