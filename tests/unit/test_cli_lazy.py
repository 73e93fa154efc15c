"""gw's lazily loaded commands (gateway.cli.lazy): the table tells the truth, help pages are unchanged.

``gw --help`` lists the commands of other modules from the tables in
``gateway.cli.main`` without importing them; these tests load every entry
and hold the table to what the modules really add.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import typer.main
from typer.core import TyperGroup
from typer.testing import CliRunner

from gateway.cli.lazy import LazyGroup, loaded
from gateway.cli.main import Admin, Gw, app

TABLES = [pytest.param(Gw, id="gw"), pytest.param(Admin, id="gw admin")]


def first_paragraph(command) -> str:
    return inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0].strip()


@pytest.mark.parametrize("group", TABLES)
def test_every_entry_is_the_command_its_module_adds(group: type[LazyGroup]) -> None:
    for name, entry in group.lazy.items():
        command = loaded(entry.module, entry.hook).get(name)
        assert command is not None, f"{entry.module}.{entry.hook} adds no {name!r}"
        assert first_paragraph(command) == entry.help, name
        assert isinstance(command, TyperGroup) == entry.group, name


@pytest.mark.parametrize("group", TABLES)
def test_every_command_a_module_adds_is_in_the_table(group: type[LazyGroup]) -> None:
    for entry in group.lazy.values():
        for name in loaded(entry.module, entry.hook):
            assert name in group.lazy, (
                f"{entry.module}.{entry.hook} adds {name!r}, which the table leaves out"
            )
            assert group.lazy[name].module == entry.module


def rendered(group, capsys) -> str:
    """The group's own help page as a terminal shows it."""
    ctx = group.context_class(group, info_name="gw")
    group.format_help(ctx, ctx.make_formatter())
    return capsys.readouterr().out


@pytest.mark.parametrize("path", [[], ["admin"]], ids=["gw", "gw admin"])
def test_a_help_page_from_the_table_is_the_page_of_the_loaded_commands(path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")

    def group_at(root):
        for name in path:
            root = root.get_command(None, name)
        return root

    listed = rendered(group_at(typer.main.get_command(app)), capsys)
    full = group_at(typer.main.get_command(app))
    for name in full.lazy:
        full.load(name)
    assert set(full.lazy) <= set(full.commands)
    assert rendered(full, capsys) == listed
    for name in full.list_commands(None):
        assert f"│ {name} " in listed


def test_gw_help_imports_none_of_the_other_command_modules() -> None:
    probe = (
        "import sys\n"
        "from gateway.cli.main import Admin, Gw, app\n"
        "try:\n"
        "    app(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "lazy = {e.module for e in [*Gw.lazy.values(), *Admin.lazy.values()]}\n"
        "print(sorted(m for m in lazy if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stderr.strip().splitlines()[-1] == "[]"
    assert "Evaluation: suites, eval runs, results, gates, reviews." in done.stdout


def test_lazy_commands_run_and_reload_in_one_process() -> None:
    runner = CliRunner()
    pages = [runner.invoke(app, ["admin", "accounting", "--help"], env={"COLUMNS": "100"}) for _ in range(2)]
    assert [page.exit_code for page in pages] == [0, 0]
    assert pages[0].output == pages[1].output
    assert "ingest" in pages[0].output
    group = typer.main.get_command(app).get_command(None, "admin").get_command(None, "accounting")
    assert list(group.commands) == ["ingest"]  # its module registered once, however often gw was built


def test_an_unknown_command_is_a_usage_error_that_names_the_near_one() -> None:
    result = CliRunner().invoke(app, ["evla", "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 2
    assert "No such command" in result.output
    assert "Did you mean 'eval'?" in result.output
