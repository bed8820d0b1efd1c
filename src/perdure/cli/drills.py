"""``perdure drills``: the ten fault drills against the user's own workflow."""

from __future__ import annotations

import sys

import click

from perdure.cli.support import parse_json, run_command
from perdure.core.errors import ConfigError


def split_target(target: str) -> tuple[str, str]:
    """``MODULE:WORKFLOW`` as its two parts, or a one-line error."""
    module, _, workflow = target.partition(":")
    if not module or not workflow:
        raise ConfigError(
            f"{target!r} does not name a workflow",
            fix="write MODULE:WORKFLOW, e.g. myapp.flows:refund",
        )
    return module, workflow


@click.command()
@click.argument("target", metavar="MODULE:WORKFLOW")
@click.option("--input", "input_json", help="The run's input as JSON.")
@click.option(
    "--approve-as", "approve_as", metavar="ROLE", help="Approve approval waits as this role."
)
@click.option("--only", metavar="NAMES", help="Comma-separated drills to run (e.g. crash,unknown).")
@click.option(
    "--effect",
    "effects",
    metavar="PATTERN",
    multiple=True,
    help="Aim the effect drills at the effects this fnmatch pattern of STEP/NAME names "
    "(e.g. 'act/tool.*'); repeatable. Default: every effect of the reference run.",
)
@click.option(
    "--pg",
    metavar="URL",
    help="A PostgreSQL database to throw away: the database drill ends its connections.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per row.")
@run_command
def drills(
    target: str,
    input_json: str | None,
    approve_as: str | None,
    only: str | None,
    effects: tuple[str, ...],
    pg: str | None,
    as_json: bool,
) -> None:
    """Run the fault drills against a workflow; print what happened and whether it held.

    Three drills run once for each effect the uninterrupted reference run made (model calls,
    side-effecting tools, ctx.effect calls) or each one --effect names: the call times out
    before it is sent; the process is killed after the call succeeded, before its outcome is
    written; the call goes through but its reply is lost (unknown external status). Each row
    names its effect by step and name (act/tool.call_1; think#3/model.1 when a step runs more
    than once, numbered as perdure history numbers steps).

    The others drill the whole run: duplicate delivery, a late message to a finished run,
    approval after hours, cancel mid-step, database briefly unavailable (SQLite's write lock
    held by another connection; with --pg, every connection to that PostgreSQL database ended
    for a while), artifact corrupted or lost (its objects overwritten, then deleted), budget
    exhausted. Each drill runs in a fresh folder, SQLite database and test clock, in real
    processes.

    When a run goes to a person for a reason a policy would have absorbed (a timeout without a
    retry= policy), its row says which. With --json, one object per row: drill, title, effect,
    held (true, false, or null when the drill does not apply) and what_happened.

    Exits non-zero when a drill did not hold (an effect called more often than in the
    uninterrupted reference run, or an outcome that is neither the reference's nor a typed
    hand-off to a person).
    """
    from perdure.drills import format_drills, format_drills_json, run_drills

    module, workflow = split_target(target)
    names = tuple(n.strip() for n in (only or "").split(",") if n.strip())
    results = run_drills(
        module,
        workflow,
        parse_json(input_json, "--input"),
        approve_as=approve_as,
        only=names,
        pg=pg,
        effects=effects,
    )
    failed = [r for r in results if r.held is False]
    if as_json:
        click.echo(format_drills_json(results))
    else:
        click.echo(format_drills(results))
        applied = sum(r.held is not None for r in results)
        click.echo(f"\n{len(results)} drills, {applied} applied, {len(failed)} did not hold")
    if failed:
        sys.exit(1)
