"""The verdicts of ``classify`` (``gateway.core.runs.failures``): each failure class's summary and
action in people's words, with the numbers, from the facts of an ended attempt; and the evidence
every verdict carries (``Facts.info``). The pre-flight rule (3) and the log hints of rule 4 are here.
No I/O.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gateway.core.runs.failure_classes import RETRYABLE, FailureClass
from gateway.core.runs.steps import StepRecord

LOG_TAIL_LINES = 20
LOG_TAIL_CHARS = 4000
OOM_NEAR_FRACTION = 0.9  # MaxRSS at or above this share of the request counts as "at the limit"
SIGKILL = 9

# "FileNotFoundError: [Errno 2] No such file or directory: '/data/x'" and "cat: /data/x: No such file ..."
_MISSING_PATH = re.compile(
    r"No such file or directory:?\s*['\"]?(/[^'\"\s]+)"
    r"|(/[^'\"\s:]+)['\"]?:\s*(?:\[Errno 2\]\s*)?No such file or directory"
)
_ENV_HINTS = (
    (
        re.compile(r"ModuleNotFoundError: No module named ['\"]?([^'\"\s]+)"),
        "Python module {} is not installed",
    ),
    (re.compile(r"ImportError: (.{1,120})"), "a Python import failed ({})"),
    (re.compile(r"([^\s:]+): command not found"), "command {} was not found"),
)


@dataclass(frozen=True)
class FailureInfo:
    klass: FailureClass
    summary: str  # what happened, in plain words
    action: str  # what to do, with the numbers
    evidence: dict[str, Any] = field(default_factory=dict)  # JSON-ready
    retryable_by_default: bool = False


@dataclass(frozen=True)
class Facts:
    """What ``classify`` knows of an ended attempt, as each verdict reports it."""

    exit_code: int | None
    exit_signal: int | None
    failed: StepRecord | None
    stderr_tail: str
    max_rss_kb: int | None
    requested_mem_mb: int | None
    walltime_min: int | None
    node_list: str | None
    cancelled_by: str | None
    slurm_state: str | None

    def info(self, klass: FailureClass, summary: str, action: str, **extra: Any) -> FailureInfo:
        """The verdict ``klass`` with these words, and the facts (plus ``extra``) as its evidence."""
        evidence = {
            "slurm_state": self.slurm_state,
            "exit_code": self.exit_code,
            "signal": self.exit_signal,
            "failing_step": (
                {"step": self.failed.step, "detail": self.failed.detail} if self.failed is not None else None
            ),
            "node_list": self.node_list,
            "max_rss_kb": self.max_rss_kb,
            "requested_mem_mb": self.requested_mem_mb,
            "walltime_min": self.walltime_min,
            "log_tail": log_tail(self.stderr_tail),
            "cancelled_by": self.cancelled_by,
            **extra,
        }
        return FailureInfo(klass, summary, action, evidence, klass in RETRYABLE)


def preflight(facts: Facts, step: str, detail: str) -> FailureInfo:
    """Rule 3: the pre-flight ``step`` (inputs, outputs or environment) failed, saying ``detail``."""
    said = f": {detail}" if detail else ""
    if step == "inputs":
        if detail.startswith("dataset digest mismatch"):
            action = (
                "the file changed since its digest was recorded: restore it, or register the new "
                "contents as a new dataset version and rerun with that"
            )
        elif "unreadable" in detail:
            action = (
                "give the job's user read access to the dataset (directories need read and execute), "
                "then rerun"
            )
        else:
            action = "check the dataset path (it must exist on the compute nodes), fix the spec and rerun"
        return facts.info(
            FailureClass.DATA_ACCESS,
            f"The job's input check failed before the command started{said}.",
            action,
        )
    if step == "outputs":
        return facts.info(
            FailureClass.DATA_ACCESS,
            f"The job could not write to its run directory, so it stopped before the command{said}.",
            "the run directory is the gateway's: ask the admins to check its permissions and free space",
        )
    if "container image" in detail:
        action = "check the container_image path (it must exist and be readable on the compute nodes)"
    elif "container runtime" in detail:
        action = (
            "this queue's nodes have no apptainer: use a queue whose nodes have it, or run without an image"
        )
    elif "module" in detail:
        action = (
            "check the module names (`module avail` on a compute node), "
            "or drop `modules` where there are none"
        )
    elif "venv" in detail:
        action = (
            "check the venv path: it must be a virtual environment with bin/activate, readable on the nodes"
        )
    else:
        action = "check the run's container image, modules and venv, then rerun"
    return facts.info(
        FailureClass.ENVIRONMENT,
        f"The job's environment check failed before the command started{said}.",
        action,
    )


def log_hint(facts: Facts, code: int, dataset_paths: Sequence[str]) -> FailureInfo | None:
    """Rule 4's hints from the stderr tail; None when the log holds none."""
    tail = facts.stderr_tail
    killed = facts.exit_signal == SIGKILL or code == 128 + SIGKILL
    if "Killed" in tail and killed and _near_limit(facts.max_rss_kb, facts.requested_mem_mb):
        return out_of_memory(
            facts, "The command was killed (signal 9) at its memory limit; a guess from the log and MaxRSS."
        )
    for match in _MISSING_PATH.finditer(tail):
        path = match.group(1) or match.group(2)
        if any(_under(path, root) for root in dataset_paths):
            return facts.info(
                FailureClass.DATA_ACCESS,
                f"The command could not find {path}, under one of the run's datasets (a guess from the log).",
                "check that the dataset holds the files the code expects (or fix the path in the code), "
                "then rerun",
                missing_path=path,
            )
    for pattern, words in _ENV_HINTS:
        hint = pattern.search(tail)
        if hint:
            return facts.info(
                FailureClass.ENVIRONMENT,
                f"The command failed with exit code {code}: {words.format(hint.group(1).strip())} "
                "(a guess from the log).",
                "add what is missing to the container image, venv or modules, then rerun",
            )
    return None


def out_of_memory(facts: Facts, summary: str) -> FailureInfo:
    """Out of memory: how much more to ask for, from MaxRSS and the request."""
    used, asked = facts.max_rss_kb, facts.requested_mem_mb
    if asked:
        want_mb = max(2 * asked, math.ceil(1.5 * used / 1024) if used else 0)
        want_gb = math.ceil(want_mb / 1024 * 10) / 10
        more = f"ask for {gb(want_gb * 1024 - asked)} GB more memory (mem_gb: {want_gb:.1f})"
        if used is not None:
            action = f"{more}: the job used {gb(used / 1024)} GB of {gb(asked)} GB requested"
        else:
            action = f"{more}: the job asked for {gb(asked)} GB; Slurm recorded no peak memory"
    elif used is not None:
        action = f"ask for more memory than the {gb(used / 1024)} GB the job used"
    else:
        action = "ask for more memory (mem_gb)"
    return facts.info(
        FailureClass.OUT_OF_MEMORY, summary, action + ", or make the job use less (smaller batches)"
    )


def time_limit(facts: Facts) -> FailureInfo:
    """The time limit: a longer walltime to ask for, or a checkpoint to resume from."""
    limit = facts.walltime_min
    if limit:
        action = (
            f"ask for a longer walltime than {limit} min (walltime_min: {2 * limit}), "
            "or resume from a checkpoint"
        )
        summary = f"Slurm stopped the job at its time limit of {limit} min."
    else:
        action = "ask for a longer walltime (walltime_min), or resume from a checkpoint"
        summary = "Slurm stopped the job at its time limit."
    return facts.info(FailureClass.TIME_LIMIT, summary, action)


def _near_limit(used_kb: int | None, asked_mb: int | None) -> bool:
    return bool(used_kb and asked_mb and used_kb >= OOM_NEAR_FRACTION * asked_mb * 1024)


def _under(path: str, root: str) -> bool:
    root = root.rstrip("/") or "/"
    return root.startswith("/") and (path == root or path.startswith(root if root == "/" else root + "/"))


def gb(mb: float) -> str:
    """MiB as GB with one decimal (1 GB = 1024 MiB, as the spec's mem_gb)."""
    return f"{mb / 1024:.1f}"


def log_tail(text: str, lines: int = LOG_TAIL_LINES, chars: int = LOG_TAIL_CHARS) -> str:
    """The last ``lines`` lines of ``text``, at most ``chars`` characters."""
    tail = "\n".join((text or "").rstrip("\n").splitlines()[-lines:])
    return tail[-chars:]
