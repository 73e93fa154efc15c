"""gw env ... (register, list, versions, show, diff, run): training environments, versioned.

``gw env register`` reads a lock file here and sends its text (a python environment, then built by
a Slurm job), names an image archive on the shared file system (the gateway reads its image id
there), or lists modules. ``gw env diff`` compares two versions or the environments of two runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.output import console, print_json, print_listing
from gateway.core import names
from gateway.core.envs.diff import diff_lines
from gateway.core.lineage.dataset_ref import parse_dataset_ref

env_app = typer.Typer(
    no_args_is_help=True, help="Training environments: locked venvs, images and module lists, versioned."
)
EnvArg = Annotated[str, typer.Argument(help="PROJECT/NAME of the environment.", metavar="PROJECT/NAME")]
MAX_LOCK_BYTES = 512 * 1024


def register(app: typer.Typer) -> None:
    """Add ``gw env`` to ``app``."""
    app.add_typer(env_app, name="env")


def _name(text: str) -> tuple[str, str]:
    owner, sep, name = text.rpartition("/")
    if not sep:
        usage(f"environment {text!r}: give it as PROJECT/NAME")
    for what, value in (("project", owner), ("name", name)):
        if not names.NAME.fullmatch(value):
            usage(f"environment {text!r}: {what} {value!r} is not valid; use {names.NAME_HELP}")
    return owner, name


def _ref(text: str) -> tuple[str, str, str]:
    """PROJECT/NAME[@VERSION] -> (project, name, version), latest when none is given."""
    if "@" not in text:
        text += "@latest"
    try:
        ref = parse_dataset_ref(text)
    except ValueError as exc:
        usage(str(exc).replace("dataset", "environment"))
    if ref.project is None:
        usage(f"environment {text!r}: give it as PROJECT/NAME@VERSION")
    return ref.project, ref.name, ref.version


@env_app.command("register")
def register_version(
    environment: EnvArg,
    lock: Annotated[
        Path | None,
        typer.Option(help="A lock file (pinned with hashes): a python environment, built by a job."),
    ] = None,
    build_queue: Annotated[
        str | None, typer.Option(help="The project's queue the build job runs in.")
    ] = None,
    image: Annotated[
        Path | None, typer.Option(help="An image archive (podman save) on the shared file system.")
    ] = None,
    module: Annotated[
        list[str] | None, typer.Option(help="A module (name/version), in load order; repeat.")
    ] = None,
    description: Annotated[str, typer.Option(help="What it is for.")] = "",
    parent: Annotated[
        str | None, typer.Option(help="The version it derives from (default: the latest).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Register a version of PROJECT/NAME: exactly one of --lock, --image or --module."""
    project, name = _name(environment)
    given = [k for k, v in (("--lock", lock), ("--image", image), ("--module", module)) if v]
    if len(given) != 1:
        usage("give exactly one of --lock FILE (python), --image ARCHIVE (image) or --module NAME (modules)")
    body: dict[str, Any] = {"description": description, "parent": parent}
    if lock is not None:
        try:
            data = lock.read_bytes()
        except OSError as exc:
            usage(f"cannot read the lock file {lock}: {exc.strerror or exc}")
        if len(data) > MAX_LOCK_BYTES:
            usage(f"the lock file {lock} has {len(data)} bytes; at most {MAX_LOCK_BYTES}")
        try:
            body.update(kind="python", lock=data.decode("utf-8"), build_queue=build_queue)
        except UnicodeDecodeError:
            usage(f"the lock file {lock} is not UTF-8 text")
        if not build_queue:
            usage("a python environment is built by a job: give --build-queue QUEUE (one of the project's)")
    elif image is not None:
        body.update(kind="image", archive=str(image.absolute()))
    else:
        body.update(kind="modules", modules=list(module or []))
    version = call("register_env_version", project, name, body)
    if as_json:
        print_json(version)
        return
    if version["created"]:
        console.print(f"registered [bold]{escape(version['ref'])}[/bold] ({version['kind']})")
    else:
        console.print(f"[bold]{escape(version['ref'])}[/bold]: same content as this existing version")
    _summary(version)
    if version["status"] == "building":
        console.print(
            f"  building in run {version['build_run_id']}: gw env show {version['ref']}", markup=False
        )
    console.print(f"  use it in a spec as: environment: {version['ref']}", markup=False)


def _summary(v: dict) -> None:
    console.print(f"  digest {v['digest']}  status {v['status']}", markup=False)
    if v.get("image_id"):
        console.print(f"  image {v['image_id']}  archive {v['location']}", markup=False)
    if v.get("modules"):
        console.print(f"  modules {' '.join(v['modules'])}", markup=False)
    if v["kind"] == "python":
        console.print(
            f"  venv {v['location']}  locked {len(v['locked'])}  installed {v['package_count']}"
            + (f"  sha256 {v['packages_sha256']}" if v.get("packages_sha256") else ""),
            markup=False,
        )
    if v.get("failure"):
        console.print(f"  build failed: {v['failure']}", markup=False)
    for earlier in v.get("build_failures") or []:
        run = f" (run {earlier['build_run_id']})" if earlier.get("build_run_id") else ""
        console.print(f"  build {earlier['attempt']}{run} failed: {earlier['failure']}", markup=False)
    if v.get("parent_diff"):
        lines = diff_lines(v["parent_diff"])
        console.print(f"  changes from its parent: {len(lines) or 'none'}", markup=False)
        for line in lines:
            console.print(f"    {line}", markup=False)


@env_app.command("list")
def list_environments(
    project: Annotated[str | None, typer.Option(help="Only this project's.")] = None, as_json: JsonOpt = False
) -> None:
    """Environments of your projects, with their latest version."""
    columns = ("ENVIRONMENT", "VERSIONS", "LATEST", "KIND", "STATUS", "DIGEST")
    print_listing(call("environments", project), as_json, columns, _environment_row, none="no environments")


def _environment_row(e: dict) -> list[str]:
    latest = e.get("latest") or {}
    return [
        escape(f"{e['project']}/{e['name']}"),
        str(e["version_count"]),
        f"v{latest['version']}" if latest else "-",
        latest.get("kind", "-"),
        latest.get("status", "-"),
        (latest.get("digest") or "-")[:12],
    ]


@env_app.command("versions")
def list_versions(environment: EnvArg, as_json: JsonOpt = False) -> None:
    """Every version of PROJECT/NAME, oldest first."""
    project, name = _name(environment)
    columns = ("VERSION", "KIND", "STATUS", "DIGEST", "PACKAGES", "BY", "REGISTERED")
    print_listing(call("env_versions", project, name), as_json, columns, _version_row)


def _version_row(v: dict) -> list[str]:
    return [
        f"v{v['version']}",
        v["kind"],
        v["status"],
        v["digest"][:12],
        str(v["package_count"] or len(v["locked"]) or len(v["modules"])),
        escape(v["registered_by"]),
        v["registered_at"][:19],
    ]


@env_app.command("show")
def show_version(
    ref: Annotated[str, typer.Argument(help="PROJECT/NAME[@VERSION] (default latest).", metavar="REF")],
    as_json: JsonOpt = False,
) -> None:
    """One version: its digest, status, location and packages."""
    project, name, version = _ref(ref)
    v = call("env_version", project, name, version)
    if as_json:
        print_json(v)
        return
    console.print(f"[bold]{escape(v['ref'])}[/bold] ({v['kind']}) by {escape(v['registered_by'])}")
    _summary(v)
    if v.get("packages"):
        console.print("  installed:", markup=False)
        for pkg, ver in sorted(v["packages"].items()):
            console.print(f"    {pkg}=={ver}", markup=False)


@env_app.command("diff")
def diff(
    a: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION, or a run id.")],
    b: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION, or a run id.")],
    project: Annotated[str | None, typer.Option(help="The project of a reference without one.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Packages added, removed, upgraded and downgraded from A to B."""
    found = call("env_diff", a, b, project=project)
    if as_json:
        print_json(found)
        return
    print_diff(found)


def print_diff(found: dict) -> None:
    """An environment diff (``EnvDiffPublic``) in words: a line per change, then the counts."""
    console.print(f"{escape(found['old'])} -> {escape(found['new'])}")
    if found.get("image") and found["image"]["old"] != found["image"]["new"]:
        console.print(f"  image {found['image']['old']} -> {found['image']['new']}", markup=False)
    lines = diff_lines(found)
    for line in lines:
        console.print(f"  {line}", markup=False)
    console.print(f"  {len(lines)} changed, {found['unchanged']} unchanged", markup=False)


@env_app.command("scan")
def scan(
    ref: Annotated[str, typer.Argument(help="PROJECT/NAME[@VERSION] (default latest).", metavar="REF")],
    as_json: JsonOpt = False,
) -> None:
    """Known advisories in a version's packages (the site's OSV directory); exit 1 when any is found."""
    project, name, version = _ref(ref)
    found = call("env_scan", project, name, version)
    if as_json:
        print_json(found)
    else:
        _findings(found["findings"])
        source = found["source"] or "no advisory directory (the site sets GATEWAY_ADVISORY_DIR)"
        console.print(
            f"{found['ref']}: {found['scanned']} packages, {found['advisories']} advisories ({source})",
            markup=False,
        )
        for problem in found["problems"]:
            console.print(f"  unreadable: {problem}", markup=False)
    if found["findings"]:
        raise typer.Exit(1)


def _findings(findings: list[dict]) -> None:
    for f in findings:
        fixed = f" (fixed in {', '.join(f['fixed'])})" if f["fixed"] else ""
        console.print(
            f"  {f['severity']:<8} {f['package']} {f['version']}: {f['advisory']} {f['summary']}{fixed}",
            markup=False,
        )


@env_app.command("run")
def run_environment(
    run_id: Annotated[str, typer.Argument(help="The run.")], as_json: JsonOpt = False
) -> None:
    """The environment a run named, and what each of its jobs found at its start (drift as warnings)."""
    found = call("run_environment", run_id)
    if as_json:
        print_json(found)
        return
    if not found.get("version"):
        record = found.get("record") or {}
        console.print(f"{run_id}: no registered environment ({record.get('kind', 'host')})", markup=False)
        return
    v = found["version"]
    console.print(f"{run_id}: [bold]{escape(v['ref'])}[/bold] ({v['kind']}), digest {v['digest'][:12]}")
    for obs in found["observations"]:
        seen = obs["observed"]
        what = seen.get("image_id") or f"{len(seen.get('packages') or {})} packages"
        console.print(
            f"  job {obs['job_id']}: {what}" + ("" if obs["drift"] else " (as recorded)"), markup=False
        )
    for warning in found["warnings"]:
        console.print(f"  [yellow]warning[/yellow]: {escape(warning)}")
    _findings(found.get("findings") or [])
