"""A click group whose subcommands are imported when used, so that ``perdure demo resume``
does not import the modules of every other command.

A lazy subcommand is named ``module:attribute``; ``perdure --help`` still lists it with its
short help (it imports them all then), and ``perdure NAME --help`` imports only ``NAME``.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import click

from perdure.cli.support import EXTRAS, run_command
from perdure.core.errors import ConfigError

_SENTENCE_END = re.compile(r"(?<!e\.g)(?<!i\.e)\.(?=\s)")


class LazyGroup(click.Group):
    """A :class:`click.Group` with ``lazy={"name": "package.module:attribute"}`` subcommands."""

    def __init__(self, *args: Any, lazy: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, str] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every subcommand name, the loaded and the lazy ones, sorted."""
        return sorted({*super().list_commands(ctx), *self.lazy})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List every subcommand with the first sentence of its help, whole (click would cut
        it at a fixed width mid-phrase); long sentences wrap."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            rows.append((name, command.short_help or first_sentence(command.help or "")))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The subcommand ``cmd_name``, importing its module on first use."""
        found = super().get_command(ctx, cmd_name)
        if found is not None or cmd_name not in self.lazy:
            return found
        module, _, attribute = self.lazy[cmd_name].partition(":")
        try:
            command = getattr(importlib.import_module(module), attribute)
        except ImportError as exc:  # an optional package the command needs is not installed
            extra = EXTRAS.get((exc.name or "").split(".")[0])
            if extra is None:
                raise
            command = missing_extra(cmd_name, ctx.command_path, exc.name or "", extra)
        if not isinstance(command, click.Command):  # pragma: no cover - a wiring mistake
            raise TypeError(f"{self.lazy[cmd_name]} is not a click command")
        self.add_command(command, cmd_name)
        return command


def first_sentence(text: str) -> str:
    """The first sentence of a help text (up to the first period that ends a sentence, or its
    first paragraph), on one line."""
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    end = _SENTENCE_END.search(paragraph)
    return paragraph if end is None else paragraph[: end.start() + 1]


def missing_extra(name: str, parent: str, module: str, extra: str) -> click.Command:
    """A stand-in for subcommand ``name`` whose module needs ``extra``, which is not installed:
    its help says what to install, and running it (with any arguments) is one error line."""

    @run_command
    def refuse(args: tuple[str, ...]) -> None:
        raise ConfigError(
            f"`{parent} {name}` needs {module}, which is not installed",
            fix=f"pip install 'perdure[{extra}]'",
        )

    return click.Command(
        name,
        callback=refuse,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        help=f"Not installed: needs `pip install 'perdure[{extra}]'`.",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
