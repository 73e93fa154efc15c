"""Slurm's units and small values: times, durations, memory sizes, exit codes, TRES lists.

Pure functions over the text Slurm prints; ``slurm_parse`` reads whole
command outputs with them, and ``slurm_records`` derives counts from them.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from gateway.errors import SlurmOutputError

NONE_WORDS = {"", "None", "(null)", "N/A", "n/a", "Unknown", "NONE"}


def opt(value: str) -> str | None:
    """A field's text, or None for the words Slurm prints for "no value" (None, (null), N/A ...)."""
    value = value.strip()
    return None if value in NONE_WORDS else value


def parse_time(value: str) -> datetime | None:
    """Slurm's ``2026-11-30T04:11:21`` (printed in UTC by our adapter) -> aware datetime."""
    value = value.strip()
    if value in NONE_WORDS:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    except ValueError as exc:
        raise SlurmOutputError(f"unreadable Slurm time {value!r}") from exc


def parse_duration_s(value: str) -> int | None:
    """``[D-]HH:MM:SS``, ``MM:SS`` or ``MM:SS.mmm`` -> seconds; None for UNLIMITED and friends."""
    value = value.strip()
    if value in NONE_WORDS or value.upper() in {"UNLIMITED", "PARTITION_LIMIT", "INVALID"}:
        return None
    days = 0
    if "-" in value:
        day_text, value = value.split("-", 1)
        days = int(day_text)
    parts = value.split(":")
    try:
        numbers = [float(p) for p in parts]
    except ValueError as exc:
        raise SlurmOutputError(f"unreadable Slurm duration {value!r}") from exc
    while len(numbers) < 3:
        numbers.insert(0, 0.0)
    hours, minutes, seconds = numbers[-3:]
    return int(days * 86400 + hours * 3600 + minutes * 60 + seconds)


def parse_minutes(value: str) -> int | None:
    """A Slurm duration (see ``parse_duration_s``) in whole minutes, rounded up; None for UNLIMITED
    and friends. SlurmOutputError when it cannot be read.
    """
    seconds = parse_duration_s(value)
    return None if seconds is None else math.ceil(seconds / 60)


_MEM = re.compile(r"(\d+(?:\.\d+)?)([KMGTP]?)")
_MEM_POWER = {"": 0, "K": 0, "M": 1, "G": 2, "T": 3, "P": 4}


def mem_to_kb(value: str, *, default_unit: str = "K") -> int | None:
    """``1234K``, ``512M``, ``1.5G`` -> KiB. ``default_unit`` applies to a bare number."""
    value = value.strip()
    if value in NONE_WORDS:
        return None
    match = _MEM.fullmatch(value)
    if not match:
        raise SlurmOutputError(f"unreadable Slurm memory size {value!r}")
    number, unit = match.groups()
    unit = unit or default_unit
    return int(float(number) * 1024 ** _MEM_POWER[unit])


def parse_exit_code(value: str) -> tuple[int | None, int | None]:
    """``3:0`` -> (3, 0): the exit status and the signal that ended the job."""
    value = value.strip()
    if not value:
        return None, None
    code, _, signal = value.partition(":")
    try:
        return int(code), int(signal) if signal else 0
    except ValueError as exc:
        raise SlurmOutputError(f"unreadable Slurm exit code {value!r}") from exc


def parse_tres(value: str) -> dict[str, str]:
    """``cpu=2,mem=512M,node=1,gres/gpu=2`` -> {"cpu": "2", ...}."""
    result = {}
    for item in value.strip().split(","):
        if "=" in item:
            key, _, val = item.partition("=")
            result[key.strip()] = val.strip()
    return result


_GPUS_PER_NODE = re.compile(r"gpu(?::[A-Za-z0-9_.-]+)?[:=](\d+)")


def gpus_per_node(tres_per_node: str | None) -> int:
    """GPUs per node from squeue's ``%b`` (``gres:gpu:fake:2``, ``gres/gpu:2``); 0 when none."""
    match = _GPUS_PER_NODE.search(tres_per_node or "")
    return int(match.group(1)) if match else 0
