"""The failure classes: why an attempt failed, as one word, and which are retried by default.

Infrastructure failures (preemption, a failed node) are not the user's fault
and the gateway retries them unless a queue says otherwise; the rest need a
fix and a rerun. ``gateway.core.runs.failures`` decides the class of an ended
attempt; ``gateway.core.runs.retry`` applies a queue's policy to it.
"""

from __future__ import annotations

from enum import StrEnum


class FailureClass(StrEnum):
    DATA_ACCESS = "data_access"  # a dataset or the run directory could not be read or written
    ENVIRONMENT = "environment"  # container image, module, venv or a program is missing
    OUT_OF_MEMORY = "out_of_memory"
    TIME_LIMIT = "time_limit"
    PREEMPTED = "preempted"
    NODE_FAILURE = "node_failure"
    USER_CODE = "user_code"  # the user's command exited non-zero
    CANCELLED = "cancelled"
    SUBMIT_REJECTED = "submit_rejected"  # Slurm refused the job at submission
    UNKNOWN = "unknown"


CLASSES: tuple[str, ...] = tuple(c.value for c in FailureClass)
RETRYABLE: frozenset[FailureClass] = frozenset({FailureClass.PREEMPTED, FailureClass.NODE_FAILURE})
# The classes a queue retries when its policy names none, in the site file's order.
DEFAULT_RETRIED: tuple[str, ...] = (FailureClass.PREEMPTED.value, FailureClass.NODE_FAILURE.value)
