"""Values of sbatch options as sbatch(1) (Slurm 22.05) reads them, in the run spec's units (pure).

Each function takes the option's text and returns the spec's value, or
raises ValueError saying what forms are valid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from gateway.core import names
from gateway.core.described import MAX_TEXT
from gateway.core.spec.parts import MAX_ARRAY_TASKS

TIME_FORMS = (
    "minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes "
    "or days-hours:minutes:seconds"
)


def count(text: str, what: str) -> int:
    """A positive whole number."""
    if not re.fullmatch(r"[0-9]{1,9}", text) or int(text) < 1:
        raise ValueError(f"not a count; give {what}")
    return int(text)


def nodes(text: str) -> int:
    """-N N or N-N (a range whose ends differ is refused: the gateway books a fixed count)."""
    match = re.fullmatch(r"([0-9]{1,6})(?:-([0-9]{1,6}))?", text)
    if not match or int(match[1]) < 1:
        raise ValueError("not a node count; give a number such as 2 (or 2-2)")
    if match[2] is not None and match[2] != match[1]:
        raise ValueError("node ranges are not supported; give one count, such as 2 or 2-2")
    return int(match[1])


def minutes(text: str) -> int:
    """--time in whole minutes (seconds rounded up, as Slurm does)."""
    if text.lower() in ("unlimited", "infinite", "-1"):
        raise ValueError(f"the gateway needs a time limit to plan quotas; give {TIME_FORMS}")
    match = re.fullmatch(r"(?:([0-9]{1,5})-)?([0-9]{1,7}(?::[0-9]{1,7}){0,2})", text)
    if not match:
        raise ValueError(f"not a time; give {TIME_FORMS}")
    parts = [int(p) for p in match[2].split(":")]
    if match[1] is not None:  # days-hours[:minutes[:seconds]]
        hours, mins, seconds = (parts + [0, 0])[:3]
        hours += int(match[1]) * 24
    elif len(parts) == 3:
        hours, mins, seconds = parts
    else:  # minutes[:seconds]
        hours, mins, seconds = 0, parts[0], (parts + [0])[1]
    total_s = (hours * 60 + mins) * 60 + seconds
    if total_s == 0:  # Slurm reads a zero limit as "no limit"
        raise ValueError(f"0 means no time limit in Slurm; the gateway needs one: give {TIME_FORMS}")
    return math.ceil(total_s / 60)


_MEM = re.compile(r"([0-9]{1,12})([KMGT]?)B?", re.IGNORECASE)
_MEM_FORMS = "a whole number of MB, or one with a unit K, M, G or T (4G, 1GB, 500M)"


def mem_mb(text: str, *, zero_ok: bool = False) -> int:
    """A memory size in MB (sbatch: MB unless K, M, G or T follows; a trailing B is allowed)."""
    match = _MEM.fullmatch(text)
    if not match:
        raise ValueError(f"not a memory size; give {_MEM_FORMS}")
    if int(match[1]) == 0 and not zero_ok:
        raise ValueError(f"not a memory size; give {_MEM_FORMS}, more than 0")
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[match[2].upper()]
    return math.ceil(int(match[1]) * scale)  # Slurm rounds K up to whole MB


def mem_gb(text: str) -> float:
    """--mem per node in GB, the spec's unit (0: all of each node's memory, as Slurm reads it)."""
    return mem_mb(text, zero_ok=True) / 1024


def gpu_type(text: str) -> str:
    """A GPU type, matched case-insensitively to the queue's (the spec holds it lower-case)."""
    lowered = text.lower()
    if not names.GPU_TYPE.fullmatch(lowered):
        raise ValueError(f"{text!r} is not a GPU type; use letters, digits, '_', '.' or '-'")
    return lowered


def gpus(text: str, form: str = "N or TYPE:N") -> tuple[str | None, int]:
    """--gpus, --gpus-per-node, --gpus-per-task: [TYPE:]N -> (type, count)."""
    match = re.fullmatch(r"(?:([^:,]+):)?([0-9]{1,4})|([^:0-9,][^:,]*)", text)
    if not match:
        raise ValueError(f"not a GPU count; give {form}, such as 2 or a100:2 (one GPU type)")
    kind = match[1] or match[3]
    number = int(match[2] or 1)
    if number < 1:
        raise ValueError(f"ask for at least 1 GPU; give {form}")
    return (gpu_type(kind) if kind else None), number


def gres(text: str) -> tuple[str | None, int]:
    """--gres=gpu[:TYPE][:N] -> (type, GPUs per node)."""
    entries = [e for e in text.split(",") if e]
    forms = "gpu, gpu:N, gpu:TYPE or gpu:TYPE:N"
    kinds = [e.split(":")[0].removeprefix("gres/") for e in entries]
    others = [k for k in kinds if k != "gpu"]
    if others:
        raise ValueError(f"gres {others[0]!r} is not on this cluster; only GPUs: {forms}")
    if len(entries) != 1:
        raise ValueError(f"give one gpu gres: {forms}")
    rest = entries[0].split(":", 1)[1] if ":" in entries[0] else "1"
    return gpus(rest, form="gpu:N or gpu:TYPE:N")


def array(text: str) -> dict[str, Any]:
    """--array (0-4, [0-4], 1,3,5, 1-10:2, 0-15%4) as a sweep with explicit indices."""
    body, _, limit = text.partition("%")
    if body.startswith("[") and body.endswith("]"):
        body = body[1:-1]
    indices: set[int] = set()
    for item in body.split(","):
        match = re.fullmatch(r"([0-9]{1,7})(?:-([0-9]{1,7})(?::([0-9]{1,7}))?)?", item)
        if not match or (match[3] is not None and int(match[3]) < 1):
            raise ValueError("not an array; give forms such as 0-4, [0-4], 1,3,5, 1-10:2 or 0-15%4")
        span = range(int(match[1]), int(match[2] or match[1]) + 1, int(match[3] or 1))
        if not span or len(span) + len(indices) > MAX_ARRAY_TASKS:
            raise ValueError(
                f"array ranges must run low to high, with at most {MAX_ARRAY_TASKS} tasks in all"
            )
        indices.update(span)
    sweep: dict[str, Any] = {"params": [{} for _ in indices], "indices": sorted(indices)}
    if limit:
        if not re.fullmatch(r"[0-9]{1,4}", limit) or int(limit) < 1:
            raise ValueError("the limit after % must be a count of tasks to run at once, such as 0-15%4")
        sweep["max_parallel"] = int(limit)
    return sweep


# What sbatch's --export=ALL would carry from the caller's environment but gw sbatch leaves out
# (docs/cli.md, "--export"): the gateway's own settings and tokens, Slurm's own variables (Slurm sets
# them in the job; SBATCH_* are sbatch's input options, which gw sbatch does not read), and values
# that look like secrets, which would otherwise be stored in the run spec for everyone who may read
# the run. A variable named in --export (--export=ALL,HF_TOKEN) is sent and recorded all the same.
NOT_EXPORTED_PREFIXES = ("GW_", "GATEWAY_", "SLURM_", "SBATCH_", "SALLOC_", "SRUN_")
NOT_EXPORTED_WORDS = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE_KEY|API_KEY|ACCESS_KEY")


def caller_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's environment as ``--export=ALL`` sends it: without the variables left out above,
    and without those the run spec cannot carry (names that are no shell name, such as exported
    bash functions, values with control characters or over 64 KiB)."""
    return {
        key: value
        for key, value in environ.items()
        if names.ENV_NAME.fullmatch(key)
        and not key.startswith(NOT_EXPORTED_PREFIXES)
        and not NOT_EXPORTED_WORDS.search(key.upper())
        and _carried(value)
    }


def _carried(value: str) -> bool:
    return len(value) <= MAX_TEXT and not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", value)


def export(text: str | None, environ: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """--export as (mode, variables), as sbatch(1) 22.05 reads it.

    No --export, ``ALL`` or ``ALL,VAR[=value],...``: mode ``all``, the caller's environment
    (``caller_env``) with the named variables over it. ``NONE``, or ``VAR[=value],...`` without
    ``ALL``: mode ``named``, only Slurm's variables and the named ones. A bare ``VAR`` takes the
    caller's value (unset: left out, as sbatch does). ValueError for a word that is no variable name.
    """
    named: dict[str, str] = {}
    everything = text is None
    for item in [] if text is None else text.split(","):
        key, eq, val = item.partition("=")
        if not eq and key.upper() == "ALL":
            everything = True
            continue
        if not eq and key.upper() in ("NONE", "NIL"):
            continue
        if not names.ENV_NAME.fullmatch(key):
            raise ValueError(
                f"{key!r} is not a variable name; use ALL, NONE, VAR=value or VAR, comma-separated"
            )
        if not eq and key not in environ:
            continue  # sbatch exports an unset variable as nothing, too
        named[key] = val if eq else environ[key]
    if everything:
        return "all", {**caller_env(environ), **named}
    return "named", named


def compress_indices(indices: list[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2,5,7-8", the form ``sbatch --array`` takes."""
    parts = []
    ordered = sorted(indices)
    start = prev = ordered[0]
    for index in [*ordered[1:], None]:
        if index is not None and index == prev + 1:
            prev = index
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if index is not None:
            start = prev = index
    return ",".join(parts)
