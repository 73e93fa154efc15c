"""A run's inputs at submission: its dataset versions resolved, its environment described.

``resolve_inputs`` turns the spec's dataset references into exact versions
the submitting project may use (``latest`` becomes a number), with the path
and variable each job gets. ``write_manifests`` puts the manifest of every
``verify: digest`` input in the run directory, where the job's pre-flight
checks the files against it. ``environment_of`` records the container image
(and digest), the venv's package list hash and the modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.adapters.runhost import RunHost
from gateway.core.access.values import Principal
from gateway.core.envs.record import EnvLaunch
from gateway.core.lineage.manifest import sha256sum_text
from gateway.core.lineage.values import DatasetVersion
from gateway.core.runs.values import NewInput
from gateway.core.sbatch.preflight import InputCheck
from gateway.core.spec.lineage import dataset_env_var, image_ref_digest
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import SpecError, SpecIssue
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.lineage.datasets import DatasetService

INPUTS_DIR = "inputs"  # under the run directory: the manifests the pre-flight checks


@dataclass(frozen=True)
class ResolvedInput:
    position: int
    ref: str  # as the spec wrote it
    version: DatasetVersion
    verify: str
    check: InputCheck

    def record(self) -> NewInput:
        """How the store records this input of a new run."""
        return NewInput(
            position=self.position,
            ref=self.ref,
            version_id=self.version.id,
            path=self.check.path,
            verify=self.verify,
            env_var=self.check.env_var,
        )


def resolve_inputs(
    spec: RunSpec, run_dir: str, *, principal: Principal, datasets: DatasetService | None
) -> list[ResolvedInput]:
    """Every registered dataset of ``spec``, resolved for its project; SpecError/Forbidden/NotFound."""
    uses = spec.dataset_uses()
    if not uses:
        return []
    if datasets is None:
        raise SpecError([SpecIssue("datasets", "this gateway has no dataset registry configured")])
    resolved = []
    for position, use in enumerate(uses):
        version = datasets.resolve(
            use.ref, project=spec.project, principal=principal, for_project=spec.project
        )
        if not version.path:
            raise SpecError(
                [
                    SpecIssue(
                        "datasets",
                        f"{version.ref} was registered without a path on the cluster ({version.source_uri}); "
                        "register it from the directory jobs read",
                        use.ref,
                    )
                ]
            )
        manifest = None
        if use.verify == "digest":
            manifest = f"{run_dir}/{INPUTS_DIR}/{version.name}@{version.number}.sha256"
        check = InputCheck(
            name=version.name,
            ref=version.ref,
            digest=version.digest,
            path=version.path,
            env_var=dataset_env_var(version.name),
            kind=version.kind,
            file_count=version.file_count,
            manifest=manifest,
        )
        resolved.append(ResolvedInput(position, use.ref, version, use.verify, check))
    return resolved


def resolve_environment(
    spec: RunSpec, *, principal: Principal, catalog: EnvCatalog | None
) -> EnvLaunch | None:
    """The registered environment ``spec`` names, pinned (``latest`` becomes a number); None when it
    names none. SpecError/NotFound/Conflict as ``EnvCatalog.launch_for`` (a version still building
    is taken when the spec's ``dependency`` waits for its build job)."""
    if spec.environment is None:
        return None
    if catalog is None:
        raise SpecError([SpecIssue("environment", "this gateway has no environment registry configured")])
    return catalog.launch_for(
        spec.environment, project=spec.project, principal=principal, dependency=spec.dependency
    )


def write_manifests(
    inputs: list[ResolvedInput], datasets: DatasetService, host: RunHost, *, os_user: str
) -> None:
    """Write the sha256sum manifest of every ``verify: digest`` input where its job reads it.

    Written on the run host as the job's OS user, into the run directory it owns.
    """
    for item in inputs:
        if item.check.manifest is None:
            continue
        text = sha256sum_text(datasets.files(item.version))
        host.write_file(item.check.manifest, text.encode("utf-8", "surrogateescape"), as_user=os_user)


def environment_of(
    spec: RunSpec, host: RunHost, *, os_user: str, launch: EnvLaunch | None = None
) -> dict[str, Any]:
    """What the job runs in: container image and digest, venv packages, modules (JSON-ready).

    An image digest comes from the spec (``container_digest``, which ``gw
    submit`` computes for a local image file) or from an ``@sha256:``
    reference; the gateway does not hash image files on the submit path. The
    venv's packages are read on the run host, as the job's OS user sees them. A registered
    environment (``launch``) is recorded as the version it pinned.
    """
    if launch is not None:
        return {**launch.record(), **({"modules_given": list(spec.modules)} if spec.modules else {})}
    env: dict[str, Any] = {}
    if spec.container_image:
        env["container_image"] = spec.container_image
        env["image_digest"] = spec.container_digest or image_ref_digest(spec.container_image)
    if spec.venv:
        env["python_env"] = host.python_env(spec.venv, as_user=os_user)
    if spec.modules:
        env["modules"] = list(spec.modules)
    env["kind"] = "container" if spec.container_image else "venv" if spec.venv else "host"
    return env
