"""The template's ``run``: what a spec, its queue's target and what the gateway resolved for it
(datasets, telemetry, the pinned environment) put into an sbatch script.

Values only; ``render_sbatch`` (``render.py``) hands them to the template, whose filters check
and quote each user value (``templates.py``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core import names
from gateway.core.accounting.telemetry import TelemetryLaunch
from gateway.core.envs.record import EnvLaunch
from gateway.core.sbatch import preflight
from gateway.core.sbatch.resubmit import resubmittable
from gateway.core.sbatch.values import compress_indices
from gateway.core.site.secrets import delivered_path
from gateway.core.slurm.tags import resubmit_comment
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import SpecError, SpecIssue


@dataclass(frozen=True)
class SubmitTarget:
    """Where a run goes in Slurm: filled from the queue, never from the user."""

    partition: str
    account: str | None = None
    qos: str | None = None
    gpu_type: str | None = None  # the queue's spelling of the run's GPU type (matched case-insensitively)


def run_context(
    spec: RunSpec,
    *,
    run_id: str,
    run_dir: str,
    target: SubmitTarget,
    inputs: Sequence[preflight.InputCheck] = (),
    telemetry: TelemetryLaunch | None = None,
    environment: EnvLaunch | None = None,
) -> dict[str, Any]:
    """The template's ``run`` for ``spec`` (the arguments as ``render_sbatch``'s); SpecError for a
    path that cannot be bound into a container."""
    context = _context(spec, run_id=run_id, run_dir=run_dir, target=target, inputs=inputs)
    context["telemetry"] = _telemetry(spec, telemetry)
    context["environment"] = _environment(spec, environment, run_dir, inputs)
    context["preflight"].update(preflight.environment_context(environment, spec.modules))
    return context


def _context(
    spec: RunSpec, *, run_id: str, run_dir: str, target: SubmitTarget, inputs: Sequence[preflight.InputCheck]
) -> dict[str, Any]:
    """The template's ``run``: the job's names, then each step's part in the order the script uses."""
    return {
        "run_id": run_id,
        "run_dir": run_dir,
        "spec_sha256": spec.spec_hash(),
        "job_name": spec.name,
        "project": spec.project,
        **_placement(spec, target),
        **_sbatch_options(spec),
        **_job_variables(spec, run_dir, inputs),
        **_program(spec, run_id, target),
        **_array(spec),
        **preflight.template_context(spec, inputs),  # run.preflight: checks, modules, venv, exit codes
    }


def _placement(spec: RunSpec, target: SubmitTarget) -> dict[str, Any]:
    """Where the job runs and what it holds: partition, account, QoS, tasks, CPUs, memory, time, GPUs."""
    res = spec.resources
    gpu_type = target.gpu_type or res.gpu_type
    typed = f"{gpu_type}:" if gpu_type else ""
    return {
        "partition": target.partition,
        "account": target.account,
        "qos": spec.qos or target.qos,
        "nodes": res.nodes,
        "ntasks": res.ntasks,
        "tasks_per_node": res.tasks_per_node,
        "cpus_per_task": res.cpus_per_task,
        "cpus_per_gpu": res.cpus_per_gpu,
        "mem_mb": res.mem_mb,
        "mem_per_cpu_mb": res.mem_per_cpu_mb,
        "mem_per_gpu_mb": res.mem_per_gpu_mb,
        "walltime_min": res.walltime_min,
        "gres": f"gpu:{typed}{res.gpus_per_node}" if res.gpus_per_node else None,
        "gpus": f"{typed}{res.gpus}" if res.gpus else None,
        "gpus_per_task": f"{typed}{res.gpus_per_task}" if res.gpus_per_task else None,
        "gpus_per_node": res.gpus_per_node,
    }


def _sbatch_options(spec: RunSpec) -> dict[str, Any]:
    """The sbatch-style spec's own options: its submit directory, job name, dependency, signal, verbatim."""
    return {
        "sbatch_semantics": spec.semantics == "sbatch",
        "submit_dir": spec.submit_dir,
        "slurm_job_name": spec.slurm_job_name,
        "dependency": spec.dependency,
        "signal": spec.signal,
        # verbatim options, in a stable order; each value matched its strict pattern in the spec
        "slurm_options": sorted(spec.slurm_options.items()),
    }


def _job_variables(spec: RunSpec, run_dir: str, inputs: Sequence[preflight.InputCheck]) -> dict[str, Any]:
    """What reaches the job's environment: its variables, params, secrets' files and datasets."""
    return {
        "env": dict(spec.env),
        # --export=NAME,... (NONE for none): Slurm's variables and these only, as sbatch's named export
        "export_names": (",".join(sorted(spec.env)) or "NONE") if spec.export == "named" else None,
        "params": _param_set(spec.params),
        # secrets: the variable and the file the job reads it from (the user's own, or the one the
        # gateway writes into the run directory for a site or project secret); never the value
        "secrets": [
            {"name": name, "file": item.file or delivered_path(run_dir, name), "json": json.dumps(name)[1:-1]}
            for name, item in sorted(spec.secrets.items())
        ],
        # GW_DATASETS: every dataset the job reads, as JSON; registered ones also as GW_DATASET_<NAME>.
        "datasets_json": json.dumps(
            [{"path": p} for p in spec.dataset_paths()]
            + [{"name": i.name, "ref": i.ref, "digest": i.digest, "path": i.path} for i in inputs]
        ),
        "dataset_vars": {i.env_var: i.path for i in inputs},
    }


def _program(spec: RunSpec, run_id: str, target: SubmitTarget) -> dict[str, Any]:
    """What the job runs and how: its directory, image, launcher, command or script, files, hold, requeue."""
    return {
        "workdir": spec.workdir,
        "container_image": spec.container_image,
        "launcher": spec.launcher,
        "command": spec.command,
        "command_is_shell": isinstance(spec.command, str),
        # the copy the job runs: its #SBATCH account, partition and comment are Slurm's, so that a job
        # resubmitting its own script (sbatch "$0") is booked right and found again (resubmit.py)
        "script": None
        if spec.script is None
        else resubmittable(
            spec.script, account=target.account, partition=target.partition, comment=resubmit_comment(run_id)
        ),
        "resubmit_comment": resubmit_comment(run_id),
        "script_args": list(spec.script_args),
        "stdout": spec.stdout,
        "stderr": spec.stderr,
        "hold": spec.hold,
        "requeue": spec.requeue,
    }


def _array(spec: RunSpec) -> dict[str, Any]:
    """A sweep's array: each task's index and param set, and the --array value (``%max_parallel``)."""
    if spec.sweep is None:
        return {"array_tasks": None, "array_spec": None}
    indices = spec.sweep.task_indices()
    tasks = [
        {"index": index, **_param_set({**spec.params, **override})}
        for index, override in zip(indices, spec.sweep.expand(), strict=True)
    ]
    array_spec = compress_indices(indices)
    if spec.sweep.max_parallel:
        array_spec += f"%{spec.sweep.max_parallel}"
    return {"array_tasks": tasks, "array_spec": array_spec}


def _environment(
    spec: RunSpec, launch: EnvLaunch | None, run_dir: str, inputs: Sequence[preflight.InputCheck]
) -> dict[str, Any] | None:
    """run.environment: the pinned environment, and for an image the runtime's argv words (quoted)."""
    if launch is None:
        return None
    out: dict[str, Any] = {
        "ref": launch.ref,
        "ref_json": json.dumps(launch.ref)[1:-1],
        "kind": launch.kind,
        "observe_file": launch.observe_file,
        "image_id": launch.image_id,
        "archive": launch.archive,
        "runtime": launch.runtime,
        "run_words": None,
    }
    if launch.kind == "image":
        assert launch.image_id is not None
        # the job's own paths, bound at the same place inside; datasets read-only
        binds = [(run_dir, "rw")]
        for path, what in [(spec.workdir, "workdir"), (spec.submit_dir, "submit_dir")]:
            if path:
                binds.append((_bind_path(path, what), "rw"))
        for path in [*spec.dataset_paths(), *(i.path for i in inputs)]:
            binds.append((_bind_path(path, "datasets"), "ro"))
        words = [launch.runtime, "run", "--rm", "--network=host", "--workdir", spec.workdir or run_dir]
        for path, mode in dict.fromkeys(binds):
            words += ["--volume", f"{path}:{path}:{mode}"]
        # the job's variables pass by name: the runtime copies their values from the job's environment
        names_passed = ["GW_*", "SLURM_*", *sorted(spec.env), *sorted(spec.secrets)]
        for name in names_passed:
            words += ["--env", name]
        words.append(launch.image_id.removeprefix("sha256:"))
        out["run_words"] = " ".join(shlex.quote(w) for w in words)
    return out


def _bind_path(path: str, what: str) -> str:
    if not names.SAFE_PATH.fullmatch(path):
        raise SpecError(
            [SpecIssue(what, f"a path bound into a container must be {names.SAFE_PATH_HELP}", path)]
        )
    return path


def _telemetry(spec: RunSpec, launch: TelemetryLaunch | None) -> dict[str, Any] | None:
    """run.telemetry: the sampler's command for a job that asks for GPUs; None otherwise."""
    res = spec.resources
    gpu_options = {"gres", "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket"}
    wants_gpus = res.gpus_per_node or res.gpus or res.gpus_per_task or gpu_options & set(spec.slurm_options)
    if launch is None or not wants_gpus:
        return None
    return {
        "python": launch.python,
        "sampler": launch.sampler_path,
        "interval_s": f"{launch.interval_s:g}",
        "nvml": launch.nvml,
    }


def _param_set(params: dict[str, Any]) -> dict[str, Any]:
    """A param set as the script needs it: its JSON, and scalars as GW_PARAM_<KEY> variables."""
    scalars = {}
    for key, value in params.items():
        var = "GW_PARAM_" + key.upper()
        if names.ENV_NAME.fullmatch(var) and isinstance(value, str | int | float | bool):
            scalars[var] = value if isinstance(value, str) else json.dumps(value)
    return {"json": json.dumps(params, sort_keys=True), "vars": scalars}
