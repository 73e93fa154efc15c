"""gw trace and gw compare, and what gw submit and gw show add for lineage.

``gw trace`` follows a file (by its sha256, computed here, with its
evaluations, releases and aliases), a run, an eval result or a dataset version through the
lineage API; ``gw compare`` puts two runs side
by side.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gateway.cli.common import SHA256_HEX, JsonOpt, call, client, fail, usage
from gateway.cli.eval import eval_view
from gateway.cli.lineage import lineage_view
from gateway.cli.output import console, err_console, print_json
from gateway.cli.releases import release_view
from gateway.client.errors import ApiError
from gateway.core import names
from gateway.core.lineage.dataset_ref import DATASET_REF_HELP, parse_dataset_ref
from gateway.errors import SpecError

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient

# -- trace and compare -----------------------------------------------------------------------


def trace(
    target: Annotated[
        str,
        typer.Argument(
            help="A file, a sha256 (64 hex digits), a run id (r-...), an eval result (er-...) "
            "or PROJECT/NAME@N."
        ),
    ],
    as_json: JsonOpt = False,
) -> None:
    """Where a file, run, eval result or dataset version came from, and what was made from it (for a file:
    down to its releases and the aliases that point at them)."""
    kind, key = trace_target(target)
    render: Callable[[dict[str, Any]], Any]
    if kind == "artifact":
        found = call("trace_artifact", key)
        found["evaluations"] = _artifact_evals(key)
        found["releases"] = _artifact_releases(key)
        render = _artifact_tree
    elif kind == "eval_result":
        found = call("trace_eval_result", key)
        render = eval_view.result_trace_tree
    elif kind == "run":
        found = call("trace_run", key)
        render = lineage_view.run_tree
    else:
        ref = parse_dataset_ref(key)
        found = call("trace_dataset", ref.project, ref.name, ref.version)
        render = lineage_view.dataset_trace_tree
    if as_json:
        print_json(found)
    else:
        console.print(render(found))


def trace_target(target: str) -> tuple[str, str]:
    """What ``gw trace TARGET`` names: ("artifact", sha256) for a local file or a sha256, ("run", id),
    ("eval_result", id) or ("dataset", PROJECT/NAME@VERSION). A file here is hashed locally. Exits 2
    for anything else."""
    if os.path.lexists(target):
        if os.path.isdir(target):
            usage(f"{target} is a directory; trace one of its files or a dataset version (PROJECT/NAME@N)")
        from gateway.adapters.files import sha256_file

        try:
            return "artifact", sha256_file(target)[0]
        except SpecError as exc:
            usage(str(exc))
    if SHA256_HEX.fullmatch(target):
        return "artifact", target.lower()
    if "@" in target:
        try:
            ref = parse_dataset_ref(target)
        except ValueError as exc:
            usage(str(exc))
        if ref.project is None:
            usage(f"dataset {target!r}: name its project too (PROJECT/{target})")
        return "dataset", target
    if target.startswith("r-") and names.NAME.fullmatch(target):
        return "run", target
    if re.fullmatch(r"er-[0-9a-f]{16}", target):
        return "eval_result", target
    if "/" in target or target.startswith("."):
        usage(f"no such file: {target}")
    usage(
        f"{target!r} is not a file here, a sha256 (64 hex digits), a run id (r-...) or a dataset version "
        f"({DATASET_REF_HELP})"
    )


def _artifact_evals(sha256: str) -> dict[str, Any] | None:
    """The evaluations of an artifact, or None where there are none to show (or an older gateway)."""
    try:
        return client().artifact_evals(sha256)
    except ApiError as exc:
        if exc.status in (404, 405):
            return None
        fail(exc)


def _artifact_releases(sha256: str) -> dict[str, Any] | None:
    """The releases of an artifact and their aliases, or None from an older gateway."""
    try:
        return client().registry("GET", f"/lineage/artifacts/{sha256}/releases")
    except ApiError as exc:
        if exc.status in (404, 405):
            return None
        fail(exc)


def _artifact_tree(found: dict[str, Any]) -> Any:
    tree = lineage_view.artifact_trace_tree(found)
    if found.get("evaluations"):
        eval_view.artifact_evals_tree(found["evaluations"], tree)
    if found.get("releases") is not None:
        release_view.releases_branch(found["releases"], tree.add("[bold]releases[/bold]"))
    return tree


def compare(
    run_a: Annotated[str, typer.Argument(help="A run id.")],
    run_b: Annotated[str, typer.Argument(help="Another run id.")],
    as_json: JsonOpt = False,
) -> None:
    """Two runs side by side: params that differ, dataset versions, metrics, code and environment."""
    for run_id in (run_a, run_b):
        if not names.NAME.fullmatch(run_id):
            usage(f"{run_id!r} is not a run id (r-...)")
    found = call("compare", run_a, run_b)
    env_diff = _env_diff(run_a, run_b)
    if as_json:
        print_json({**found, "environment_diff": env_diff})
        return
    for title, body in lineage_view.compare_tables(found):
        console.print(f"[bold]{title}[/bold]")
        console.print(body)
        console.print()
    if env_diff is not None:
        from gateway.cli.envs.env_cmds import print_diff

        console.print("[bold]Environment packages[/bold]")
        print_diff(env_diff)


def _env_diff(run_a: str, run_b: str) -> dict | None:
    """The package diff of the registered environments two runs named; None when either named none."""
    from gateway.client.errors import ApiError

    try:
        return client().env_diff(run_a, run_b)
    except ApiError:
        return None


# -- gw submit and gw show -------------------------------------------------------------------

IMAGE_DIGEST_CACHE = Path("~/.cache/gw/image-digests.json")


def add_provenance(spec: dict[str, Any], workdir: str) -> None:
    """Fill what ``gw submit`` knows here and the gateway cannot: ``code`` from the git work tree
    holding ``workdir``, and ``container_digest`` of a local image file (hashed once, then cached
    in ~/.cache/gw/image-digests.json by path, size, mtime and inode). Fields the spec sets win."""
    from gateway.adapters.provenance import code_info, image_info

    if spec.get("code") is None:
        spec["code"] = code_info(workdir)
    image = spec.get("container_image")
    if image and image.startswith("/") and spec.get("container_digest") is None:
        cache = IMAGE_DIGEST_CACHE.expanduser()
        with contextlib.suppress(OSError):  # no cache: the image is hashed each time
            cache.parent.mkdir(parents=True, exist_ok=True)
        info = image_info(image, cache_path=str(cache))
        if info.get("digest"):
            spec["container_digest"] = info["digest"]
        elif info.get("error"):
            err_console.print(f"note: no digest recorded for the image: {info['error']}", markup=False)


def run_outputs(client: GatewayClient, run_id: str) -> dict[str, Any] | None:
    """The run's artifacts and metrics, or None when the gateway does not answer them (an older one)."""
    try:
        return client.run_outputs(run_id)
    except ApiError as exc:
        if exc.status in (404, 405):
            return None
        raise
