"""Translate ``gw sbatch [sbatch options] SCRIPT [ARGS]`` into a run spec.

Pure: takes the command line, the script's text and the caller's directory and
environment; returns a plain dict that validates as a ``RunSpec``. Options come
from ``#SBATCH`` lines (read, like sbatch, until the first command line) and
from the command line, which wins. Only the options in ``SUPPORTED`` are taken;
any other is refused by name, and every problem is gathered into one
``SpecError``.
"""

from __future__ import annotations

import math
import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core import names
from gateway.core.spec import MAX_ARRAY_TASKS, build_spec
from gateway.errors import SpecError, SpecIssue

# long name -> short letter; every one takes a value except those in _NO_VALUE.
# fmt: off
SUPPORTED: dict[str, str | None] = {
    "job-name": "J", "partition": "p", "account": "A", "nodes": "N", "ntasks": "n", "ntasks-per-node": None,
    "cpus-per-task": "c", "time": "t", "mem": None, "gres": None, "gpus-per-node": None, "output": "o",
    "error": "e", "array": "a", "export": None, "chdir": "D", "parsable": None,
}
# fmt: on
_NO_VALUE = frozenset({"parsable"})
_SHORT = {short: long for long, short in SUPPORTED.items() if short}
SUPPORTED_HELP = ", ".join(f"-{s}/--{long}" if s else f"--{long}" for long, s in SUPPORTED.items())

# sbatch options that take no value (or only "--opt=value"): the word after one
# of these is not its value. Used to find where the script path starts.
# fmt: off
_SBATCH_FLAGS = frozenset((
    "contiguous", "exclusive", "get-user-env", "help", "hold", "ignore-pbs", "immediate", "no-kill",
    "no-requeue", "nice", "overcommit", "oversubscribe", "propagate", "quiet", "reboot", "requeue",
    "spread-job", "test-only", "usage", "use-min-nodes", "verbose", "version", "wait",
))
# fmt: on
_SBATCH_SHORT_FLAGS = frozenset("hHIkOQsuvVW")

# spec field -> the option(s) that set it, to say where a spec error came from
_FIELD_OPTION: dict[str, str | tuple[str, ...]] = {
    "name": "job-name",
    "queue": "partition",
    "project": "account",
    "workdir": "chdir",
    "stdout": "output",
    "stderr": "error",
    "env": "export",
    "sweep": "array",
    "resources.gpu_type": ("gres", "gpus-per-node"),
    "resources.gpus_per_node": ("gres", "gpus-per-node"),
    "resources.tasks_per_node": ("ntasks-per-node", "ntasks"),
    "resources.cpus_per_task": "cpus-per-task",
    "resources.mem_gb": "mem",
    "resources.walltime_min": "time",
}


@dataclass(frozen=True)
class SbatchRequest:
    """What ``gw sbatch`` submits: a RunSpec as a plain dict, and ``--parsable``."""

    spec: dict[str, Any]
    parsable: bool = False


@dataclass
class _Given:
    name: str  # long option name, without dashes
    shown: str  # as written: "-J", "--job-name"
    value: str | None
    where: str  # "option " or "#SBATCH line 3: "

    @property
    def path(self) -> str:
        return self.where + self.shown


def _scan(words: list[str], where: str, issues: list[SpecIssue], *, stop: bool) -> tuple[list[_Given], int]:
    """Read options as sbatch's getopt does; returns them and the index of the first other word."""
    found: list[_Given] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            if stop:
                return found, i
            continue
        if word.startswith("--"):
            name, eq, inline = word[2:].partition("=")
            shown, value = "--" + name, (inline if eq else None)
            takes = name not in _NO_VALUE if name in SUPPORTED else name not in _SBATCH_FLAGS
        elif word.startswith("-") and len(word) > 1:
            letter, rest = word[1], word[2:]
            name, shown, value = _SHORT.get(letter, letter), "-" + letter, rest or None
            takes = letter in _SHORT or letter not in _SBATCH_SHORT_FLAGS
        else:
            if stop:
                return found, i - 1
            label = "command line" if where == "option " else where.rstrip(": ")
            issues.append(SpecIssue(label, "unexpected word: only sbatch options belong here", word))
            continue
        if takes and value is None and i < len(words):
            value, i = words[i], i + 1
        if name not in SUPPORTED:
            issues.append(
                SpecIssue(where + shown, f"not supported by gw sbatch; supported: {SUPPORTED_HELP}")
            )
        elif takes and value is None:
            issues.append(SpecIssue(where + shown, "needs a value"))
        elif not takes and value is not None:
            issues.append(SpecIssue(where + shown, "takes no value", value))
        else:
            found.append(_Given(name, shown, value, where))
    return found, len(words)


def _directives(script_text: str, issues: list[SpecIssue]) -> list[_Given]:
    """Options on ``#SBATCH`` lines before the first command, as sbatch reads them."""
    found: list[_Given] = []
    for lineno, line in enumerate(script_text.splitlines(), start=1):
        if not line.startswith("#SBATCH"):
            # sbatch stops at the first line whose first non-blank character is not '#'.
            if line.strip() and not line.lstrip().startswith("#"):
                break
            continue
        where = f"#SBATCH line {lineno}: "
        try:
            # Like sbatch: quotes group words, and an unescaped '#' starts a comment.
            words = shlex.split(line[len("#SBATCH") :], comments=True)
        except ValueError as exc:
            issues.append(SpecIssue(where.rstrip(": "), f"cannot be split into words: {exc}", line))
            continue
        found.extend(_scan(words, where, issues, stop=False)[0])
    return found


def split_gw_sbatch_args(args: list[str]) -> tuple[list[str], str, list[str]]:
    """Split ``gw sbatch`` arguments into (options, script path, script arguments).

    The script is the first word that is neither an option nor an option's
    value; every word after it is the script's, even one starting with '-'.
    Raises SpecError when no script is given.
    """
    _, end = _scan(args, "option ", [], stop=True)  # option problems are reported by sbatch_to_spec
    if end >= len(args):
        usage = "gw sbatch [sbatch options] SCRIPT [ARGS...]"
        raise SpecError([SpecIssue("script", f"no batch script given; use: {usage}")])
    return list(args[:end]), args[end], list(args[end + 1 :])


def sbatch_to_spec(
    argv: list[str],
    script_text: str,
    *,
    script_name: str,
    cwd: str,
    environ: Mapping[str, str],
    script_args: Sequence[str] = (),
) -> SbatchRequest:
    """Build a RunSpec dict from sbatch options (``argv`` wins over ``#SBATCH`` lines).

    ``cwd`` (absolute) anchors relative ``-D``, ``-o`` and ``-e``; ``environ``
    gives ``GW_DEFAULT_QUEUE``, ``GW_PROJECT`` and the values ``--export=VAR``
    takes. Raises SpecError listing every refused option, bad value and spec
    error at once; the returned spec is already validated by ``build_spec``.
    """
    issues: list[SpecIssue] = []
    given: dict[str, _Given] = {}
    for option in _directives(script_text, issues) + _scan(list(argv), "option ", issues, stop=False)[0]:
        given[option.name] = option  # later wins: argv is read last, like sbatch

    def value(name: str, convert: Any = str, default: Any = None) -> Any:
        option = given.get(name)
        if option is None:
            return default
        try:
            return convert(option.value)
        except ValueError as exc:
            issues.append(SpecIssue(option.path, str(exc), option.value))
            return None

    if not script_text.startswith("#!"):
        issues.append(SpecIssue("script", "the first line must be #! and an interpreter, as sbatch needs"))
    workdir = posixpath.normpath(posixpath.join(cwd, value("chdir", default=".")))
    spec: dict[str, Any] = {
        "name": value("job-name", default=_default_name(script_name)),
        "project": value("account", default=environ.get("GW_PROJECT") or "default"),
        "queue": value("partition", default=environ.get("GW_DEFAULT_QUEUE") or "cpu"),
        "script": script_text,
        "script_args": list(script_args),
        "launcher": "single",
        "workdir": workdir,
        "stdout": value("output", lambda v: posixpath.normpath(posixpath.join(workdir, v))),
        "stderr": value("error", lambda v: posixpath.normpath(posixpath.join(workdir, v))),
        "resources": _resources(given, value, issues),
        "sweep": value("array", _array),
        "env": value("export", lambda v: _export(v, environ)),
    }
    spec = {k: v for k, v in spec.items() if v is not None}
    try:
        build_spec(spec)
    except SpecError as exc:
        issues.extend(SpecIssue(_field_path(i.path, given), i.message, i.value) for i in exc.issues)
    if issues:
        raise SpecError(issues, "gw sbatch")
    return SbatchRequest(spec=spec, parsable="parsable" in given)


def _resources(given: dict[str, _Given], value: Any, issues: list[SpecIssue]) -> dict[str, Any]:
    # Like sbatch: the script runs once, on the first node; it reaches the others with srun.
    nodes = value("nodes", _nodes, 1) or 1
    res = {
        "nodes": nodes if nodes > 1 else None,
        "tasks_per_node": value("ntasks-per-node", lambda v: _count(v, "tasks per node, such as 4")),
        "cpus_per_task": value("cpus-per-task", lambda v: _count(v, "CPUs per task, such as 8")),
        "walltime_min": value("time", _minutes),
        "mem_gb": value("mem", _mem_gb),
    }
    ntasks = value("ntasks", lambda v: _count(v, "a total task count, such as 4"))
    if ntasks is not None:
        per_node, rest = divmod(ntasks, nodes)
        message = ""
        if rest:
            message = f"{ntasks} tasks do not divide evenly over {nodes} nodes; give a multiple of {nodes}"
        elif res["tasks_per_node"] not in (None, per_node):
            message = f"{ntasks} tasks on {nodes} node(s) disagrees with --ntasks-per-node"
        res["tasks_per_node"] = res["tasks_per_node"] or per_node
        if message:
            issues.append(SpecIssue(given["ntasks"].path, message, given["ntasks"].value))
    gres, gpus = value("gres", _gres), value("gpus-per-node", _gpus)
    if gres and gpus:
        issues.append(
            SpecIssue(given["gpus-per-node"].path, "give GPUs with --gres or --gpus-per-node, not both")
        )
    res["gpu_type"], res["gpus_per_node"] = gres or gpus or (None, None)
    return {k: v for k, v in res.items() if v is not None}


def _field_path(path: str, given: dict[str, _Given]) -> str:
    for key, options in _FIELD_OPTION.items():
        if path == key or path.startswith(key + "."):
            for name in (options,) if isinstance(options, str) else options:
                if name in given:
                    return f"{given[name].path} ({path})"
    return path


def _default_name(script_name: str) -> str:
    """sbatch names a job after its script; keep what the gateway's name pattern allows."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", script_name).lstrip("._-")[:63]
    return name if names.is_name(name) else "sbatch"


def _count(text: str, what: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise ValueError(f"not a count; give {what}")
    return int(text)


def _nodes(text: str) -> int:
    match = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", text)
    if not match or int(match[1]) < 1:
        raise ValueError("not a node count; give a number such as 2 (or 2-2)")
    if match[2] is not None and match[2] != match[1]:
        raise ValueError("node ranges are not supported; give one count, such as 2 or 2-2")
    return int(match[1])


_TIME_FORMS = (
    "minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes "
    "or days-hours:minutes:seconds"
)


def _minutes(text: str) -> int:
    """sbatch --time in whole minutes (seconds rounded up)."""
    if text.lower() in ("unlimited", "infinite"):
        raise ValueError(f"the gateway needs a time limit; give {_TIME_FORMS}")
    match = re.fullmatch(r"(?:([0-9]+)-)?([0-9]+(?::[0-9]+){0,2})", text)
    if not match:
        raise ValueError(f"not a time; give {_TIME_FORMS}")
    parts = [int(p) for p in match[2].split(":")]
    if match[1] is not None:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = (parts + [0, 0])[:3]
        hours += int(match[1]) * 24
    elif len(parts) == 3:
        hours, minutes, seconds = parts
    else:  # minutes[:seconds]
        hours, minutes, seconds = 0, parts[0], (parts + [0])[1]
    total_s = (hours * 60 + minutes) * 60 + seconds
    if total_s == 0:  # Slurm reads a zero limit as "no limit"
        raise ValueError(f"0 means no time limit in Slurm; the gateway needs one: give {_TIME_FORMS}")
    return math.ceil(total_s / 60)


def _mem_gb(text: str) -> float:
    """sbatch --mem (MB unless K, M, G or T follows) in GB, the spec's unit."""
    match = re.fullmatch(r"([0-9]+)([KMGT]?)", text, re.IGNORECASE)
    if not match:
        raise ValueError("not a memory size; give a whole number of MB, or one with a unit K, M, G or T: 4G")
    if int(match[1]) == 0:  # Slurm reads --mem=0 as "all of the node's memory"
        raise ValueError("0 asks Slurm for all of a node's memory; give a size such as 4G")
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[match[2].upper()]
    return math.ceil(int(match[1]) * scale) / 1024  # Slurm rounds K up to whole MB


def _gres(text: str) -> tuple[str | None, int]:
    """--gres=gpu[:TYPE][:N] -> (type, GPUs per node)."""
    entries = text.split(",")
    others = [e.split(":")[0] for e in entries if e.split(":")[0] != "gpu"]
    forms = "gpu, gpu:N, gpu:TYPE or gpu:TYPE:N"
    if others:
        raise ValueError(f"gres {others[0]!r} is not supported; only one gpu gres: {forms}")
    if len(entries) != 1:
        raise ValueError(f"give one gpu gres: {forms}")
    return _gpus(text.split(":", 1)[1] if ":" in text else "1", form="gpu:N or gpu:TYPE:N")


def _gpus(text: str, form: str = "N or TYPE:N") -> tuple[str | None, int]:
    match = re.fullmatch(r"(?:([^:]+):)?([0-9]+)|([^:0-9][^:]*)", text)
    if not match:
        raise ValueError(f"not a GPU count; give {form}, such as 2 or a100:2")
    return (match[1] or match[3]), int(match[2] or 1)


def _array(text: str) -> dict[str, Any]:
    """sbatch --array (0-4, 1,3,5, 1-10:2, 0-15%4) as a sweep with explicit indices."""
    body, _, limit = text.partition("%")
    indices: set[int] = set()
    for item in body.split(","):
        match = re.fullmatch(r"([0-9]+)(?:-([0-9]+)(?::([0-9]+))?)?", item)
        if not match or (match[3] is not None and int(match[3]) < 1):
            raise ValueError("not an array; give forms such as 0-4, 1,3,5, 1-10:2 or 0-15%4")
        span = range(int(match[1]), int(match[2] or match[1]) + 1, int(match[3] or 1))
        if not span or len(span) + len(indices) > MAX_ARRAY_TASKS:
            raise ValueError(
                f"array ranges must run low to high, with at most {MAX_ARRAY_TASKS} tasks in all"
            )
        indices.update(span)
    sweep: dict[str, Any] = {"params": [{} for _ in indices], "indices": sorted(indices)}
    if limit:
        if not re.fullmatch(r"[0-9]+", limit) or int(limit) < 1:
            raise ValueError("the limit after % must be a count of tasks to run at once, such as 0-15%4")
        sweep["max_parallel"] = int(limit)
    return sweep


def _export(text: str, environ: Mapping[str, str]) -> dict[str, str] | None:
    """--export: ALL, or [ALL,]VAR=value,VAR (a bare VAR takes the caller's value)."""
    if text.upper() in ("NONE", "NIL"):
        raise ValueError(
            "gw sbatch jobs always start from a clean login environment of your OS user plus the "
            "variables you export; give ALL or VAR=value,..."
        )
    env: dict[str, str] = {}  # empty for ALL: the job starts from a clean login environment
    for item in text.split(","):
        key, eq, val = item.partition("=")
        if not eq and key.upper() == "ALL":
            continue
        if not names.ENV_NAME.fullmatch(key):
            raise ValueError(f"{key!r} is not a variable name; use ALL, VAR=value or VAR, comma-separated")
        if not eq and key not in environ:
            raise ValueError(f"{key} is not set in your environment; give {key}=value")
        env[key] = val if eq else environ[key]
    return env or None
