"""sbatch 22.05's options, and what ``gw sbatch`` does with each (pure data, no I/O).

Every long option of ``sbatch(1)`` (Slurm 22.05 man page, plus the documented
alias ``--tasks-per-node``) is in ``OPTIONS`` with its short letter, whether it
takes a value, and how the gateway handles it:

- ``model``: the gateway must know it (memory, GPUs, tasks, time, QoS,
  dependency, signal, requeue ...); it becomes a typed run-spec field
  (``gateway.core.sbatch.options``);
- ``pass``: handed to Slurm verbatim, after its value matched the strict
  pattern in ``PASS_PATTERNS``; recorded in the spec's ``slurm_options``;
- ``client``: only changes what ``gw sbatch`` itself does (``--parsable``,
  ``--test-only``, ``--wrap``, ``--wait``, ``--quiet`` ...);
- ``refuse``: would let a job escape the gateway's rules, or reads files the
  gateway cannot see; ``REFUSED`` says why, in words a user can act on.

Long options may be abbreviated to any unique prefix, as sbatch's
``getopt_long`` allows (``--tasks`` is ``--tasks-per-node``); an ambiguous
prefix (``--mail``) is refused with the options it could mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Handling = Literal["model", "pass", "client", "refuse"]
Arg = Literal["required", "optional", "none"]


@dataclass(frozen=True)
class Option:
    name: str  # the long name, without dashes
    short: str | None
    arg: Arg
    handling: Handling
    canonical: str | None = None  # for an alias: the option it stands for


_R: Arg = "required"
_O: Arg = "optional"
_N: Arg = "none"

# fmt: off
_TABLE: tuple[tuple[str, str | None, Arg, Handling], ...] = (
    ("account", "A", _R, "model"), ("acctg-freq", None, _R, "pass"), ("array", "a", _R, "model"),
    ("batch", None, _R, "refuse"), ("bb", None, _R, "refuse"), ("bbf", None, _R, "refuse"),
    ("begin", "b", _R, "pass"), ("chdir", "D", _R, "model"), ("cluster-constraint", None, _R, "pass"),
    ("clusters", "M", _R, "pass"), ("comment", None, _R, "model"), ("constraint", "C", _R, "pass"),
    ("container", None, _R, "refuse"), ("contiguous", None, _N, "pass"), ("core-spec", "S", _R, "pass"),
    ("cores-per-socket", None, _R, "pass"), ("cpu-freq", None, _R, "pass"),
    ("cpus-per-gpu", None, _R, "model"),
    ("cpus-per-task", "c", _R, "model"), ("deadline", None, _R, "pass"), ("delay-boot", None, _R, "pass"),
    ("dependency", "d", _R, "model"), ("distribution", "m", _R, "pass"), ("error", "e", _R, "model"),
    ("exclude", "x", _R, "pass"), ("exclusive", None, _O, "pass"), ("export", None, _R, "model"),
    ("export-file", None, _R, "refuse"), ("extra-node-info", "B", _R, "pass"),
    ("get-user-env", None, _O, "pass"),
    ("gid", None, _R, "refuse"), ("gpu-bind", None, _R, "pass"), ("gpu-freq", None, _R, "pass"),
    ("gpus", "G", _R, "model"), ("gpus-per-node", None, _R, "model"), ("gpus-per-socket", None, _R, "pass"),
    ("gpus-per-task", None, _R, "model"), ("gres", None, _R, "model"), ("gres-flags", None, _R, "pass"),
    ("help", "h", _N, "client"), ("hint", None, _R, "pass"), ("hold", "H", _N, "model"),
    ("ignore-pbs", None, _N, "client"), ("input", "i", _R, "pass"), ("job-name", "J", _R, "model"),
    ("kill-on-invalid-dep", None, _R, "pass"), ("licenses", "L", _R, "pass"), ("mail-type", None, _R, "pass"),
    ("mail-user", None, _R, "model"), ("mcs-label", None, _R, "refuse"), ("mem", None, _R, "model"),
    ("mem-bind", None, _R, "pass"), ("mem-per-cpu", None, _R, "model"), ("mem-per-gpu", None, _R, "model"),
    ("mincpus", None, _R, "pass"), ("network", None, _R, "pass"), ("nice", None, _O, "pass"),
    ("no-kill", "k", _O, "pass"), ("no-requeue", None, _N, "model"), ("nodefile", "F", _R, "refuse"),
    ("nodelist", "w", _R, "pass"), ("nodes", "N", _R, "model"), ("ntasks", "n", _R, "model"),
    ("ntasks-per-core", None, _R, "pass"), ("ntasks-per-gpu", None, _R, "pass"),
    ("ntasks-per-node", None, _R, "model"), ("ntasks-per-socket", None, _R, "pass"),
    ("open-mode", None, _R, "pass"), ("output", "o", _R, "model"), ("overcommit", "O", _N, "pass"),
    ("oversubscribe", "s", _N, "pass"), ("parsable", None, _N, "client"), ("partition", "p", _R, "model"),
    ("power", None, _R, "refuse"), ("prefer", None, _R, "pass"), ("priority", None, _R, "refuse"),
    ("profile", None, _R, "pass"), ("propagate", None, _O, "pass"), ("qos", "q", _R, "model"),
    ("quiet", "Q", _N, "client"), ("reboot", None, _N, "refuse"), ("requeue", None, _N, "model"),
    ("reservation", None, _R, "pass"), ("signal", None, _R, "model"), ("sockets-per-node", None, _R, "pass"),
    ("spread-job", None, _N, "pass"), ("switches", None, _R, "pass"), ("test-only", None, _N, "client"),
    ("thread-spec", None, _R, "pass"), ("threads-per-core", None, _R, "pass"), ("time", "t", _R, "model"),
    ("time-min", None, _R, "pass"), ("tmp", None, _R, "pass"), ("uid", None, _R, "refuse"),
    ("usage", None, _N, "client"), ("use-min-nodes", None, _N, "pass"), ("verbose", "v", _N, "client"),
    ("version", "V", _N, "client"), ("wait", "W", _N, "client"), ("wait-all-nodes", None, _R, "pass"),
    ("wckey", None, _R, "pass"), ("wrap", None, _R, "client"),
)
# fmt: on
# --tasks-per-node: documented in sbatch(1) under --ntasks-per-node; --cluster: sbatch 22.05's own
# table (slurm_opt.c) has it beside --clusters, so it is no abbreviation and not ambiguous.
_ALIASES = {"tasks-per-node": "ntasks-per-node", "cluster": "clusters"}

OPTIONS: dict[str, Option] = {name: Option(name, short, arg, how) for name, short, arg, how in _TABLE}
for _alias, _target in _ALIASES.items():
    _base = OPTIONS[_target]
    OPTIONS[_alias] = Option(_alias, None, _base.arg, _base.handling, canonical=_target)
SHORT: dict[str, Option] = {o.short: o for o in OPTIONS.values() if o.short}

# Why each refused option stays refused: short, and what to do instead.
REFUSED: dict[str, str] = {
    "uid": "jobs run as the OS user the gateway maps you to; another user's id is not yours to take",
    "gid": "jobs run with your OS user's groups; another group is not yours to take",
    "priority": "only Slurm operators set a job's priority; the gateway's queues and fair share decide",
    "reboot": "rebooting nodes is for administrators",
    "power": "power management is for administrators",
    "mcs-label": "this cluster has no MCS labels",
    "container": "give the image with gw submit's container_image, which the gateway records and checks",
    "bb": "this cluster has no burst buffers",
    "bbf": "this cluster has no burst buffers",
    "batch": "this cluster has no batch features",
    "export-file": "the gateway cannot read a file on your machine into the job; use --export=VAR=value",
    "nodefile": "the gateway cannot read a file on your machine; give the hosts with -w/--nodelist",
}
# An account, partition or QoS is not refused as an option: the gateway checks it against
# your projects and their queues (a partition with no queue, an account of another project).

_COUNT = r"[0-9]{1,6}"
_HOSTLIST = r"[A-Za-z0-9._,\[\]-]{1,1024}"
_WORDS = r"[A-Za-z0-9._:,=/+*-]{1,256}"  # a Slurm list of words: no blanks, quotes, '#' or shell signs
_TIME = r"[0-9]+(?::[0-9]+){0,2}|[0-9]+-[0-9]+(?::[0-9]+){0,2}"
_MAIL = r"(?:NONE|BEGIN|END|FAIL|REQUEUE|ALL|INVALID_DEPEND|STAGE_OUT|TIME_LIMIT(?:_[589]0)?|ARRAY_TASKS)"
_WHEN = r"[A-Za-z0-9:+/-]{1,64}"  # begin/deadline: now+1hour, 16:00, 2024-01-20T12:34:00, midnight ...

# Every passed-through option's value must match its pattern in full (None: the option takes none;
# for an option with an optional value, the pattern checks it when one is given).
PASS_PATTERNS: dict[str, str | None] = {
    "acctg-freq": r"[a-z]+=[0-9]+(?:,[a-z]+=[0-9]+)*|[0-9]+",
    "begin": _WHEN,
    "cluster-constraint": r"!?[A-Za-z0-9_,&|]{1,256}",
    "clusters": r"[A-Za-z0-9_-]{1,64}",
    "constraint": r"[A-Za-z0-9_.&|*!,:\[\]()-]{1,256}",
    "contiguous": None,
    "core-spec": _COUNT,
    "cores-per-socket": _COUNT,
    "cpu-freq": r"[A-Za-z0-9:-]{1,64}",
    "deadline": _WHEN,
    "delay-boot": _TIME,
    "distribution": r"[A-Za-z*,:=0-9]{1,64}",
    "exclude": _HOSTLIST,
    "exclusive": r"user|mcs|topo",
    "extra-node-info": r"[0-9*]+(?::[0-9*]+){0,2}",
    "get-user-env": r"[0-9]{1,4}[SL]?|[SL]",
    "gpu-bind": r"[A-Za-z0-9_:,.x-]{1,256}",
    "gpu-freq": r"[A-Za-z0-9_=,:-]{1,128}",
    "gpus-per-socket": r"(?:[a-z0-9][a-z0-9_.-]{0,31}:)?[0-9]{1,3}",
    "gres-flags": r"enforce-binding|disable-binding",
    "hint": r"compute_bound|memory_bound|multithread|nomultithread|help",
    "input": r"/?[A-Za-z0-9._/%+-]{1,1024}",
    "kill-on-invalid-dep": r"yes|no",
    "licenses": r"[A-Za-z0-9_.@:,|-]{1,256}",
    "mail-type": rf"{_MAIL}(?:,{_MAIL})*",
    # gw sbatch now models --mail-user (the spec's mail_user, any text, an argument of sbatch); a spec
    # recorded before that, or an API client, may still carry this strict form in slurm_options
    "mail-user": r"[A-Za-z0-9._%+-]{1,64}(?:@[A-Za-z0-9.-]{1,190})?",
    "mem-bind": r"[A-Za-z0-9_:,x-]{1,256}",
    "mincpus": _COUNT,
    "network": _WORDS,
    "nice": r"[0-9]{1,7}",  # a positive adjustment only: a negative one is for operators
    "no-kill": r"off",
    "nodelist": _HOSTLIST,
    "ntasks-per-core": _COUNT,
    "ntasks-per-gpu": _COUNT,
    "ntasks-per-socket": _COUNT,
    "open-mode": r"append|truncate",
    "overcommit": None,
    "oversubscribe": None,
    "prefer": r"[A-Za-z0-9_.&|*!,:\[\]()-]{1,256}",
    "profile": r"[A-Za-z,]{1,64}",
    "propagate": r"[A-Z_,]{1,128}",
    "reservation": r"[A-Za-z0-9_.,-]{1,128}",
    "sockets-per-node": _COUNT,
    "spread-job": None,
    "switches": r"[0-9]{1,4}(?:@[0-9:-]{1,16})?",
    "thread-spec": _COUNT,
    "threads-per-core": _COUNT,
    "time-min": _TIME,
    "tmp": r"[0-9]{1,9}[KMGTkmgt]?[Bb]?",
    "use-min-nodes": None,
    "wait-all-nodes": r"[01]",
    "wckey": r"[A-Za-z0-9_.-]{1,64}",
}
# Slurm reads these words in any case (--mail-type=end, --hint=Nomultithread).
ANY_CASE = frozenset({"mail-type", "hint", "open-mode", "exclusive", "gres-flags", "kill-on-invalid-dep"})
_COMPILED = {
    name: re.compile(p, re.IGNORECASE if name in ANY_CASE else 0) for name, p in PASS_PATTERNS.items() if p
}


def lookup_long(word: str) -> tuple[Option | None, list[str]]:
    """The option a ``--word`` names, exactly or as a unique prefix, as getopt_long finds it.

    Returns (option, []) when found; (None, candidates) for an ambiguous prefix;
    (None, []) for no sbatch option at all. Aliases of one option are not ambiguous.
    """
    if word in OPTIONS:
        return OPTIONS[word], []
    matches = [o for name, o in OPTIONS.items() if name.startswith(word)]
    targets = {o.canonical or o.name for o in matches}
    if len(targets) == 1:
        return OPTIONS[targets.pop()], []
    return None, sorted(o.name for o in matches)


def pass_problem(name: str, value: str | None) -> str | None:
    """Why ``--name[=value]`` cannot be passed to Slurm verbatim, or None when it can."""
    if name not in PASS_PATTERNS:
        return f"--{name} is not an option gw sbatch passes to Slurm"
    pattern = _COMPILED.get(name)
    if value is None:
        return None if OPTIONS[name].arg != "required" else "needs a value"
    if pattern is None:
        return "takes no value"
    if not pattern.fullmatch(value):
        return f"is not a value gw sbatch passes to Slurm; it must match {PASS_PATTERNS[name]}"
    return None


# spec field -> the option(s) that set it, to say where a spec (or server) error came from
FIELD_OPTION: dict[str, tuple[str, ...]] = {
    "name": ("job-name",),
    "slurm_job_name": ("job-name",),
    "queue": ("partition",),
    "project": ("account",),
    "qos": ("qos",),
    "workdir": ("chdir",),
    "stdout": ("output",),
    "stderr": ("error",),
    "env": ("export",),
    "sweep": ("array",),
    "dependency": ("dependency",),
    "signal": ("signal",),
    "comment": ("comment",),
    "mail_user": ("mail-user",),
    "resources.gpu_type": ("gres", "gpus-per-node", "gpus", "gpus-per-task"),
    "resources.gpus_per_node": ("gres", "gpus-per-node"),
    "resources.gpus": ("gpus",),
    "resources.gpus_per_task": ("gpus-per-task",),
    "resources.nodes": ("nodes",),
    "resources.ntasks": ("ntasks",),
    "resources.tasks_per_node": ("ntasks-per-node",),
    "resources.cpus_per_task": ("cpus-per-task",),
    "resources.cpus_per_gpu": ("cpus-per-gpu",),
    "resources.mem_gb": ("mem",),
    "resources.mem_per_cpu_mb": ("mem-per-cpu",),
    "resources.mem_per_gpu_mb": ("mem-per-gpu",),
    "resources.walltime_min": ("time",),
    "resources": ("mem", "mem-per-cpu", "mem-per-gpu", "gres", "gpus", "gpus-per-node", "cpus-per-gpu"),
}
