"""Where a job's stdout and stderr go: Slurm's filename patterns, checked and expanded (no I/O).

A spec's ``stdout``/``stderr`` is an absolute path that may hold Slurm's
tokens (``%j`` job id, ``%A``/``%a`` array job and task, ``%x`` job name,
``%u`` user, ``%N`` first node, ``%n`` node number, ``%%`` a percent sign).
Without one, output goes to the run directory (``stdout-%j.log``,
``stdout-%A_%a.log`` for an array); under sbatch semantics (``gw sbatch``)
stderr without a pattern of its own joins stdout, as sbatch does.
"""

from __future__ import annotations

import posixpath
from typing import Literal

from gateway.core.explain.text import expand_hostlist
from gateway.core.runs.values import Attempt, Run

Stream = Literal["stdout", "stderr"]
STREAMS: tuple[Stream, ...] = ("stdout", "stderr")
PSEUDO_ROOTS = ("/proc", "/sys", "/dev")  # never a place for job output, never read back


def default_pattern(run_dir: str, stream: Stream, *, array: bool) -> str:
    """The gateway's own place for a stream: in the run directory."""
    return f"{run_dir}/{stream}-" + ("%A_%a" if array else "%j") + ".log"


def pattern_problem(pattern: str) -> str | None:
    """Why an output pattern is not a place for job output (a pseudo file system), or None."""
    normal = posixpath.normpath(pattern)
    if normal == "/dev/null":  # sbatch -o /dev/null: the job's output is thrown away, as asked
        return None
    for root in PSEUDO_ROOTS:
        if normal == root or normal.startswith(root + "/"):
            return f"{pattern} is under {root}, which is not a place for job output; use a real directory"
    return None


def fixed_directory(pattern: str) -> str:
    """The deepest directory of ``pattern`` that holds no Slurm token (where the job's user must write)."""
    parts = posixpath.dirname(pattern).split("/")
    kept = []
    for part in parts:
        if "%" in part:
            break
        kept.append(part)
    return "/".join(kept) or "/"


def log_path(run: Run, attempt: Attempt, stream: Stream, task: str | None) -> str:
    """The file Slurm writes ``stream`` of ``attempt`` (array task ``task``) to, tokens expanded."""
    array = attempt.array_size is not None
    pattern = getattr(run.spec, stream)
    if pattern is None and stream == "stderr" and run.spec.semantics == "sbatch":
        pattern = run.spec.stdout  # sbatch joins stderr to stdout when no -e is given
    pattern = pattern or default_pattern(run.run_dir, stream, array=array)
    job_id = attempt.job_id or "unknown"
    own_id = job_id
    if array and task is not None:
        own_id = str(attempt.tasks.get(task, {}).get("job_id") or job_id)
    nodes = expand_hostlist(attempt.node_list or "")
    tokens = {
        "%A": job_id,
        "%a": task or "",
        "%j": own_id,
        "%J": own_id,
        "%x": run.name,
        "%u": run.os_user or "",
        "%N": nodes[0] if nodes else "",
        "%n": "0",
    }
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append("%" if pair == "%%" else tokens.get(pair, pair))
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def array_indices(run: Run, attempt: Attempt) -> list[int] | None:
    """The array task indices of ``attempt`` (the sweep's), or None for a plain job."""
    if attempt.array_size is None:
        return None
    return (
        run.spec.sweep.task_indices()
        if run.spec.sweep
        else sorted(int(k) for k in attempt.tasks if k.isdigit())
    )


def default_task(run: Run, attempt: Attempt) -> str | None:
    """The array task whose log is shown when none is named: the first one (None for a plain job)."""
    if attempt.array_size is None:
        return None
    indices = run.spec.sweep.task_indices() if run.spec.sweep else [0]
    return str(indices[0])


def failed_task(attempt: Attempt) -> str | None:
    """The first array task that did not succeed (its files tell why the attempt failed), or None."""
    if attempt.array_size is None:
        return None
    failed = [k for k, t in sorted(attempt.tasks.items()) if t.get("state") not in ("succeeded", None)]
    return failed[0] if failed else None
