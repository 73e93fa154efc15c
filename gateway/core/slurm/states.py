"""One table from Slurm job states to gateway run states.

Slurm words stay on the left of ``SLURM_STATES``; gateway words on the right.
A state Slurm invents later maps to ``RunState.UNKNOWN``, never to a failure,
and so does a job Slurm cannot currently answer for.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RunState(StrEnum):
    SUBMITTING = "submitting"  # attempt row written, sbatch not yet confirmed
    NEVER_SUBMITTED = "never_submitted"  # recovery found no Slurm job for the attempt
    QUEUED = "queued"
    HELD = "held"
    RUNNING = "running"
    SUSPENDED = "suspended"
    REQUEUED = "requeued"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMED_OUT = "timed_out"
    OUT_OF_MEMORY = "out_of_memory"
    NODE_FAILED = "node_failed"
    PREEMPTED = "preempted"
    UNKNOWN = "unknown"


SLURM_STATES: dict[str, RunState] = {
    "PENDING": RunState.QUEUED,
    "CONFIGURING": RunState.QUEUED,  # nodes allocated, still booting
    "REQUEUED": RunState.REQUEUED,
    "REQUEUE_FED": RunState.REQUEUED,
    "REQUEUE_HOLD": RunState.HELD,
    "SPECIAL_EXIT": RunState.HELD,  # requeued and held after a special exit code
    "RESV_DEL_HOLD": RunState.HELD,
    "RUNNING": RunState.RUNNING,
    "COMPLETING": RunState.RUNNING,  # processes ending; the outcome is not known yet
    "RESIZING": RunState.RUNNING,
    "SIGNALING": RunState.RUNNING,
    "STAGE_OUT": RunState.RUNNING,
    "SUSPENDED": RunState.SUSPENDED,
    "STOPPED": RunState.SUSPENDED,
    "COMPLETED": RunState.SUCCEEDED,
    "FAILED": RunState.FAILED,
    "CANCELLED": RunState.CANCELLED,
    "REVOKED": RunState.CANCELLED,  # federation: another cluster ran it
    "TIMEOUT": RunState.TIMED_OUT,
    "DEADLINE": RunState.TIMED_OUT,
    "OUT_OF_MEMORY": RunState.OUT_OF_MEMORY,
    "NODE_FAIL": RunState.NODE_FAILED,
    "BOOT_FAIL": RunState.NODE_FAILED,
    "PREEMPTED": RunState.PREEMPTED,
}

# Pending reasons under which a job will not start until someone releases it.
HELD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin"})

TERMINAL = frozenset(
    {
        RunState.NEVER_SUBMITTED,
        RunState.SUCCEEDED,
        RunState.FAILED,
        RunState.CANCELLED,
        RunState.TIMED_OUT,
        RunState.OUT_OF_MEMORY,
        RunState.NODE_FAILED,
        RunState.PREEMPTED,
    }
)
LIVE = frozenset(s for s in RunState if s not in TERMINAL and s is not RunState.UNKNOWN)
# Queued or held: the job waits for Slurm to start it.
WAITING = frozenset({RunState.QUEUED, RunState.HELD})


@dataclass(frozen=True)
class MappedState:
    state: RunState
    slurm_state: str  # the state word alone, e.g. CANCELLED
    by_uid: int | None = None  # "CANCELLED by 1001"


def map_slurm_state(raw: str, reason: str | None = None) -> MappedState:
    """Map Slurm's state text (``CANCELLED by 1001``, ``RUNNING``, ``FAILED+``) to a gateway state."""
    words = raw.strip().rstrip("+").split()
    if not words:
        return MappedState(RunState.UNKNOWN, "")
    word = words[0].upper()
    by_uid = None
    if len(words) == 3 and words[1] == "by" and words[2].isdigit():
        by_uid = int(words[2])
    state = SLURM_STATES.get(word, RunState.UNKNOWN)
    if state is RunState.QUEUED and reason in HELD_REASONS:
        state = RunState.HELD
    return MappedState(state, word, by_uid)
