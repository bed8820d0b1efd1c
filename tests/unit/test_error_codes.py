"""Every error code names one error: no two classes define the same ``code``.

A code is what a client, a log query or an alert matches on (``error[thread_busy]``, the API's
``{"error": {"code": ...}}``); two errors sharing one would send both to the same handler. Read
from the source, so an error in an optional package is checked without importing it. A class
that defines no code of its own shares its base's on purpose: it refines that error.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import perdure

SRC = Path(perdure.__file__).parent


def defined_codes() -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in node.body:
                if (
                    isinstance(item, ast.Assign)
                    and [getattr(t, "id", None) for t in item.targets] == ["code"]
                    and isinstance(item.value, ast.Constant)
                    and isinstance(item.value.value, str)
                ):
                    found[item.value.value].append(f"{path.relative_to(SRC)}:{node.name}")
    return found


def test_no_two_errors_define_the_same_code() -> None:
    codes = defined_codes()
    assert len(codes) > 30, "the scan found the error classes"
    assert {code: where for code, where in codes.items() if len(where) > 1} == {}
