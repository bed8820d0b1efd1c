"""What ``import perdure`` and the CLI load: nothing they do not use.

Each check runs in a fresh interpreter (a subprocess), since this test process has imported
everything already.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Optional packages and heavy modules a sync process or ``perdure demo resume`` never uses.
NOT_LOADED = (
    "asyncio",
    "opentelemetry",
    "prometheus_client",
    "psycopg",
    "psycopg_pool",
    "boto3",
    "botocore",
    "langgraph",
    "pydantic_ai",
    "agents",
    "starlette",
    "uvicorn",
    "openai",
    "anthropic",
    "email",
    "subprocess",  # the demos' stories load it when they run
    "zipfile",  # the store reads its SQL files from its folder, not through importlib.resources
    "perdure.server",
    "perdure.providers",
    "perdure.langgraph",
    "perdure.pydantic_ai",
    "perdure.openai_agents",
    "perdure.runtime.step.frameworks",
    "perdure.store.postgres",
    "perdure.demos.agent_cli",
    "perdure.demos.refund_cli",
    "perdure.demos.framework_demo",
    "perdure.demos.pydantic_ai_app",
    "perdure.demos.openai_agents_app",
    "perdure.cli.serve_app",
)

PROBE = """
import sys
{imports}
loaded = sorted({{m.split(".")[0] if not m.startswith("perdure.") else m for m in sys.modules}})
print("\\n".join(loaded))
"""


def loaded_after(imports: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(imports=imports)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(done.stdout.split())


def offending(loaded: set[str]) -> list[str]:
    return sorted(
        m for m in loaded for prefix in NOT_LOADED if m == prefix or m.startswith(prefix + ".")
    )


@pytest.mark.parametrize(
    "imports",
    [
        "import perdure",
        "import perdure.cli.main",
        "import perdure.cli.main, perdure.demos.cli",
    ],
)
def test_imports_stay_lean(imports: str) -> None:
    assert offending(loaded_after(imports)) == []


def cli_probe(args: list[str]) -> str:
    return (
        "import perdure.cli.main as m\n"
        "try:\n"
        f"    m.main.main({args!r}, standalone_mode=False)\n"
        "except BaseException:\n"
        "    pass"
    )


def test_demo_resume_loads_only_the_demo(tmp_path: Path) -> None:
    """A new process resuming the crashed demo run (``perdure demo resume``, through the lazy
    groups) loads the demo and not the other demos, command modules or optional packages."""
    db = ["--db", f"sqlite:///{tmp_path / 'demo.db'}"]
    crashed = subprocess.run(
        [sys.executable, "-c", cli_probe([*db, "demo", "start", "--crash-before-reply"])],
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert crashed.returncode == 75, crashed.stderr
    loaded = loaded_after(cli_probe([*db, "demo", "resume"]))
    assert "perdure.demos.cli" in loaded
    assert offending(loaded) == []
    assert "perdure.cli.history" not in loaded
    assert "perdure.cli.watch" not in loaded


def test_every_command_still_listed_and_its_help_works() -> None:
    """The lazy groups list every command (``perdure --help``) and each one's ``--help``."""
    from click.testing import CliRunner

    from perdure.cli.main import LAZY_COMMANDS, main

    runner = CliRunner()
    listing = runner.invoke(main, ["--help"])
    assert listing.exit_code == 0
    for name in LAZY_COMMANDS:
        assert f"  {name} " in listing.output
        shown = runner.invoke(main, [name, "--help"])
        assert shown.exit_code == 0, (name, shown.output)
        assert f"Usage: main {name}" in shown.output
    for name in (
        "agent",
        "refund",
        "gate",
        "brightness",
        "langgraph",
        "pydantic-ai",
        "openai-agents",
    ):
        shown = runner.invoke(main, ["demo", name, "--help"])
        assert shown.exit_code == 0, (name, shown.output)


def test_the_command_list_shows_whole_sentences() -> None:
    from click.testing import CliRunner

    from perdure.cli.main import main

    listing = CliRunner().invoke(main, ["--help"], terminal_width=80).output
    commands = listing.split("Commands:")[1]
    assert "..." not in commands, "a description was cut mid-phrase"
    assert "List side effects (e.g. `--status ambiguous`: those waiting for a" in listing
