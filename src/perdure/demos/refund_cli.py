"""``perdure demo refund``: a refund review that waits for a manager and pays exactly once."""

from __future__ import annotations

import os
import subprocess
import sys

import click

from perdure.cli import render
from perdure.cli.support import Settings, pass_settings, run_command
from perdure.core.model import Message
from perdure.demos import refund as refund_app
from perdure.demos.cli import demo, run_of, side_file
from perdure.demos.ledger import Ledger
from perdure.demos.story import fresh_db, verdict
from perdure.runtime.runtime import Runtime

THREAD = "refund-demo-8472"


def _provider_path(settings: Settings) -> str:
    return side_file(settings, "provider.db")


def _runtime(settings: Settings) -> Runtime:
    return Runtime(settings.db, workflows=[refund_app.refund_review])


@demo.group("refund", invoke_without_command=True)
@click.pass_context
def refund_demo(ctx: click.Context) -> None:
    """Review a refund, wait for a refund_manager, pay once, notify once.

    With no subcommand, tells the whole story (a wrong role refused, a crash during the
    payment, a resume that does not pay twice) against a fresh database.
    """
    if ctx.invoked_subcommand is None:
        story()


@refund_demo.command("start")
@pass_settings
@run_command
def refund_start(settings: Settings) -> None:
    """Open the review of case 8472; it stops to wait for a manager's approval."""
    with _runtime(settings) as rt:
        run = rt.start(
            refund_app.refund_review,
            {"case": 8472, "provider": _provider_path(settings)},
            tenant=settings.tenant,
            thread=THREAD,
            idempotency_key=f"demo:{THREAD}",
            messages=[Message("user", "Case 8472: my order arrived broken, please refund.")],
        )
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])


@refund_demo.command("resume")
@pass_settings
@run_command
def refund_resume(settings: Settings) -> None:
    """Continue the review in this process (after the approval)."""
    with _runtime(settings) as rt:
        run = run_of(rt, settings, THREAD, "refund_review")
        click.echo(render.resumed(rt, run.run_id, settings.tenant)[0])


@refund_demo.command("status")
@pass_settings
@run_command
def refund_status(settings: Settings) -> None:
    """The review's status and what the provider actually did."""
    ledger = Ledger(_provider_path(settings))
    with _runtime(settings) as rt:
        run = run_of(rt, settings, THREAD, "refund_review")
    click.echo(f"run              {run.run_id} {run.status}")
    click.echo(f"refunds paid     {ledger.count('refund')}")
    click.echo(f"emails sent      {ledger.count('email')}")
    if run.result is not None:
        click.echo(f"result           {render.dumps(run.result)}")


def story() -> None:
    """Each command in a new process, against a fresh database."""
    _, db = fresh_db("perdure-refund-")
    run_id = ""

    def step(title: str, *args: str, crash: str | None = None) -> subprocess.CompletedProcess[str]:
        shown = " ".join("$RUN" if run_id and a == run_id else a for a in args)
        click.secho(
            f"\n$ {'PERDURE_CRASH_AT=' + crash + ' ' if crash else ''}perdure {shown}", bold=True
        )
        click.echo(f"# {title}")
        env = {**os.environ, **({"PERDURE_CRASH_AT": crash} if crash else {})}
        out = subprocess.run(
            [sys.executable, "-m", "perdure", "--db", db, *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        click.echo((out.stdout + out.stderr).rstrip())
        click.echo(f"# exit code {out.returncode}")
        return out

    started = step(
        "Open the review; it waits for a manager, holding no process.", "demo", "refund", "start"
    )
    run_id = next(
        (line.split()[1] for line in started.stdout.splitlines() if line.startswith("run ")), ""
    )
    step("Three days may pass here; the request waits in the database.", "approvals")
    step(
        "A support agent may not approve refunds.",
        "approve",
        run_id,
        "--as",
        "carl",
        "--role",
        "support",
    )
    step(
        "The manager approves.",
        "approve",
        run_id,
        "--as",
        "maria",
        "--role",
        "refund_manager",
        "--comment",
        "broken on arrival, photos attached",
    )
    step(
        "The payment goes out, and the process dies before recording it.",
        "demo",
        "refund",
        "resume",
        crash="after_call:refund",
    )
    step(
        "A new process asks the provider instead of paying again, then notifies.",
        "demo",
        "refund",
        "resume",
    )
    final = step("One refund, one email.", "demo", "refund", "status")
    ok = "refunds paid     1" in final.stdout and "emails sent      1" in final.stdout
    verdict(ok, "Paid once, after approval.")
