"""Translate ``gw sbatch [sbatch options] SCRIPT [ARGS]`` into a run spec, as sbatch would run it.

Pure: takes the command line, the script's text and the caller's directory and
environment; returns a plain dict that validates as a ``RunSpec`` with
``semantics: sbatch``. Options come from ``#SBATCH`` lines (read, like sbatch,
until the first command line) and from the command line, which wins. Every
sbatch 22.05 option is known (``gateway.core.sbatch.table``): it is modelled
in the spec, passed to Slurm verbatim after a strict check, changes only what
``gw sbatch`` does, or is refused by name with why. Every problem is gathered
into one ``SpecError``, each naming the option and the line it came from.

What sbatch does and the spec keeps: the job's working directory is ``-D`` or
the directory ``gw sbatch`` ran in, which is also ``SLURM_SUBMIT_DIR``; output
goes to ``slurm-%j.out`` (``slurm-%A_%a.out`` for an array) there unless
``-o`` says, with stderr joined unless ``-e`` says; what the script does not
ask for (memory, nodes, tasks per node, CPUs, time) is left to Slurm's defaults.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.core import names
from gateway.core.sbatch import values
from gateway.core.sbatch.scan import Given, directives, scan
from gateway.core.sbatch.table import FIELD_OPTION, REFUSED, pass_problem
from gateway.core.spec.run_spec import build_spec
from gateway.core.spec.slurm_fields import JOB_NAME
from gateway.errors import SpecError, SpecIssue

USAGE = (
    "gw sbatch [sbatch options] [SCRIPT [ARGS...]]  (no SCRIPT: the script is read from stdin)\n"
    "       gw sbatch [sbatch options] --each SCRIPT...  (every script, with these options, as one batch)"
)
WRAP_HEADER = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n"  # sbatch 22.05's own words


_ADDS_UP = frozenset({"mail-type"})
# resources left unset (None) when the script does not ask: Slurm's defaults apply, as under sbatch
_UNSET_KEYS = (
    "nodes",
    "tasks_per_node",
    "cpus_per_task",
    "mem_gb",
    "walltime_min",
)


@dataclass(frozen=True)
class SbatchRequest:
    """What ``gw sbatch`` submits, and how it behaves: a RunSpec as a plain dict plus client flags."""

    spec: dict[str, Any]
    parsable: bool = False
    test_only: bool = False
    wait: bool = False
    quiet: bool = False
    cluster: str | None = None  # -M NAME: --parsable prints N;NAME as sbatch does
    origins: dict[str, str] = field(default_factory=dict)  # spec field -> "#SBATCH line 3: --time"

    def where(self, path: str) -> str:
        """A spec field path (``resources.walltime_min``) in the user's words: the option and its line."""
        return _where(path, self.origins)


def split_gw_sbatch_args(args: list[str]) -> tuple[list[str], str | None, list[str]]:
    """Split ``gw sbatch`` arguments into (options, script path or None for stdin, script arguments).

    The script is the first word that is neither an option nor an option's
    value; every word after it is the script's, even one starting with '-'.
    """
    _, end = scan(args, "option ", [], stop=True)  # option problems are reported by sbatch_to_spec
    if end >= len(args):
        return list(args), None, []
    options = [a for a in args[:end] if a != "--"]
    return options, args[end], list(args[end + 1 :])


def wants_wrap(argv: Sequence[str]) -> bool:
    """True when the command line has ``--wrap`` (then no script is read)."""
    found, _ = scan(list(argv), "option ", [], stop=False)
    return any(g.name == "wrap" for g in found)


def sbatch_to_spec(
    argv: list[str],
    script_text: str | None,
    *,
    script_name: str | None,
    cwd: str,
    environ: Mapping[str, str],
    script_args: Sequence[str] = (),
) -> SbatchRequest:
    """Build a RunSpec dict from sbatch options (``argv`` wins over ``#SBATCH`` lines).

    ``script_text`` is None with ``--wrap``; ``script_name`` is None for a
    script read from stdin. ``cwd`` (absolute) is the submit directory and
    anchors relative ``-D``, ``-o`` and ``-e``; ``environ`` gives
    ``GW_PROJECT``, ``GW_DEFAULT_QUEUE`` and the caller's environment that
    ``--export`` sends (``sbatch_values.export``). Raises SpecError listing
    every refused option and bad value at once (an ``account`` issue when no
    project is given); the returned spec is already validated by ``build_spec``.
    """
    issues: list[SpecIssue] = []
    cli, _ = scan(list(argv), "option ", issues, stop=False)
    wrap = next((g.value for g in reversed(cli) if g.name == "wrap"), None)
    if wrap is not None:
        script_text, script_name = WRAP_HEADER + wrap + "\n", "wrap"
    text = script_text or ""
    given: dict[str, Given] = {}
    for option in ([] if wrap is not None else directives(text, issues)) + cli:
        earlier = given.get(option.name)
        if option.name in _ADDS_UP and earlier is not None and earlier.value and option.value:
            # sbatch ORs each --mail-type into the ones before it (END, then FAIL: END,FAIL)
            option = Given(option.option, option.shown, f"{earlier.value},{option.value}", option.where)
        given[option.name] = option  # later wins: argv is read last, like sbatch
        if option.name in ("requeue", "no-requeue"):
            given.pop("no-requeue" if option.name == "requeue" else "requeue", None)
    for g in given.values():
        if g.option.handling == "refuse":
            issues.append(
                SpecIssue(
                    g.path, f"is refused by gw sbatch (the gateway's rule, not Slurm's): {REFUSED[g.name]}"
                )
            )
    reader = _Reader(given, issues)
    if not text.startswith("#!"):
        issues.append(SpecIssue("script", "the first line must be #! and an interpreter, as sbatch needs"))
    spec = _spec(reader, text, script_name, script_args, cwd, environ)
    origins = {key: given[o].path for key, opts in FIELD_OPTION.items() for o in opts if o in given}
    if not issues:
        try:
            build_spec(spec)
        except SpecError as exc:
            issues.extend(SpecIssue(_where(i.path, origins), i.message, i.value) for i in exc.issues)
    if issues:
        raise SpecError(issues, "gw sbatch")
    cluster = reader.get("clusters")
    return SbatchRequest(
        spec=spec,
        parsable="parsable" in given,
        test_only="test-only" in given,
        wait="wait" in given,
        quiet="quiet" in given,
        cluster=cluster if cluster and "," not in cluster else None,
        origins=origins,
    )


class _Reader:
    """Option values converted, each failure recorded against the option and its line."""

    def __init__(self, given: dict[str, Given], issues: list[SpecIssue]) -> None:
        self.given = given
        self.issues = issues

    def get(self, name: str, convert: Any = str, default: Any = None) -> Any:
        option = self.given.get(name)
        if option is None or option.value is None:
            return default
        try:
            return convert(option.value)
        except ValueError as exc:
            self.issues.append(SpecIssue(option.path, str(exc), option.value))
            return None

    def fail(self, name: str, message: str) -> None:
        option = self.given[name]
        self.issues.append(SpecIssue(option.path, message, option.value))


def _spec(
    reader: _Reader,
    text: str,
    script_name: str | None,
    script_args: Sequence[str],
    cwd: str,
    environ: Mapping[str, str],
) -> dict[str, Any]:
    # sbatch joins a relative -D to the submit directory as written (-D . is "<cwd>/."), and Slurm
    # puts a relative -o/-e under that: the paths are not normalised, so neither are ours.
    chdir = reader.get("chdir")
    workdir = cwd if chdir is None else posixpath.join(cwd, chdir)
    job_name = reader.get("job-name", default=posixpath.basename(script_name) if script_name else "sbatch")
    array = reader.get("array", values.array)
    default_out = "slurm-%A_%a.out" if "array" in reader.given else "slurm-%j.out"
    project = reader.get("account", default=environ.get("GW_PROJECT") or None)
    if project is None:
        reader.issues.append(
            SpecIssue(
                "account",
                "no project given: pass -A PROJECT (or #SBATCH -A), or set project in the gw config file "
                "(or GW_PROJECT)",
            )
        )
    partition = reader.get("partition", default=environ.get("GW_DEFAULT_QUEUE") or "cpu")
    if partition and "," in partition:
        reader.fail("partition", "give one partition: the gateway books each job on one of your queues")
    spec: dict[str, Any] = {
        "name": _run_name(job_name),
        "slurm_job_name": None if names.is_name(job_name) else job_name,
        "project": project,
        "queue": partition,
        "qos": reader.get("qos"),
        "script": text,
        "script_args": list(script_args),
        "launcher": "single",
        "semantics": "sbatch",
        "workdir": workdir,
        "submit_dir": cwd,
        "stdout": reader.get("output", lambda v: _path(workdir, v), _path(workdir, default_out)),
        "stderr": reader.get("error", lambda v: _path(workdir, v)),
        "resources": _resources(reader),
        "sweep": array,
        **_export(reader, environ),
        "hold": "hold" in reader.given or None,
        "requeue": False if "no-requeue" in reader.given else None,
        "dependency": reader.get("dependency"),
        "signal": reader.get("signal"),
        "comment": reader.get("comment"),
        "mail_user": reader.get("mail-user"),
        "slurm_options": _passed(reader) or None,
    }
    return {k: v for k, v in spec.items() if v is not None}


def _export(reader: _Reader, environ: Mapping[str, str]) -> dict[str, Any]:
    """The spec's ``export`` and ``env``: sbatch's default is ``--export=ALL``, the caller's environment."""
    given = reader.given.get("export")
    try:
        mode, env = values.export(given.value if given else None, environ)
    except ValueError as exc:
        reader.fail("export", str(exc))
        return {}
    reserved = sorted(k for k in env if k.startswith(names.RESERVED_ENV_PREFIXES))
    if reserved and given is not None:
        reader.fail("export", f"{reserved[0]} is set by Slurm or the gateway in the job; leave it out")
        return {}
    return {"export": mode, "env": env or None}


def _passed(reader: _Reader) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name, g in sorted(reader.given.items()):
        if g.option.handling != "pass":
            continue
        problem = pass_problem(name, g.value)
        if problem:
            reader.issues.append(SpecIssue(g.path, problem, g.value))
        else:
            out[name] = g.value
    return out


def _resources(reader: _Reader) -> dict[str, Any]:
    def counted(name: str, what: str) -> int | None:
        return reader.get(name, lambda v: values.count(v, what))

    res: dict[str, Any] = {
        "nodes": reader.get("nodes", values.nodes),
        "ntasks": counted("ntasks", "a total task count, such as 4"),
        "tasks_per_node": counted("ntasks-per-node", "tasks per node, such as 4"),
        "cpus_per_task": counted("cpus-per-task", "CPUs per task, such as 8"),
        "cpus_per_gpu": counted("cpus-per-gpu", "CPUs per GPU, such as 8"),
        "walltime_min": reader.get("time", values.minutes),
        "mem_gb": reader.get("mem", values.mem_gb),
        "mem_per_cpu_mb": reader.get("mem-per-cpu", values.mem_mb),
        "mem_per_gpu_mb": reader.get("mem-per-gpu", values.mem_mb),
    }
    # Unset stays unset (None), where the spec's own default is not Slurm's (no -t: the partition's
    # DefaultTime, which the gateway reads for its quotas).
    for key in _UNSET_KEYS:
        res.setdefault(key, None)
    gpu_forms = [n for n in ("gres", "gpus-per-node", "gpus", "gpus-per-task") if n in reader.given]
    if len(gpu_forms) > 1:
        reader.fail(gpu_forms[-1], f"give GPUs one way: --{gpu_forms[0]} is given too")
    elif gpu_forms:
        form = gpu_forms[0]
        kind, number = reader.get(form, values.gres if form == "gres" else values.gpus) or (None, None)
        key = {"gres": "gpus_per_node", "gpus-per-node": "gpus_per_node"}.get(form, form.replace("-", "_"))
        res[key], res["gpu_type"] = number, kind
    return {k: v for k, v in res.items() if v is not None or k in _UNSET_KEYS}


def _where(path: str, origins: Mapping[str, str]) -> str:
    """``path`` as the option (and #SBATCH line) that set it, when one did."""
    for key in (path, path.rsplit(".", 1)[0] if "." in path else path):
        if key in origins:
            return f"{origins[key]} ({path})"
    for key, shown in origins.items():
        if path.startswith(key + "."):
            return f"{shown} ({path})"
    return path


def _path(workdir: str, value: str) -> str:
    return posixpath.join(workdir, value)


def _run_name(job_name: str) -> str:
    """The run's name: the job name where the gateway's name pattern allows it, else a cleaned copy."""
    if names.is_name(job_name):
        return job_name
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", job_name).lstrip("._-")[:63]
    return cleaned if names.is_name(cleaned) else "sbatch"


__all__ = ["JOB_NAME", "USAGE", "SbatchRequest", "sbatch_to_spec", "split_gw_sbatch_args", "wants_wrap"]
