"""gw dataset ... (register, list, show, versions, diff, share); wiring for gw trace and gw compare.

``gw dataset register`` hashes the files here, where they are, and sends the
manifest; the gateway computes the version's digest. ``gw trace`` follows a
file (by its sha256), a run or a dataset version through the lineage API.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.lineage import lineage_view
from gateway.cli.lineage.lineage_cmds import compare, trace
from gateway.cli.output import console, err_console, print_json, print_listing
from gateway.core import names
from gateway.core.lineage.dataset_ref import VERSION_SELECTOR, VERSION_SELECTOR_HELP, parse_dataset_ref
from gateway.errors import SpecError

DatasetArg = Annotated[str, typer.Argument(help="PROJECT/NAME of the dataset.", metavar="PROJECT/NAME")]
dataset_app = typer.Typer(no_args_is_help=True, help="Datasets: versions registered by content.")

BIG_SCAN_BYTES = 1 << 30  # a scan this big reports progress even when stderr is not a terminal
VERSION = re.compile(VERSION_SELECTOR)
VERSION_HELP = VERSION_SELECTOR_HELP


def register(app: typer.Typer) -> None:
    """Add ``gw dataset``, ``gw trace`` and ``gw compare`` to ``app``."""
    app.add_typer(dataset_app, name="dataset")
    app.command()(trace)
    app.command()(compare)


def _dataset_name(text: str, project: str | None = None) -> tuple[str, str]:
    """``PROJECT/NAME`` (or ``NAME`` with ``project``) -> (project, name); exit 2 when malformed."""
    owner, sep, name = text.rpartition("/")
    if not sep:
        owner = project or ""
    if not owner:
        usage(f"dataset {text!r}: give it as PROJECT/NAME (or NAME with --project)")
    for what, value in (("project", owner), ("name", name)):
        if not names.NAME.fullmatch(value):
            usage(f"dataset {text!r}: {what} {value!r} is not valid; use {names.NAME_HELP}")
    return owner, name


def _version(text: str) -> str:
    if not VERSION.fullmatch(text):
        usage(f"version {text!r} is not valid; use {VERSION_HELP}")
    return text


# -- register ---------------------------------------------------------------------------------


class _ScanProgress:
    """The hashing progress on stderr: a bar on a terminal; for a big scan elsewhere, a line per 10 %."""

    def __init__(self) -> None:
        self.progress: Progress | None = None
        self.task: Any = None
        self.next_tenth = 1
        self.active: bool | None = None

    def __call__(self, done: int, total: int, name: str) -> None:
        if self.active is None:
            self.active = err_console.is_terminal or total >= BIG_SCAN_BYTES
            if self.active and err_console.is_terminal:
                self.progress = Progress(
                    TextColumn("hashing"),
                    BarColumn(),
                    DownloadColumn(),
                    TimeRemainingColumn(),
                    TextColumn("{task.fields[name]}", markup=False),
                    console=err_console,
                    transient=True,
                )
                self.progress.start()
                self.task = self.progress.add_task("hash", total=total, name="")
        if not self.active:
            return
        if self.progress is not None:
            self.progress.update(self.task, completed=done, name=name[-60:])
        elif total and done * 10 >= self.next_tenth * total:
            self.next_tenth = done * 10 // total + 1
            err_console.print(
                f"hashing: {done * 100 // total}% ({lineage_view.human_bytes(done)} of "
                f"{lineage_view.human_bytes(total)})",
                markup=False,
            )

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()


@dataset_app.command("register")
def register_version(
    path: Annotated[Path, typer.Argument(help="The file or directory, as jobs on the cluster read it.")],
    project: Annotated[str, typer.Option(help="The project that owns the dataset.")],
    name: Annotated[str, typer.Option(help="The dataset's name in the project.")],
    description: Annotated[str, typer.Option(help="What it holds.")] = "",
    license_: Annotated[str, typer.Option("--license", help="Licence or usage terms.")] = "",
    parent: Annotated[
        str | None, typer.Option(help="The version it was made from: [project/]name@version.")
    ] = None,
    made_by_run: Annotated[str | None, typer.Option(help="The run that made it.")] = None,
    made_by_command: Annotated[str | None, typer.Option(help="Or the command that made it.")] = None,
    source_uri: Annotated[str | None, typer.Option(help="Where it came from (default file://PATH).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Register PATH's current content as a version of PROJECT/NAME (the same content: the same version)."""
    from gateway.adapters.files import scan

    project, name = _dataset_name(f"{project}/{name}")
    if parent is not None:
        try:
            parse_dataset_ref(parent)
        except ValueError as exc:
            usage(f"--parent: {exc}")
    progress = _ScanProgress()
    try:
        found = scan(path, progress=progress)
    except SpecError as exc:
        usage(str(exc))
    finally:
        progress.stop()
    for skipped in found.skipped:
        err_console.print(
            f"skipped {skipped!r}: not a regular file (a fifo, socket, device or dangling link)"
        )
    body = {
        "files": [e.to_dict() for e in found.entries],
        "kind": found.kind,
        "path": found.root,
        "source_uri": source_uri,
        "description": description,
        "license": license_,
        "parent": parent,
        "made_by_run": made_by_run,
        "made_by_command": made_by_command,
    }
    version = call("register_version", project, name, body)
    if as_json:
        print_json(version)
        return
    ref = f"{version['dataset']}@{version['version']}"
    if version["created"]:
        console.print(f"registered [bold]{ref}[/bold] (new version)")
    else:
        console.print(
            f"[bold]{ref}[/bold]: same content as this existing version; no new version "
            "(jobs read it from the path below)"
        )
    console.print(f"  digest {version['digest']}")
    console.print(
        f"  files {version['file_count']}  bytes {version['total_bytes']} "
        f"({lineage_view.human_bytes(version['total_bytes'])})"
    )
    console.print(f"  path {version['path']}", markup=False)
    console.print(f"  use it in a spec as: datasets: [{{ref: {ref}, verify: digest}}]", markup=False)


# -- reading ----------------------------------------------------------------------------------


@dataset_app.command("list")
def list_datasets(
    project: Annotated[str | None, typer.Option(help="Only this project's.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Datasets of your projects and those shared with them, with their latest version."""
    columns = ("DATASET", "VERSIONS", "LATEST", "DIGEST", "FILES", "SIZE", "SHARED WITH", "REGISTERED")
    print_listing(call("datasets", project), as_json, columns, _dataset_row, none="no datasets")


def _dataset_row(d: dict) -> list[str]:
    latest = d.get("latest") or {}
    return [
        f"{d['project']}/{d['name']}",
        str(d["version_count"]),
        f"v{latest['version']}" if latest else "-",
        lineage_view.short(latest.get("digest")),
        str(latest.get("file_count", "-")),
        lineage_view.human_bytes(latest.get("total_bytes")),
        ", ".join(d["shared_with"]) or "-",
        lineage_view.when(latest.get("registered_at") or d["created_at"]),
    ]


@dataset_app.command("show")
def show_dataset(
    target: Annotated[str, typer.Argument(help="PROJECT/NAME or PROJECT/NAME@VERSION.")],
    project: Annotated[str | None, typer.Option(help="The project, when TARGET is a bare NAME.")] = None,
    files: Annotated[bool, typer.Option("--files", help="Also list every file of the version.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """A dataset and its latest version, or one version (NAME@VERSION); --files lists the manifest."""
    text, _, selector = target.partition("@")
    owner, name = _dataset_name(text, project)
    version = call("dataset_version", owner, name, _version(selector or "latest"), files=files)
    dataset = None if selector else call("dataset", owner, name)
    if as_json:
        print_json(version if dataset is None else {**dataset, "version": version})
        return
    if dataset is not None:
        console.print(
            f"[bold]{owner}/{name}[/bold]  {dataset['version_count']} versions  "
            f"created by {dataset['created_by']}  shared with {', '.join(dataset['shared_with']) or '-'}"
        )
        if dataset["description"]:
            console.print(dataset["description"], markup=False)
    _print_version(version)
    for entry in version.get("files") or []:
        console.print(f"  {entry['sha256']}  {entry['size']:>12}  {entry['path']}", markup=False)


def _print_version(v: dict[str, Any]) -> None:
    console.print(f"[bold]{v['dataset']}@{v['version']}[/bold]  digest {v['digest']}")
    facts = [
        ("kind", v["kind"]),
        ("files", str(v["file_count"])),
        ("bytes", f"{v['total_bytes']} ({lineage_view.human_bytes(v['total_bytes'])})"),
        ("path", v["path"] or "-"),
        ("source", v["source_uri"]),
        ("registered", f"{v['registered_by']} {lineage_view.when(v['registered_at'])}"),
    ]
    if v.get("license"):
        facts.append(("license", v["license"]))
    if v.get("made_by_run_id"):
        facts.append(("made by run", v["made_by_run_id"]))
    if v.get("made_by_command"):
        facts.append(("made by command", v["made_by_command"]))
    for key, value in facts:
        console.print(f"  {key:<16} {value}", markup=False)
    if v.get("description"):
        console.print(f"  {v['description']}", markup=False)


@dataset_app.command("versions")
def list_versions(dataset: DatasetArg, as_json: JsonOpt = False) -> None:
    """Every version of a dataset, oldest first."""
    owner, name = _dataset_name(dataset)
    versions = call("dataset_versions", owner, name)
    by_id = {v["id"]: v for v in versions}

    def row(v: dict) -> list[str]:
        parent = by_id.get(v["parent_id"]) if v["parent_id"] else None
        return [
            f"v{v['version']}",
            lineage_view.short(v["digest"]),
            str(v["file_count"]),
            lineage_view.human_bytes(v["total_bytes"]),
            (f"v{parent['version']}" if parent else "another dataset") if v["parent_id"] else "-",
            v["registered_by"],
            lineage_view.when(v["registered_at"]),
        ]

    columns = ("VERSION", "DIGEST", "FILES", "SIZE", "PARENT", "REGISTERED BY", "REGISTERED")
    print_listing(versions, as_json, columns, row)


@dataset_app.command("diff")
def diff_versions(
    dataset: DatasetArg,
    a: Annotated[str, typer.Argument(help=f"The older version: {VERSION_HELP}.")],
    b: Annotated[str, typer.Argument(help="The newer version.")] = "latest",
    as_json: JsonOpt = False,
) -> None:
    """Files added, removed and changed (by path) from version A to version B."""
    owner, name = _dataset_name(dataset)
    diff = call("dataset_diff", owner, name, _version(a), _version(b))
    if as_json:
        print_json(diff)
        return
    console.print(
        f"{owner}/{name}: v{diff['a']['version']} ({lineage_view.short(diff['a']['digest'])}) -> "
        f"v{diff['b']['version']} ({lineage_view.short(diff['b']['digest'])})"
    )
    for entry in diff["added"]:
        console.print(f"[green]+ {escape(entry['path'])}[/green]  {entry['size']} bytes")
    for entry in diff["removed"]:
        console.print(f"[red]- {escape(entry['path'])}[/red]  {entry['size']} bytes")
    for change in diff["changed"]:
        console.print(
            f"[yellow]~ {change['path']}[/yellow]  {change['a']['size']} -> {change['b']['size']} bytes, "
            f"sha256 {lineage_view.short(change['a']['sha256'])} -> "
            f"{lineage_view.short(change['b']['sha256'])}"
        )
    console.print(
        f"{len(diff['added'])} added, {len(diff['removed'])} removed, {len(diff['changed'])} changed, "
        f"{diff['unchanged']} unchanged"
    )


@dataset_app.command("share")
def share(
    dataset: DatasetArg,
    with_: Annotated[str, typer.Option("--with", help="The project that may then read and use it.")],
    as_json: JsonOpt = False,
) -> None:
    """Let another project read the dataset and use its versions in runs (leads of its project)."""
    _share(dataset, with_, on=True, as_json=as_json)


@dataset_app.command("unshare")
def unshare(
    dataset: DatasetArg,
    with_: Annotated[str, typer.Option("--with", help="The project to stop sharing with.")],
    as_json: JsonOpt = False,
) -> None:
    """Stop sharing the dataset with a project."""
    _share(dataset, with_, on=False, as_json=as_json)


def _share(dataset: str, other: str, *, on: bool, as_json: bool) -> None:
    owner, name = _dataset_name(dataset)
    if not names.NAME.fullmatch(other):
        usage(f"--with {other!r} is not a valid project name; use {names.NAME_HELP}")
    found = call("share_dataset", owner, name, other, on=on)
    if as_json:
        print_json(found)
    else:
        console.print(
            f"{owner}/{name} is shared with: {', '.join(found['shared_with']) or 'no other project'}"
        )
