"""``perdure graph``: LangGraph threads kept by ``perdure.langgraph`` — what a thread waits for,
and a person's answer to it, recorded durably without the graph's code (needs
``perdure[langgraph]``)."""

from __future__ import annotations

from typing import Any

import click
import orjson

from perdure.cli import render
from perdure.cli.support import Settings, pass_settings, run_command


@click.group()
def graph() -> None:
    """LangGraph threads: what they wait for, and answers to their interrupts."""


@graph.command("waiting")
@click.argument("thread")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_settings
@run_command
def graph_waiting(settings: Settings, thread: str, as_json: bool) -> None:
    """The interrupts THREAD waits for (id and value), and whether an answer is recorded."""
    from perdure.langgraph import PerdureSaver

    with PerdureSaver.from_conn_string(settings.db, tenant=settings.tenant) as saver:
        interrupts, answered = saver.waiting({"configurable": {"thread_id": thread}})
    found = [{"id": i.id, "value": _json(i.value)} for i in interrupts]
    if as_json:
        click.echo(render.dumps({"thread": thread, "interrupts": found, "answered": answered}))
        return
    if not found:
        click.echo(f"thread {thread} waits for no answer")
    for one in found:
        click.echo(f"interrupt {one['id']}  {orjson.dumps(one['value']).decode()}")
    if found and answered:
        click.echo("an answer is recorded; the next graph.invoke(None, config) hands it over")


@graph.command("answer")
@click.argument("thread")
@click.argument("value")
@click.option("--interrupt-id", help="Answer only this interrupt (its id from `waiting`).")
@pass_settings
@run_command
def graph_answer(settings: Settings, thread: str, value: str, interrupt_id: str | None) -> None:
    """Record VALUE as the answer to the interrupt THREAD waits for, durably: the graph's next
    ``graph.invoke(None, config)`` (or ``perdure.langgraph.resume``), in any process, continues
    with it. VALUE is read as JSON when it is JSON (true, 42, {"ok": true}), else as text."""
    from perdure.langgraph import PerdureSaver

    try:
        answer: Any = orjson.loads(value)
    except orjson.JSONDecodeError:
        answer = value
    with PerdureSaver.from_conn_string(settings.db, tenant=settings.tenant) as saver:
        config: Any = {"configurable": {"thread_id": thread}}
        written = saver.record_resume(config, answer, interrupt_id=interrupt_id)
    said = orjson.dumps(answer).decode()
    if written:
        click.echo(f"thread {thread}: answer {said} recorded; graph.invoke(None, config) goes on")
    else:
        click.echo(f"thread {thread}: answer {said} was recorded already")


def _json(value: Any) -> Any:
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:
        return repr(value)
