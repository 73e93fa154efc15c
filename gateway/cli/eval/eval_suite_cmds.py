"""gw eval suite register, list, show and settings: eval suites and their immutable versions.

``gw eval suite register FILE.yaml`` reads the suite file here (bounded
YAML), puts the text of its ``prompt_template_file`` in (looked up below
``--eval-dir``, or the suite file's directory and its parents), and sends
the definition (``eval_cmds`` adds these commands to ``gw eval``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from gateway.cli.common import JsonOpt, call, spec_error, usage
from gateway.cli.eval import eval_view
from gateway.cli.eval.eval_args import suite_ref
from gateway.cli.output import console, print_json
from gateway.core import names
from gateway.errors import SpecError

suite_app = typer.Typer(no_args_is_help=True, help="Eval suites and their immutable versions.")


def read_suite(path: Path, eval_dir: Path | None) -> dict[str, Any]:
    """The suite file as a mapping, its ``prompt_template_file`` replaced by the file's text."""
    from gateway.adapters.files import read_text
    from gateway.core.yaml_input import load_yaml

    try:
        data = load_yaml(read_text(path, what="eval suite"), what="eval suite", source=str(path))
    except SpecError as exc:
        spec_error(exc)
    roots = [eval_dir] if eval_dir is not None else [path.resolve().parent, *path.resolve().parents]

    def read(rel: str) -> str:
        for root in roots:
            if (root / rel).is_file():
                return read_text(root / rel, what="prompt template")
        where = str(eval_dir) if eval_dir is not None else f"{path.parent} or a directory above it"
        raise OSError(f"no file {rel} below {where} (name the eval directory with --eval-dir)")

    try:
        from gateway.core.eval.suite import resolve_files  # pydantic models: loaded when used

        return resolve_files(data, read)
    except SpecError as exc:
        spec_error(SpecError(exc.issues, str(path), what="eval suite"))


@suite_app.command("register")
def suite_register(
    file: Annotated[Path, typer.Argument(help="The suite definition (YAML or JSON).")],
    eval_dir: Annotated[
        Path | None, typer.Option(help="Where prompt_template_file is looked up (default: above FILE).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Register a suite version; the same content again gives the existing version."""
    found = call("register_suite", read_suite(file, eval_dir))
    if as_json:
        print_json(found)
        return
    console.print(("registered " if found["created"] else "unchanged: the same content is ") + found["ref"])
    for line in eval_view.version_lines(found):
        console.print(line)


@suite_app.command("list")
def suite_list(
    project: Annotated[str | None, typer.Option(help="Only this project's suites.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Suites of your projects."""
    if project is not None and not names.NAME.fullmatch(project):
        usage(f"project {project!r} is not valid; use {names.NAME_HELP}")
    found = call("eval_suites", project)
    if as_json:
        print_json(found)
    else:
        console.print(eval_view.suites_table(found))


@suite_app.command("show")
def suite_show(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME, or PROJECT/NAME@VERSION for one version.")],
    as_json: JsonOpt = False,
) -> None:
    """A suite and its versions, or one version with its definition."""
    if "@" in suite:
        ref = suite_ref(suite)
        found = call("eval_suite_version", ref.project, ref.name, str(ref.number or "latest"))
        if as_json:
            print_json(found)
            return
        for line in eval_view.version_lines(found):
            console.print(line)
        return
    project, _, name = suite.partition("/")
    if not (names.NAME.fullmatch(project) and names.NAME.fullmatch(name)):
        from gateway.core.eval.domain import SUITE_REF_HELP

        usage(f"suite {suite!r}: give PROJECT/NAME or {SUITE_REF_HELP}")
    found = call("eval_suite", project, name)
    if as_json:
        print_json(found)
        return
    console.print(f"[bold]{found['project']}/{found['name']}[/bold]  {found['description']}", markup=False)
    console.print(eval_view.settings_line(found), markup=False)
    for version in found["versions"]:
        for line in eval_view.version_lines(version):
            console.print(line)


@suite_app.command("settings")
def suite_settings(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    versions_by: Annotated[
        str | None,
        typer.Option(help="The least role that may register a new version: lead or member."),
    ] = None,
    self_reviews: Annotated[
        str | None,
        typer.Option(
            help="count: reviews by the run's submitter or the release's requester count for its gates; "
            "exclude: they do not (the default)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a suite's settings (its project's leads); what is not given stays."""
    project, _, name = suite.partition("/")
    if not (names.NAME.fullmatch(project) and names.NAME.fullmatch(name)):
        usage(f"suite {suite!r}: give PROJECT/NAME")
    if versions_by is not None and versions_by not in ("lead", "member"):
        usage(f"--versions-by {versions_by!r}: use lead or member")
    if self_reviews is not None and self_reviews not in ("count", "exclude"):
        usage(f"--self-reviews {self_reviews!r}: use count or exclude")
    body: dict[str, Any] = {}
    if versions_by is not None:
        body["versions_by"] = versions_by
    if self_reviews is not None:
        body["count_self_reviews"] = self_reviews == "count"
    found = call("set_suite_settings", project, name, body)
    if as_json:
        print_json(found)
    else:
        console.print(f"{found['project']}/{found['name']}: {eval_view.settings_line(found)}", markup=False)
