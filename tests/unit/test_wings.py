"""The store is a kernel and its wings, and each consumer reaches only the wings it uses.

Read from the source, like the layer test: the kernel contract's width, that no wing is a base
class of the engine, that a wing imports neither another wing nor a kernel capability's class,
and, for every module outside ``store/``, which wings it touches (``<...>store.<wing>.``) and
which wing modules it imports. A room that starts to use a wing must be declared here, so a
new dependency is a visible decision.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import perdure
from perdure.store.base import Store
from perdure.store.engine.engine import Engine

SRC = Path(perdure.__file__).parent
WINGS = sorted(p.name for p in (SRC / "store" / "wings").iterdir() if (p / "contract.py").exists())

KERNEL_LIMIT = 55
"""The most methods the kernel contract may hold (the house issue's bound)."""

USES: dict[str, set[str]] = {
    "runtime/admin": {
        "access",
        "activity",
        "archive",
        "artifacts",
        "history",
        "memory",
        "retention",
        "throttle",
    },
    "runtime/execution": {"memory"},
    "runtime/artifacts.py": {"artifacts"},
    "langgraph/saver.py": {"graphs"},
    "langgraph/hold.py": {"graphs"},
    "langgraph/store.py": {"memory"},
    "drills/artifacts.py": {"artifacts"},
    "testing/conformance": set(WINGS),
}
"""The wings each room outside ``store/`` may touch; a room not named touches none."""

_TOUCH = re.compile(r"store\.(" + "|".join(WINGS) + r")\.")


def _room(path: Path) -> str:
    rel = path.relative_to(SRC).as_posix()
    for room in sorted(USES, key=len, reverse=True):
        if rel == room or rel.startswith(room + "/"):
            return room
    return rel


def test_the_kernel_contract_is_narrow_and_each_wing_is_an_attribute() -> None:
    methods = [
        n.name
        for n in ast.parse((SRC / "store" / "base.py").read_text()).body
        if isinstance(n, ast.ClassDef) and n.name == "Store"
        for n in n.body
        if isinstance(n, ast.FunctionDef) and n.name not in WINGS
    ]
    assert len(methods) <= KERNEL_LIMIT, f"the kernel has {len(methods)} methods"
    for wing in WINGS:
        assert isinstance(getattr(Store, wing), property), f"Store.{wing} is not a wing"
    bases = {b.__module__ for b in Engine.__mro__}
    assert not [b for b in bases if b.startswith("perdure.store.wings")], "a wing is mixed in"


def test_a_wing_imports_no_other_wing_and_no_kernel_capability() -> None:
    kernel_parts = {"children", "commits", "effects", "fleet", "runs", "streams", "threads"}
    kernel_parts |= {"versions", "waits", "engine"}
    for wing in WINGS:
        for path in (SRC / "store" / "wings" / wing).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom) or node.module is None:
                    continue
                parts = node.module.split(".")
                if node.module.startswith("perdure.store.wings."):
                    assert parts[3] == wing, f"{path.name} of {wing} imports {node.module}"
                if node.module.startswith("perdure.store.engine."):
                    assert parts[3] not in kernel_parts, f"{wing} imports {node.module}"


def test_each_room_touches_only_the_wings_it_declares() -> None:
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith("store/"):
            continue
        text = path.read_text()
        touched = set(_TOUCH.findall(text))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "perdure.store.wings."
            ):
                touched.add((node.module or "").split(".")[3])
        if touched:
            found.setdefault(_room(path), set()).update(touched)
    undeclared = {
        room: sorted(wings - USES.get(room, set()))
        for room, wings in found.items()
        if wings - USES.get(room, set())
    }
    assert undeclared == {}, f"rooms touching wings they do not declare: {undeclared}"
    unused = {room: sorted(USES[room] - found.get(room, set())) for room in USES}
    assert {r: w for r, w in unused.items() if w} == {}, "declared wings no longer used"
