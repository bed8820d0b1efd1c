"""``perdure demo langgraph``: a LangGraph agent pays an invoice after a person approves it; the
process is killed inside the tool just after the payment; a new process continues the thread.
Told twice, on the same graph and checkpointer: with perdure's ``resume`` and ``effect_tool``,
and as plain LangGraph (``Command(resume=...)``, a plain tool). Needs ``perdure[langgraph]``.
"""

from __future__ import annotations

from typing import Any

import click
from langchain_core.messages import HumanMessage
from langgraph.types import Command

from perdure.cli.support import Settings, pass_settings, run_command
from perdure.demos import graph_agent as agent_app
from perdure.demos.cli import demo, side_file
from perdure.demos.story import commands, fresh_db, verdict
from perdure.langgraph import PerdureSaver, resume
from perdure.runtime.crashpoints import EXIT_CODE, arm

plain_option = click.option(
    "--plain", is_flag=True, help="Plain LangGraph: Command(resume=...) and a plain tool."
)


def _files(settings: Settings, plain: bool) -> tuple[str, str, str]:
    flavour = "plain" if plain else "perdure"
    return (
        f"langgraph-demo-{flavour}",
        side_file(settings, f"langgraph-{flavour}-payments.db"),
        side_file(settings, f"langgraph-{flavour}-calls.log"),
    )


def _graph(saver: PerdureSaver, settings: Settings, plain: bool) -> tuple[Any, Any, str]:
    thread, ledger, calls = _files(settings, plain)
    graph = agent_app.build(saver, ledger=ledger, calls=calls, durable=not plain)
    return graph, {"configurable": {"thread_id": thread}}, calls


def _said(out: dict[str, Any], calls: str) -> None:
    """Print where the graph stopped: a question for the person, or its last message."""
    asks = out.get("__interrupt__") or []
    for ask in asks:
        agent_app.tally(calls, "asked")
        click.echo(f"the agent asks a person: {ask.value['question']}")
    if not asks:
        click.echo(f"the agent says: {out['messages'][-1].content}")


@demo.group("langgraph", invoke_without_command=True)
@click.pass_context
def graph_demo(ctx: click.Context) -> None:
    """A LangGraph agent pays after an approval, killed just after paying: perdure against plain
    LangGraph.

    With no subcommand, tells the whole story twice against fresh databases.
    """
    if ctx.invoked_subcommand is None:
        story()


@graph_demo.command("start")
@plain_option
@pass_settings
@run_command
def graph_start(settings: Settings, plain: bool) -> None:
    """Ask the agent to pay the invoice; it stops to ask a person."""
    with PerdureSaver.from_conn_string(settings.db) as saver:
        saver.setup()
        graph, config, calls = _graph(saver, settings, plain)
        out = graph.invoke({"messages": [HumanMessage(content=agent_app.QUESTION)]}, config)
        _said(out, calls)


@graph_demo.command("approve")
@plain_option
@click.option(
    "--crash-after-payment",
    is_flag=True,
    help="Exit with code 75 inside the tool, just after the provider took the payment.",
)
@pass_settings
@run_command
def graph_approve(settings: Settings, plain: bool, crash_after_payment: bool) -> None:
    """A person says yes (perdure: ``resume``; plain: ``Command(resume="yes")``)."""
    if crash_after_payment:
        arm("after_call:pay")
    with PerdureSaver.from_conn_string(settings.db) as saver:
        graph, config, calls = _graph(saver, settings, plain)
        answer: Command[Any] = Command(resume="yes")
        out = graph.invoke(answer, config) if plain else resume(graph, "yes", config)
        _said(out, calls)


@graph_demo.command("resume")
@plain_option
@pass_settings
@run_command
def graph_resume(settings: Settings, plain: bool) -> None:
    """Continue the thread in this (new) process (``graph.invoke(None)``); a person asked
    again says yes again."""
    with PerdureSaver.from_conn_string(settings.db) as saver:
        graph, config, calls = _graph(saver, settings, plain)
        out = graph.invoke(None, config)
        _said(out, calls)
        while out.get("__interrupt__"):
            click.echo("the person says yes again")
            out = graph.invoke(Command(resume="yes"), config)
            _said(out, calls)


def tallies(settings: Settings, plain: bool) -> dict[str, int]:
    """Model calls, questions to the person and payments so far."""
    _, ledger, calls = _files(settings, plain)
    counted = agent_app.counts(calls)
    return {
        "model_calls": counted.get("model", 0),
        "asked": counted.get("asked", 0),
        "payments": agent_app.payments(ledger),
    }


@graph_demo.command("status")
@plain_option
@pass_settings
@run_command
def graph_status(settings: Settings, plain: bool) -> None:
    """How many times the model was called, the person asked, and the provider paid."""
    found = tallies(settings, plain)
    click.echo(
        f"model calls {found['model_calls']}, asked for approval {found['asked']}, "
        f"payments {found['payments']}"
    )


def story() -> None:
    """Each flavour: start -> approve (killed after the payment) -> resume -> status."""
    rows: dict[str, dict[str, int]] = {}
    codes: dict[str, list[int]] = {}
    for flavour, flags in (("perdure.langgraph", ()), ("plain LangGraph", ("--plain",))):
        click.secho(f"\n=== {flavour} ===", bold=True)
        _, db = fresh_db("perdure-langgraph-demo-")
        step = commands(db, "demo", "langgraph")
        codes[flavour] = [
            step("The model asks to pay; the pay tool asks a person first.", "start", *flags),
            step(
                "A person approves; the tool pays and the process is killed just after the "
                "payment, before anything records it.",
                "approve",
                "--crash-after-payment",
                *flags,
            ),
            step("A new process continues the thread.", "resume", *flags),
        ]
        plain = bool(flags)
        rows[flavour] = tallies(Settings(db, "default"), plain)
    click.echo(f"\n{'':20} {'model calls':>11} {'asked for approval':>19} {'payments':>9}")
    for flavour, found in rows.items():
        click.echo(
            f"{flavour:20} {found['model_calls']:>11} {found['asked']:>19} {found['payments']:>9}"
        )
    ours = rows["perdure.langgraph"]
    ok = codes["perdure.langgraph"] == [0, EXIT_CODE, 0] and ours == {
        "model_calls": 2,
        "asked": 1,
        "payments": 1,
    }
    verdict(
        ok,
        "perdure: the approval survived the crash and the invoice was paid once; plain "
        "LangGraph ran the tool again (and may have asked the person again).",
    )
