"""``perdure demo``: the crash-and-resume story of the temperature agent."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import click

from perdure.cli import render
from perdure.cli.lazy import LazyGroup
from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.errors import RunNotFoundError
from perdure.core.model import Message, Run
from perdure.demos import brightness as brightness_app
from perdure.demos import temperature as demo_app
from perdure.demos.light import SmartLight
from perdure.demos.story import commands, fresh_db, verdict
from perdure.runtime.crashpoints import COMMIT_POINTS, EFFECT_POINTS, EXIT_CODE, arm
from perdure.runtime.runtime import Runtime
from perdure.store.url import safe_url

DEFAULT_THREAD = "recovery-demo-1"
thread_option = click.option("--thread", default=DEFAULT_THREAD, show_default=True)


def _runtime(settings: Settings) -> Runtime:
    return Runtime(settings.db, workflows=[demo_app.temperature])


def run_of(rt: Runtime, settings: Settings, thread: str, workflow: str = "temperature") -> Run:
    runs = rt.runs(tenant=settings.tenant, workflow=workflow, thread=thread, limit=1)
    if not runs:
        start = "demo start" if workflow == "temperature" else f"demo {workflow} start"
        raise RunNotFoundError(
            f"no {workflow} demo run on thread {thread!r} in {safe_url(settings.db)}",
            fix=f"start one with `perdure {start}`",
        )
    return runs[0]


@click.group(
    cls=LazyGroup,
    invoke_without_command=True,
    lazy={  # these modules register their group on ``demo`` when imported
        "agent": "perdure.demos.agent_cli:agent_demo",
        "refund": "perdure.demos.refund_cli:refund_demo",
        "gate": "perdure.demos.gate:demo_gate",
        "langgraph": "perdure.demos.graph_cli:graph_demo",
        "pydantic-ai": "perdure.demos.framework_demo:pydantic_ai_demo",
        "openai-agents": "perdure.demos.framework_demo:openai_agents_demo",
    },
)
@click.pass_context
def demo(ctx: click.Context) -> None:
    """The temperature agent: crash before the reply, then resume in a new process.

    With no subcommand, tells the whole story against a fresh database.
    """
    if ctx.invoked_subcommand is None:
        story()


@demo.command("start")
@thread_option
@click.option("--crash-before-reply", is_flag=True, help="Exit with code 75 entering reply.")
@pass_settings
@run_command
def demo_start(settings: Settings, thread: str, crash_before_reply: bool) -> None:
    """Ask for the temperature and run the agent (optionally crashing before its reply)."""
    demo_app.crash_before_reply = crash_before_reply
    with _runtime(settings) as rt:
        run = rt.start(
            demo_app.temperature,
            tenant=settings.tenant,
            thread=thread,
            idempotency_key=f"demo:{thread}",
            messages=[Message("user", demo_app.QUESTION)],
        )
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])


@demo.command("status")
@thread_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def demo_status(settings: Settings, thread: str, as_json: bool) -> None:
    """Show the demo run's status, next step and thread messages."""
    with _runtime(settings) as rt:
        view = rt.status(run_of(rt, settings, thread).run_id, tenant=settings.tenant)
    if as_json:
        click.echo(
            render.dumps(
                {
                    "run_id": view.run.run_id,
                    "status": str(view.run.status),
                    "next_step": view.run.next_step,
                    "completed_steps": view.completed_steps,
                    "messages": [m.to_json() for m in view.messages],
                }
            )
        )
        return
    click.echo(f"run {view.run.run_id}")
    click.echo(f"status     {view.run.status}")
    click.echo(f"next step  {view.run.next_step or '-'}")
    click.echo(f"completed  {', '.join(view.completed_steps) or '-'}")
    click.echo(f"messages   {len(view.messages)}")
    for m in view.messages:
        click.echo(f"  {render.message_line(m)}")


@demo.command("resume")
@thread_option
@pass_settings
@run_command
def demo_resume(settings: Settings, thread: str) -> None:
    """Continue the demo run from its last committed step in this (new) process."""
    with _runtime(settings) as rt:
        run = run_of(rt, settings, thread)
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])
        last = rt.status(run.run_id, tenant=settings.tenant).messages[-1:]
        if last and last[0].role == "assistant" and last[0].content:
            click.echo(f"assistant: {last[0].content}")


def story() -> None:
    """Run start (crashing) -> status -> resume -> resume, each in a new process."""
    _, db = fresh_db("perdure-demo-")
    step = commands(db, "demo")
    crashed = step(
        "Run the agent; the process dies on entering reply, before it can answer.",
        "start",
        "--thread",
        DEFAULT_THREAD,
        "--crash-before-reply",
    )
    step(
        "A new process reads the checkpoint: three messages, next step reply.",
        "status",
        "--thread",
        DEFAULT_THREAD,
    )
    resumed = step(
        "A new process resumes: only reply runs, using the stored 23.5°C reading.",
        "resume",
        "--thread",
        DEFAULT_THREAD,
    )
    step("Resuming again does nothing: the run is finished.", "resume", "--thread", DEFAULT_THREAD)
    verdict(crashed == EXIT_CODE and resumed == 0, "The run survived the crash.")


# -- the brightness demo ---------------------------------------------------------------------

BRIGHTNESS_THREAD = "brightness-demo-1"


def side_file(settings: Settings, name: str) -> str:
    """Where a demo keeps a simulated external system: next to an SQLite database, else in a
    temporary folder named after the database URL (one per database)."""
    if settings.db.startswith("sqlite:///"):
        return str(Path(settings.db.removeprefix("sqlite:///")).parent / name)
    digest = hashlib.sha256(settings.db.encode()).hexdigest()[:16]
    return str(Path(tempfile.gettempdir()) / f"perdure-demo-{digest}" / name)


def _light_path(settings: Settings) -> str:
    return side_file(settings, "light.db")


def _brightness_runtime(settings: Settings) -> Runtime:
    return Runtime(settings.db, workflows=[brightness_app.brightness])


@demo.group("brightness")
def brightness_demo() -> None:
    """Lower a light by 10% exactly once, whatever crashes around the call."""


@brightness_demo.command("start")
@click.option(
    "--crash-at",
    type=click.Choice(EFFECT_POINTS + COMMIT_POINTS),
    help="Exit with code 75 at this point of the dim step.",
)
@pass_settings
@run_command
def brightness_start(settings: Settings, crash_at: str | None) -> None:
    """Ask to lower the brightness and run the agent (optionally crashing)."""
    if crash_at:
        arm(f"{crash_at}:{'adjust' if crash_at in EFFECT_POINTS else 'dim'}")
    with _brightness_runtime(settings) as rt:
        run = rt.start(
            brightness_app.brightness,
            {"light": _light_path(settings)},
            tenant=settings.tenant,
            thread=BRIGHTNESS_THREAD,
            idempotency_key=f"demo:{BRIGHTNESS_THREAD}",
            messages=[Message("user", brightness_app.QUESTION)],
        )
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])


@brightness_demo.command("resume")
@pass_settings
@run_command
def brightness_resume(settings: Settings) -> None:
    """Continue the brightness run in this (new) process."""
    with _brightness_runtime(settings) as rt:
        run = run_of(rt, settings, BRIGHTNESS_THREAD, "brightness")
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])


@brightness_demo.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def brightness_status(settings: Settings, as_json: bool) -> None:
    """The light's brightness, how many commands it applied, and the run's state."""
    light = SmartLight(_light_path(settings)).status()
    with _brightness_runtime(settings) as rt:
        run = run_of(rt, settings, BRIGHTNESS_THREAD, "brightness")
        effects = [
            {"key": e.key, "status": str(e.status), "attempts": e.attempts}
            for e in rt.effects.list(tenant=settings.tenant, run_id=run.run_id)
        ]
    info = {
        "brightness": light["brightness"],
        "commands_applied": light["commands"],
        "run_id": run.run_id,
        "status": str(run.status),
        "next_step": run.next_step,
        "effects": effects,
    }
    if as_json:
        click.echo(render.dumps(info))
        return
    click.echo(f"brightness        {light['brightness']}%")
    click.echo(f"commands applied  {light['commands']}")
    click.echo(f"run               {run.run_id} {run.status} (next step {run.next_step or '-'})")
    for e in effects:
        click.echo(f"effect            {e['key']} {e['status']} attempts={e['attempts']}")
