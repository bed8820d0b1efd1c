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
    "--pg",
    metavar="URL",
    help="A PostgreSQL database to throw away: the database drill ends its connections.",
)
@run_command
def drills(
    target: str, input_json: str | None, approve_as: str | None, only: str | None, pg: str | None
) -> None:
    """Run the ten fault drills against a workflow; print what happened and whether it held.

    Model call times out, crash after a tool succeeded before the write, duplicate delivery, a
    late message to a finished run, approval after hours, cancel mid-step, unknown external
    status, database briefly unavailable (SQLite's write lock held by another connection; with
    --pg, every connection to that PostgreSQL database ended for a while),
    artifact corrupted or lost (its objects overwritten, then deleted), budget exhausted. Each drill
    runs in a fresh folder, SQLite database and test clock, in real processes.

    Exits non-zero when a drill did not hold (an effect called more often than in the
    uninterrupted reference run, or an outcome that is neither the reference's nor a typed
    hand-off to a person).
    """
    from perdure.drills import format_drills, run_drills

    module, workflow = split_target(target)
    names = tuple(n.strip() for n in (only or "").split(",") if n.strip())
    results = run_drills(
        module,
        workflow,
        parse_json(input_json, "--input"),
        approve_as=approve_as,
        only=names,
        pg=pg,
    )
    click.echo(format_drills(results))
    failed = [r for r in results if r.held is False]
    applied = sum(r.held is not None for r in results)
    click.echo(f"\n{len(results)} drills, {applied} applied, {len(failed)} did not hold")
    if failed:
        sys.exit(1)
