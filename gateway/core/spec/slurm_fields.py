"""Checks for the run-spec fields that carry sbatch's own options (``gw sbatch``'s habits).

``qos``, ``dependency``, ``signal``, ``slurm_job_name`` and ``slurm_options``
reach ``#SBATCH`` lines, which sbatch reads itself and no quoting protects, so
each is matched in full against a strict pattern here (``slurm_options``
against ``gateway.core.sbatch.table.PASS_PATTERNS``).
"""

from __future__ import annotations

import re
from typing import Any

from gateway.core import names
from gateway.core.described import anchored
from gateway.core.sbatch.table import ANY_CASE, OPTIONS, PASS_PATTERNS, pass_problem

MAX_SLURM_OPTIONS = 64

# Fields added to RunSpec and Resources for gw sbatch, with their defaults: a stored spec that
# predates them hashes as it did (RunSpec.spec_hash leaves them out while they hold these).
ADDED_DEFAULTS: dict[str, Any] = {
    "semantics": "gateway",
    "submit_dir": None,
    "slurm_job_name": None,
    "qos": None,
    "dependency": None,
    "signal": None,
    "comment": None,
    "mail_user": None,
    "export": None,
    "slurm_options": {},
    "secrets": {},
    "environment": None,
}
ADDED_RESOURCE_DEFAULTS: dict[str, Any] = {
    "ntasks": None,
    "gpus": None,
    "gpus_per_task": None,
    "cpus_per_gpu": None,
    "mem_per_cpu_mb": None,
    "mem_per_gpu_mb": None,
}


_DEP_ITEM = (
    r"(?:(?:after|afterany|afterok|afternotok|aftercorr|afterburstbuffer)"
    r"(?::[0-9]{1,10}(?:_[0-9]{1,7})?(?:\+[0-9]{1,6})?){1,64}|singleton)"
)
DEPENDENCY = re.compile(rf"{_DEP_ITEM}(?:[,?]{_DEP_ITEM}){{0,15}}")
DEPENDENCY_HELP = (
    "TYPE:JOBID[:JOBID...] with TYPE after, afterany, afterok, afternotok, aftercorr or afterburstbuffer, "
    "or singleton; several joined with ',' (all) or '?' (any)"
)
SIGNAL = re.compile(r"(?:[RB]{1,2}:)?(?:SIG)?[A-Z0-9]{1,8}(?:@[0-9]{1,5})?")
SIGNAL_HELP = "[R|B:]SIGNAL[@SECONDS], such as USR1@90, B:TERM@60 or 10@120"
# Slurm takes any job name; these characters are safe inside a double-quoted #SBATCH value.
JOB_NAME = re.compile(r"[A-Za-z0-9 ._+:@=,()\[\]{}/-]{1,200}")
JOB_NAME_HELP = "1-200 letters, digits, spaces and . _ + : @ = , ( ) [ ] { } / -"
COMMENT = re.compile(r"[^\x00-\x1f\x7f]{0,1024}")
# sbatch takes any --mail-user text (a template's "<YourNetID>@site.edu" too): it reaches Slurm as one
# sbatch argument, never a script line or a shell, so one line of text is the only rule
MAIL_USER = re.compile(r"[^\x00-\x1f\x7f]{1,1024}")
_ADDRESS = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")


def check_qos(value: str | None) -> str | None:
    """A QoS name as a strict name."""
    if value is not None and not names.NAME.fullmatch(value):
        raise ValueError(f"not a valid QoS; use {names.NAME_HELP}")
    return value


def check_dependency(value: str | None) -> str | None:
    """A Slurm dependency expression."""
    if value is not None and not DEPENDENCY.fullmatch(value):
        raise ValueError(f"not a dependency Slurm takes here; give {DEPENDENCY_HELP}")
    return value


def check_signal(value: str | None) -> str | None:
    """A ``--signal`` value."""
    if value is not None and not SIGNAL.fullmatch(value):
        raise ValueError(f"not a signal; give {SIGNAL_HELP}")
    return value


def check_job_name(value: str | None) -> str | None:
    """The job name Slurm shows, which may hold spaces (unlike the run's ``name``)."""
    if value is not None and not JOB_NAME.fullmatch(value):
        raise ValueError(f"not a job name gw passes to Slurm; use {JOB_NAME_HELP}")
    return value


def check_comment(value: str | None) -> str | None:
    """A job comment: one line of text."""
    if value is not None and not COMMENT.fullmatch(value):
        raise ValueError("must be one line of at most 1024 characters, without control characters")
    return value


def check_mail_user(value: str | None) -> str | None:
    """sbatch's ``--mail-user``: one line of text, whatever it says (``mail_user_warning`` for one
    that is no mail address)."""
    if value is not None and not MAIL_USER.fullmatch(value):
        raise ValueError("must be one line of 1-1024 characters, without control characters")
    return value


def mail_user_warning(value: str | None) -> str | None:
    """A warning for a ``--mail-user`` that is not a plain mail address (Slurm takes it as given and
    mails nobody, or a local user of that name); None for an address or no value."""
    if value is None or _ADDRESS.fullmatch(value) or names.NAME.fullmatch(value):
        return None
    return f"--mail-user {value!r} is not a mail address; Slurm takes it as given"


def check_slurm_options(value: dict[str, str | None]) -> dict[str, str | None]:
    """Options passed to Slurm verbatim: each known to ``PASS_PATTERNS``, its value matching it."""
    if len(value) > MAX_SLURM_OPTIONS:
        raise ValueError(f"has {len(value)} options; at most {MAX_SLURM_OPTIONS}")
    for key, item in value.items():
        if key not in PASS_PATTERNS:
            known = ", ".join(sorted(PASS_PATTERNS))
            raise ValueError(f"{key!r} is not an option passed to Slurm verbatim; those are: {known}")
        problem = pass_problem(key, item)
        if problem:
            raise ValueError(f"--{key} {problem}")
    return value


def _any_case(pattern: str) -> str:
    """``pattern`` matching its letters in either case (JSON-schema patterns have no IGNORECASE flag)."""
    out, in_class = [], False
    for char in pattern:
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        elif char.isalpha() and not in_class:
            char = f"[{char.lower()}{char.upper()}]"
        out.append(char)
    return "".join(out)


def _option_value_schema(name: str) -> dict[str, Any]:
    """The JSON schema of one passed-through option's value, as ``pass_problem`` checks it."""
    pattern = PASS_PATTERNS[name]
    if pattern is None:
        return {"type": "null"}  # the option takes no value
    text = {"type": "string", "pattern": anchored(_any_case(pattern) if name in ANY_CASE else pattern)}
    return text if OPTIONS[name].arg == "required" else {"anyOf": [text, {"type": "null"}]}


# slurm_options in the description: the options check_slurm_options takes, each value's pattern.
SLURM_OPTIONS_SCHEMA: dict[str, Any] = {
    "properties": {name: _option_value_schema(name) for name in sorted(PASS_PATTERNS)},
    "additionalProperties": False,
    "maxProperties": MAX_SLURM_OPTIONS,
}
