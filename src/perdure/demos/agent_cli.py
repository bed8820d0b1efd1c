"""``perdure demo agent``: a research-and-email agent killed mid-stream, then after its email,
resuming without paying twice for a model call and without sending the email twice."""

from __future__ import annotations

import click

from perdure.cli import render
from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.model import Message
from perdure.demos import agent as agent_app
from perdure.demos.cli import demo, run_of, side_file
from perdure.demos.story import commands, fresh_db, verdict
from perdure.runtime.crashpoints import EXIT_CODE, arm
from perdure.runtime.runtime import Runtime

THREAD = "agent-demo-1"


def _outbox(settings: Settings) -> str:
    return side_file(settings, "outbox.jsonl")


def _runtime(settings: Settings) -> Runtime:
    return Runtime(settings.db, workflows=[agent_app.research])


@demo.group("agent", invoke_without_command=True)
@click.pass_context
def agent_demo(ctx: click.Context) -> None:
    """Research, stream an answer, email it: killed twice, never paid twice, one email.

    With no subcommand, tells the whole story against a fresh database.
    """
    if ctx.invoked_subcommand is None:
        story()


@agent_demo.command("start")
@click.option("--crash-mid-stream", is_flag=True, help="Exit with code 75 inside the stream.")
@pass_settings
@run_command
def agent_start(settings: Settings, crash_mid_stream: bool) -> None:
    """Ask the question and run the agent (optionally dying in the middle of its answer)."""
    agent_app.crash_mid_stream = crash_mid_stream
    with _runtime(settings) as rt:
        run = rt.start(
            agent_app.research,
            {"outbox": _outbox(settings)},
            tenant=settings.tenant,
            thread=THREAD,
            idempotency_key=f"demo:{THREAD}",
            messages=[
                Message("system", "You research, answer briefly and email the answer."),
                Message("user", agent_app.QUESTION),
            ],
        )
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])


@agent_demo.command("resume")
@click.option(
    "--crash-before-commit",
    is_flag=True,
    help="Exit with code 75 after the email, before the write step's boundary is committed.",
)
@pass_settings
@run_command
def agent_resume(settings: Settings, crash_before_commit: bool) -> None:
    """Continue the agent's run in this (new) process."""
    if crash_before_commit:
        arm("before_commit:write")
    with _runtime(settings) as rt:
        run = run_of(rt, settings, THREAD, "research")
        line, after = render.resumed(rt, run.run_id, settings.tenant)
        click.echo(line)
        if after.status.terminal and isinstance(after.result, dict):
            paid = agent_app.paid(rt.effects.list(tenant=settings.tenant, run_id=run.run_id))
            r = after.result
            click.echo(
                f"model calls paid: {paid['tokens']} tokens (${paid['cost']:.6f}), of which "
                f"~{paid['lost_tokens']} for the attempt cut mid-stream; saved by replaying "
                f"recorded calls: {r['saved_tokens']} tokens (${r['saved_cost']:.6f})"
            )


@agent_demo.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def agent_status(settings: Settings, as_json: bool) -> None:
    """The run, its model calls and the emails the outbox received."""
    emails = agent_app.Outbox(_outbox(settings)).sent()
    with _runtime(settings) as rt:
        run = run_of(rt, settings, THREAD, "research")
        effects = rt.effects.list(tenant=settings.tenant, run_id=run.run_id)
    calls = [
        {
            "name": f"{e.step}/{e.name}",
            "target": e.target,
            "status": str(e.status),
            "attempts": e.attempts,
        }
        for e in effects
    ]
    info = {
        "run_id": run.run_id,
        "status": str(run.status),
        "next_step": run.next_step,
        "emails_sent": len(emails),
        "effects": calls,
        "result": run.result,
    }
    if as_json:
        click.echo(render.dumps(info))
        return
    click.echo(f"run          {run.run_id} {run.status} (next step {run.next_step or '-'})")
    click.echo(f"emails sent  {len(emails)}")
    for c in calls:
        click.echo(f"effect       {c['target']:<6} {c['name']:<24} {c['status']}")


def story() -> None:
    """start (killed mid-stream) -> resume (killed after the email) -> resume -> status."""
    folder, db = fresh_db("perdure-agent-demo-")
    step = commands(db, "demo", "agent")
    first = step(
        "The agent searches, then dies in the middle of streaming its answer.",
        "start",
        "--crash-mid-stream",
    )
    second = step(
        "A new process: plan is not run again (its model call is paid and recorded); the "
        "answer streams again from the start, the email goes out, and the process dies "
        "before the step's boundary.",
        "resume",
        "--crash-before-commit",
    )
    third = step(
        "A new process: the answer is replayed from its record (no model call), the email "
        "is not sent again, the run finishes.",
        "resume",
    )
    step("One email in the outbox; each model call confirmed once.", "status")
    ok = first == EXIT_CODE and second == EXIT_CODE and third == 0
    emails = len(agent_app.Outbox(str(folder / "outbox.jsonl")).sent())
    verdict(ok and emails == 1, "The agent survived both crashes.", "The demo went wrong.")
