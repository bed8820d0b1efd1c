"""A bare install (orjson and click only) meets the demos: the optional frameworks are made
unimportable in the ``perdure`` process by a ``sitecustomize`` on its ``PYTHONPATH``, so each
command shows what a user without the extra sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_env

BLOCKER = '''
import importlib.abc
import sys

BLOCKED = {"langchain_core", "langgraph", "pydantic_ai", "agents"}


class Missing(importlib.abc.MetaPathFinder):
    """Every optional framework is missing, as in a bare install."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Missing())
'''


@pytest.fixture
def bare(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(BLOCKER)
    env = cli_env()
    env["PYTHONPATH"] = str(folder) + ":" + env["PYTHONPATH"]
    return env


def perdure(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    db = f"sqlite:///{tmp_path / 'perdure.db'}"
    return subprocess.run(
        [sys.executable, "-m", "perdure", "--db", db, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_blocker_really_hides_the_frameworks(bare: dict[str, str]) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", "import langchain_core"],
        env=bare,
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr


def test_demo_help_lists_every_demo_without_its_framework(
    bare: dict[str, str], tmp_path: Path
) -> None:
    out = perdure(bare, tmp_path, "demo", "--help")
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert "Traceback" not in out.stdout
    listed = {line.split()[0] for line in out.stdout.splitlines() if line.startswith("  ")}
    assert {"langgraph", "pydantic-ai", "openai-agents", "agent", "refund"} <= listed
    assert "perdure[langgraph]" in out.stdout


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("demo", "langgraph"), "langgraph"),
        (("demo", "langgraph", "start"), "langgraph"),
        (("demo", "pydantic-ai"), "pydantic-ai"),
        (("demo", "pydantic-ai", "start"), "pydantic-ai"),
        (("demo", "openai-agents"), "openai-agents"),
        (("demo", "openai-agents", "status"), "openai-agents"),
    ],
)
def test_a_framework_demo_without_its_extra_says_what_to_install_in_one_line(
    bare: dict[str, str], tmp_path: Path, args: tuple[str, ...], extra: str
) -> None:
    out = perdure(bare, tmp_path, *args)
    assert out.returncode == 1
    assert out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("error[invalid_config]: ")
    assert f"pip install 'perdure[{extra}]'" in lines[0]
