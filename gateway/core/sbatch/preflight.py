"""The job's pre-flight: what the templates check before the user's command, per run.

``template_context`` gives the templates the dataset paths and manifests to
check, the container image, modules and venv. What each step reports, and
the exit codes of a failed step, are ``gateway.core.runs.steps``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core.envs.record import EnvLaunch
from gateway.core.runs.steps import EXIT_DATA_ACCESS, EXIT_ENVIRONMENT, EXIT_OUTPUT
from gateway.core.spec.run_spec import RunSpec

CONTAINER_RUNTIME = "apptainer"  # the program the templates wrap a container_image command with


@dataclass(frozen=True)
class InputCheck:
    """A registered dataset version resolved for one run: what its job is given and checks."""

    name: str  # the dataset's name
    ref: str  # the exact version: project/name@number
    digest: str  # the version's manifest digest
    path: str  # where the job reads it
    env_var: str  # GW_DATASET_<NAME>, holding ``path``
    kind: str  # directory | file
    file_count: int
    manifest: str | None = None  # verify: digest -- the sha256sum manifest the gateway wrote for the job


def template_context(spec: RunSpec, inputs: Sequence[InputCheck] = ()) -> dict[str, Any]:
    """What the templates' pre-flight section needs from a spec and its resolved datasets.

    Paths come twice: as they are (the template shell-quotes them) and as
    JSON string content (escaped here, ASCII only), so that a hostile path
    cannot break a steps line. A plain path is checked for existence (and its
    sha256 when ``dataset_digests`` gives one); a registered version also
    against its manifest when it was asked for with ``verify: digest``.
    """
    checks = [
        {"path": p, "json": _json_content(p), "sha256": spec.dataset_digests.get(p, ""), "manifest": None}
        for p in spec.dataset_paths()
    ]
    for item in inputs:
        check: dict[str, Any] = {"path": item.path, "json": _json_content(item.path), "sha256": ""}
        if item.manifest:
            check["manifest"] = {
                "file": item.manifest,
                "kind": item.kind,
                "count": item.file_count,
                "ref_json": _json_content(item.ref),
            }
        else:
            check["manifest"] = None
        checks.append(check)
    image = spec.container_image
    return {
        "preflight": {
            "exit_data_access": EXIT_DATA_ACCESS,
            "exit_environment": EXIT_ENVIRONMENT,
            "exit_output": EXIT_OUTPUT,
            "inputs": checks,
            "image_path": image if image and image.startswith("/") else None,
            "image_json": _json_content(image or ""),
            "container_runtime": CONTAINER_RUNTIME if image else None,
            "modules": list(spec.modules),
            "venv": spec.venv,
            "venv_json": _json_content(spec.venv or ""),
        }
    }


def environment_context(launch: EnvLaunch | None, spec_modules: Sequence[str] = ()) -> dict[str, Any]:
    """The pre-flight's part of a registered environment: its modules load after the spec's own, and
    its venv is the one activated (a spec naming an environment has neither venv nor image)."""
    if launch is None:
        return {}
    out: dict[str, Any] = {}
    if launch.modules:
        out["modules"] = [*spec_modules, *launch.modules]
    if launch.venv:
        out.update(venv=launch.venv, venv_json=_json_content(launch.venv))
    if launch.kind == "image":
        out["container_runtime"] = launch.runtime
    return out


def _json_content(text: str) -> str:
    """``text`` as the inside of a JSON string literal (quotes, backslashes, controls, non-ASCII escaped)."""
    return json.dumps(text)[1:-1]
