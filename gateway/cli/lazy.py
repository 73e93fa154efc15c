"""Command groups that import a command's module only when the command is used.

``gw --help`` lists every command with its one-line help, and ``gw submit``
runs one; neither needs the other modules (their imports, their Typer to
Click conversion). Importing all of them at start cost about a third of
``gw --help`` (issue 19: commands that talk to no server start in under
0.3 s; ``bench/startup.py``). So a group lists its other modules' commands
from a table (name -> module, hook, one-line help) and imports a module the
first time one of its commands is resolved to be run, or to print its own
help.

The table's help line is what the group's help lists, so it must be the
command's own (its docstring's first paragraph or ``help=``);
``tests/unit/test_cli_lazy.py`` checks every entry against the loaded
command and the whole help page against a fully loaded tree.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup


@dataclass(frozen=True)
class Lazy:
    """A command (or command group) that ``hook(typer_app)`` in ``module`` adds."""

    module: str
    help: str
    group: bool = False  # a command group (Typer lists plain commands first, then groups)
    hook: str = "register"


@functools.cache
def loaded(module: str, hook: str) -> Mapping[str, Any]:
    """The Click commands ``module.hook`` adds to a Typer, converted once per process.

    Once: a hook may also add commands to its module's own Typer sub-apps, which must not get them
    twice when one process builds ``gw`` more than once (the tests' CliRunner does).
    """
    scratch = typer.Typer()
    getattr(importlib.import_module(module), hook)(scratch)
    return dict(typer.main.get_group(scratch).commands)


class LazyGroup(TyperGroup):
    """A ``TyperGroup`` with ``lazy`` commands besides the ones registered on its Typer.

    A subclass names its table: ``class Top(LazyGroup): lazy = {...}``, then
    ``typer.Typer(cls=Top)``.
    """

    lazy: ClassVar[Mapping[str, Lazy]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        """Every name, loaded or not, in Typer's order: plain commands first, then groups."""
        own = [name for name in self.commands if name not in self.lazy]
        own_plain = [name for name in own if not isinstance(self.commands[name], TyperGroup)]
        own_groups = [name for name in own if name not in own_plain]
        lazy_plain = [name for name, entry in self.lazy.items() if not entry.group]
        lazy_groups = [name for name, entry in self.lazy.items() if entry.group]
        return own_plain + lazy_plain + own_groups + lazy_groups

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The command; a lazy one is loaded, except for this group's help page (its line only)."""
        command = self.commands.get(cmd_name)
        entry = self.lazy.get(cmd_name)
        if command is not None or entry is None:
            return command
        if self._listing:  # this group's help page: the name and the line, not the module
            return TyperCommand(name=cmd_name, help=entry.help)
        return self.load(cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """As Typer's, whose "Did you mean" would see only the loaded commands: here it sees them all."""
        name = args[0] if args else ""
        unknown = name not in self.commands and name not in self.lazy and not name.startswith("-")
        if (
            unknown
            and self.suggest_commands
            and not ctx.resilient_parsing
            and ctx.token_normalize_func is None
        ):
            matches = get_close_matches(name, self.list_commands(ctx))
            if matches:
                ctx.fail(f"No such command {name!r}. Did you mean {', '.join(map(repr, matches))}?")
        return super().resolve_command(ctx, args)

    def load(self, cmd_name: str) -> Any:
        """Import ``cmd_name``'s module and keep every command of the table that it adds."""
        entry = self.lazy[cmd_name]
        for name, command in loaded(entry.module, entry.hook).items():
            if name in self.lazy and self.lazy[name].module == entry.module:
                self.commands.setdefault(name, command)
        command = self.commands.get(cmd_name)
        if command is None:
            raise LookupError(f"{entry.module}.{entry.hook} did not add the command {cmd_name!r}")
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """This group's help page, listing the commands not yet loaded from the table."""
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False
