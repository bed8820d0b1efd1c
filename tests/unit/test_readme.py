"""Every Python block in the README runs as written and prints what its comments say.

Each block runs in a fresh process in its own temporary directory, so its
``sqlite:///.perdure/perdure.db`` is a real SQLite file there. A line ``print(...)  # text``
promises that the block prints ``text`` as its next line of output.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
PROMISE = re.compile(r"^\s*print\(.*\)\s+#\s(.+)$")


def promised_output(code: str) -> list[str]:
    """The output lines a block's ``print(...)  # text`` comments promise, in order."""
    return [m.group(1).strip() for line in code.splitlines() if (m := PROMISE.match(line))]


def test_the_readme_has_its_workflow_and_effect_examples_in_python() -> None:
    assert len(BLOCKS) >= 2
    assert any("ctx.effect(" in code for code in BLOCKS), "the effect example is runnable"
    for code in BLOCKS:
        assert promised_output(code), "each example says what it prints"


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{n + 1}" for n in range(len(BLOCKS))])
def test_a_readme_example_runs_and_prints_what_it_promises(code: str, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == promised_output(code)
    assert (tmp_path / ".perdure" / "perdure.db").is_file(), "it ran against a real SQLite file"


def test_a_readme_example_uses_only_names_from_perdure() -> None:
    for code in BLOCKS:
        for line in code.splitlines():
            if line.startswith(("from perdure", "import perdure")):
                assert line.startswith("from perdure import "), line
