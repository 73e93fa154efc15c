"""A batch script's ``#SBATCH`` lines as the job description slurmrestd (OpenAPI v0.0.38) takes.

sbatch reads a script's ``#SBATCH`` lines itself; slurmrestd does not (Slurm
22.05 runs the script it is given with only the JSON ``job`` fields applied).
So the slurmrestd backend turns the directives into those fields here, and a
directive it cannot express is refused by name before anything is sent:
silently dropping one would run a different job than the CLI backend runs.

Pure: no I/O. ``job_description`` raises ``SubmitRejected`` (nothing queued).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gateway.core.sbatch import values
from gateway.core.sbatch.scan import script_directives
from gateway.errors import SubmitRejected


def _flag(value: str | None) -> bool:
    return True


def _yes(value: str | None) -> bool:
    return (value or "yes").lower() not in ("no", "0", "false")


def _text(value: str | None) -> str:
    return value or ""


def _int(value: str | None) -> int:
    if value is None or not value.lstrip("-").isdigit():
        raise ValueError("not a whole number")
    return int(value)


def _mem(value: str | None) -> int:
    return values.mem_mb(value or "", zero_ok=True)


def _minutes(value: str | None) -> int:
    return values.minutes(value or "")


def _signal(value: str | None) -> str:
    text = value or ""
    if ":" in text.split("@")[0]:
        # slurmrestd 22.05's parser refuses the B:/R: prefixes sbatch takes ("Invalid SIGNAL").
        raise ValueError("slurmrestd 22.05 takes no B: or R: prefix in --signal")
    return text


# sbatch long option -> (v0.0.38 job field, value conversion). Checked against a real slurmrestd
# 22.05 by tests/slurm/test_rest_job.py (the job each side queues is compared field by field).
FIELDS: dict[str, tuple[str, Callable[[str | None], Any]]] = {
    "job-name": ("name", _text),
    "partition": ("partition", _text),
    "account": ("account", _text),
    "qos": ("qos", _text),
    "nodes": ("nodes", _text),
    "ntasks": ("tasks", _int),
    "ntasks-per-node": ("tasks_per_node", _int),
    "tasks-per-node": ("tasks_per_node", _int),
    "cpus-per-task": ("cpus_per_task", _int),
    "cpus-per-gpu": ("cpus_per_gpu", _text),
    "mem": ("memory_per_node", _mem),
    "mem-per-cpu": ("memory_per_cpu", _mem),
    "mem-per-gpu": ("memory_per_gpu", _mem),
    "time": ("time_limit", _minutes),
    "time-min": ("time_minimum", _minutes),
    "gres": ("gres", _text),
    "gpus": ("gpus", _text),
    "gpus-per-node": ("gpus_per_node", _text),
    "gpus-per-task": ("gpus_per_task", _text),
    "dependency": ("dependency", _text),
    "signal": ("signal", _signal),
    "hold": ("hold", _flag),
    "chdir": ("current_working_directory", _text),
    "output": ("standard_output", _text),
    "error": ("standard_error", _text),
    "input": ("standard_input", _text),
    "array": ("array", _text),
    "exclude": ("exclude_nodes", _text),
    "constraint": ("constraints", _text),
    "reservation": ("reservation", _text),
    "licenses": ("licenses", _text),
    "mail-type": ("mail_type", _text),
    "mail-user": ("mail_user", _text),
    "nice": ("nice", _int),
    "wckey": ("wckey", _text),
    "prefer": ("prefer", _text),
    "open-mode": ("open_mode", _text),
    "kill-on-invalid-dep": ("kill_on_invalid_dependency", _yes),
    "no-kill": ("no_kill", _flag),
    "spread-job": ("spread_job", _flag),
    "mincpus": ("minimum_cpus_per_node", _int),
    "cores-per-socket": ("cores_per_socket", _int),
    "sockets-per-node": ("sockets_per_node", _int),
    "threads-per-core": ("threads_per_core", _int),
    "ntasks-per-core": ("tasks_per_core", _int),
    "ntasks-per-socket": ("tasks_per_socket", _int),
    "distribution": ("distribution", _text),
    "gres-flags": ("gres_flags", _text),
}
# "requeue": false is ignored by slurmrestd 22.05; its "no_requeue" field is not (checked in tests).
_BOOLEAN = {"requeue": ("requeue", "no_requeue"), "no-requeue": ("no_requeue", "requeue")}
_DROPPED = frozenset({"comment"})  # the gateway's tag is the comment, as with sbatch --comment=TAG


def job_description(
    script: str,
    *,
    comment: str,
    environment: Mapping[str, str],
    working_directory: str,
    exclude_nodes: Sequence[str] = (),
) -> dict[str, Any]:
    """The ``POST /slurm/v0.0.38/job/submit`` body for ``script``: its ``#SBATCH`` lines as job fields,
    ``comment`` as the job's comment, ``environment`` as its whole environment, ``working_directory``
    unless ``--chdir`` says otherwise, ``exclude_nodes`` added to any ``--exclude``.

    Raises SubmitRejected naming the first directive that cannot be read or that the v0.0.38 job
    description cannot express (submit that script through the CLI backend).
    """
    directives, issues = script_directives(script)
    if issues:
        issue = issues[0]
        raise SubmitRejected(f"the script's {issue.path} {issue.message}", command="slurmrestd")
    job: dict[str, Any] = {"current_working_directory": working_directory}
    for name, value, where in directives:
        if name in _DROPPED:
            continue
        if name in _BOOLEAN:
            chosen, other = _BOOLEAN[name]  # the last of --requeue / --no-requeue wins, as in sbatch
            job[chosen] = True
            job.pop(other, None)
            continue
        if name not in FIELDS:
            raise SubmitRejected(
                f"the script's {where} has no field in slurmrestd's v0.0.38 job description; "
                "submit it through the CLI backend (GATEWAY_SLURM_BACKEND=cli)",
                command="slurmrestd",
            )
        field, convert = FIELDS[name]
        try:
            job[field] = convert(value)
        except ValueError as exc:
            raise SubmitRejected(f"the script's {where}={value}: {exc}", command="slurmrestd") from exc
    if exclude_nodes:
        given = [n for n in str(job.get("exclude_nodes", "")).split(",") if n]
        job["exclude_nodes"] = ",".join([*given, *exclude_nodes])
    job["comment"] = comment
    job["environment"] = dict(environment)
    return {"script": script, "job": job}
