"""What the framework demos share (``perdure demo pydantic-ai``, ``perdure demo openai-agents``):
an agent written in the framework asks to email Ana with a tool that needs a person's approval;
once approved, the process is killed right after the tool's call, then again before the step's
boundary, and each time a new process resumes. Then the same agent, with the same crashes, as
the framework runs it on its own (its messages kept in a file between requests, as its docs
show). Each chapter runs in a new process; the story ends with the counts side by side.

The commands import the framework only when they run (``perdure demo --help`` never does), from
the demo's app module, which gives ``WORKFLOW``, ``TOOL_EFFECT`` (the name of
the approved tool call's effect), ``FRAMEWORK``, ``EXTRA`` and ``alone(folder, chapter, crash)``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import click

from perdure.cli import render
from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.chat import MODEL_TARGET
from perdure.core.errors import ConfigError
from perdure.core.model import Principal
from perdure.demos.cli import run_of, side_file
from perdure.demos.mail_agent import ROLE, STEP
from perdure.demos.mailbox import Mailbox, requests
from perdure.demos.story import commands, fresh_db, verdict
from perdure.runtime.crashpoints import EXIT_CODE, arm
from perdure.runtime.runtime import Runtime

OUTBOX = "outbox.jsonl"
REQUESTS = "requests.log"
ALONE_OUTBOX = "alone-outbox.jsonl"
ALONE_REQUESTS = "alone-requests.log"
ALONE_MESSAGES = "alone-messages.json"


@dataclass(frozen=True, slots=True)
class FrameworkDemo:
    """One framework's demo: its command name, and the module of its agent and workflow."""

    name: str
    app: str
    thread: str

    def load(self) -> ModuleType:
        """The app module (this imports the framework)."""
        try:
            return importlib.import_module(self.app)
        except ImportError as exc:
            extra = self.name
            raise ConfigError(
                f"`perdure demo {self.name}` needs its framework, which is not installed "
                f"({exc.name})",
                fix=f"pip install 'perdure[{extra}]'",
            ) from exc

    def folder(self, settings: Settings) -> Path:
        """Where the demo keeps its outbox and tallies (beside an SQLite database)."""
        return Path(side_file(settings, OUTBOX)).parent


def demo_group(demo: FrameworkDemo, summary: str) -> click.Group:
    """The ``perdure demo <name>`` group: the story, and each chapter as a command."""

    @click.group(demo.name, invoke_without_command=True, help=summary)
    @click.pass_context
    def group(ctx: click.Context) -> None:
        if ctx.invoked_subcommand is None:
            run_command(story)(demo)

    @group.command("start")
    @pass_settings
    @run_command
    def start(settings: Settings) -> None:
        """Ask the agent to email Ana; the run waits for the tool's approval."""
        app = demo.load()
        folder = demo.folder(settings)
        with Runtime(settings.db, workflows=[app.WORKFLOW]) as rt:
            run = rt.start(
                app.WORKFLOW,
                {"folder": str(folder)},
                tenant=settings.tenant,
                thread=demo.thread,
                idempotency_key=f"demo:{demo.thread}",
            )
            click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])

    @group.command("approve")
    @pass_settings
    @run_command
    def approve(settings: Settings) -> None:
        """Approve the email as Ana's manager (who holds the role the request names)."""
        app = demo.load()
        with Runtime(settings.db, workflows=[app.WORKFLOW]) as rt:
            run = run_of(rt, settings, demo.thread, app.WORKFLOW.name)
            who = Principal(settings.tenant, "maria", frozenset({ROLE}))
            rt.approve(run.run_id, who, comment="ok to send")
            click.echo(f"run {run.run_id} approved by maria ({ROLE})")

    @group.command("resume")
    @click.option("--crash-after-tool", is_flag=True, help="Exit 75 right after the tool's call.")
    @click.option("--crash-before-commit", is_flag=True, help="Exit 75 before the step's boundary.")
    @pass_settings
    @run_command
    def resume(settings: Settings, crash_after_tool: bool, crash_before_commit: bool) -> None:
        """Continue the run in this (new) process."""
        app = demo.load()
        if crash_after_tool:
            arm(f"after_call:{app.TOOL_EFFECT}")
        elif crash_before_commit:
            arm(f"before_commit:{STEP}")
        with Runtime(settings.db, workflows=[app.WORKFLOW]) as rt:
            run = run_of(rt, settings, demo.thread, app.WORKFLOW.name)
            line, after = render.resumed(rt, run.run_id, settings.tenant)
            click.echo(line)
            if after.status.terminal and isinstance(after.result, dict):
                click.echo(f"answer: {after.result.get('answer')}")

    @group.command("status")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @pass_settings
    @run_command
    def status(settings: Settings, as_json: bool) -> None:
        """How often the model was asked and the tool ran, and what the run recorded."""
        app = demo.load()
        with Runtime(settings.db, workflows=[app.WORKFLOW]) as rt:
            run = run_of(rt, settings, demo.thread, app.WORKFLOW.name)
            effects = rt.effects.list(tenant=settings.tenant, run_id=run.run_id)
        info = counts(demo.folder(settings), effects) | {
            "run_id": run.run_id,
            "status": str(run.status),
            "effects": [f"{e.key.rsplit('/', 2)[-2]}/{e.name} {e.status}" for e in effects],
        }
        if as_json:
            click.echo(render.dumps(info))
            return
        click.echo(f"run               {run.run_id} {run.status}")
        click.echo(f"model requests    {info['model_requests']} (each recorded once, paid once)")
        click.echo(f"tool calls        {info['tool_calls']} (emails in the outbox)")
        for line in info["effects"]:
            click.echo(f"effect            {line}")

    @group.command("alone")
    @click.argument("chapter", type=click.Choice(["ask", "continue"]))
    @click.option("--crash-after-tool", is_flag=True, help="Exit 75 right after the tool.")
    @click.option("--crash-before-save", is_flag=True, help="Exit 75 before saving the run.")
    @pass_settings
    @run_command
    def alone(
        settings: Settings, chapter: str, crash_after_tool: bool, crash_before_save: bool
    ) -> None:
        """The same agent as the framework runs it on its own (no perdure)."""
        crash = "after_tool" if crash_after_tool else "before_save" if crash_before_save else None
        demo.load().alone(demo.folder(settings), chapter, crash)

    return group


def counts(folder: Path, effects: list[Any] | None = None) -> dict[str, Any]:
    """What the demo's perdure run did: model requests made, tool calls, recorded calls."""
    found = {
        "model_requests": requests(folder / REQUESTS),
        "tool_calls": len(Mailbox(folder / OUTBOX).sent()),
    }
    if effects is not None:
        found["recorded_model_calls"] = sum(1 for e in effects if e.target == MODEL_TARGET)
    return found


def story(demo: FrameworkDemo) -> None:
    """Every chapter in a new process, then the counts side by side (one error line, before
    anything starts, when the framework is not installed)."""
    app = demo.load()
    folder, db = fresh_db(f"perdure-{demo.name}-demo-")
    step = commands(db, "demo", demo.name)
    waiting = step("The agent asks to email Ana; the tool needs approval: the run waits.", "start")
    step("Ana's manager approves (any process, any time later).", "approve")
    first = step(
        "A new process: the approved tool sends the email and the process dies right after "
        "the call, before its outcome is recorded.",
        "resume",
        "--crash-after-tool",
    )
    second = step(
        "A new process: the tool's reconciler finds the email by its key, so it is not sent "
        "again; the model writes the answer; the process dies before the step's boundary.",
        "resume",
        "--crash-before-commit",
    )
    last = step(
        "A new process: the answer comes from its record (not asked, not paid again).", "resume"
    )
    step("What happened, as recorded.", "status")
    step(
        "The same agent on its own: its messages kept in a file between requests.",
        "alone",
        "ask",
    )
    step(
        "Approved; the tool sends the email and the process dies at the same point.",
        "alone",
        "continue",
        "--crash-after-tool",
    )
    step(
        "A new process continues from the kept messages: the email goes out again, the "
        "model answers, and the process dies before it saves the run.",
        "alone",
        "continue",
        "--crash-before-save",
    )
    step("A new process continues again: a third email.", "alone", "continue")
    ours = counts(folder)
    theirs = {
        "model_requests": requests(folder / ALONE_REQUESTS),
        "tool_calls": len(Mailbox(folder / ALONE_OUTBOX).sent()),
    }
    framework = app.FRAMEWORK
    click.echo(f"\n{'':<22}{'with perdure':>14}{framework + ' alone':>24}")
    click.echo(f"{'model requests':<22}{ours['model_requests']:>14}{theirs['model_requests']:>24}")
    click.echo(f"{'tool calls (emails)':<22}{ours['tool_calls']:>14}{theirs['tool_calls']:>24}")
    ok = (
        waiting == 0
        and first == EXIT_CODE
        and second == EXIT_CODE
        and last == 0
        and ours == {"model_requests": 2, "tool_calls": 1}
    )
    verdict(ok, "The approved email went out once; no model request was made twice.")


pydantic_ai_demo = demo_group(
    FrameworkDemo("pydantic-ai", "perdure.demos.pydantic_ai_app", "pydantic-ai-demo-1"),
    "A pydantic-ai agent's approved email, killed twice: sent once, no request made twice.\n\n"
    "With no subcommand, tells the whole story against a fresh database "
    "(needs `pip install 'perdure[pydantic-ai]'`).",
)
openai_agents_demo = demo_group(
    FrameworkDemo("openai-agents", "perdure.demos.openai_agents_app", "openai-agents-demo-1"),
    "An OpenAI Agents SDK agent's approved email, killed twice: sent once, no request made "
    "twice.\n\nWith no subcommand, tells the whole story against a fresh database "
    "(needs `pip install 'perdure[openai-agents]'`).",
)
