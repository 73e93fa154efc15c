"""Retry policy: which failures the gateway resubmits by itself, how often, and how soon.

Infrastructure failures (preemption, a failed node) are not the user's fault
and are retried by default; failures of the user's code, data or environment
are not (a rerun with a fix is the way). A time limit is retried only for a
run that says it resumes from its checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.core.runs.failure_classes import DEFAULT_RETRIED as DEFAULT_CLASSES


@dataclass(frozen=True)
class RetryPolicy:
    classes: tuple[str, ...] = DEFAULT_CLASSES  # failure classes retried automatically
    max_attempts: int = 3  # attempts in all, the first included
    backoff_s: float = 30.0  # wait before the first retry; doubles each time
    exclude_failed_nodes: bool = True  # node_failure: keep the retry off the node that failed

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> RetryPolicy:
        """A policy from a queue's stored ``retry`` settings; missing keys (or None) take the defaults."""
        if not data:
            return cls()
        return cls(
            classes=tuple(data.get("classes", DEFAULT_CLASSES)),
            max_attempts=int(data.get("max_attempts", 3)),
            backoff_s=float(data.get("backoff_s", 30.0)),
            exclude_failed_nodes=bool(data.get("exclude_failed_nodes", True)),
        )


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    why: str
    after_s: float = 0.0  # wait this long after the attempt ended
    exclude_nodes: list[str] = field(default_factory=list)


def decide(
    *,
    failure_class: str,
    attempt_number: int,
    policy: RetryPolicy,
    resumable: bool = False,
    failed_nodes: list[str] | None = None,
) -> RetryDecision:
    """Whether attempt ``attempt_number`` (1-based), which failed as ``failure_class``, gets another."""
    retried = failure_class in policy.classes or (failure_class == "time_limit" and resumable)
    if not retried:
        if failure_class == "time_limit":
            return RetryDecision(False, "a time limit is retried only for runs that resume from a checkpoint")
        return RetryDecision(False, f"{failure_class} is not retried automatically: fix and rerun")
    if attempt_number >= policy.max_attempts:
        return RetryDecision(False, f"no retry left: {attempt_number} of {policy.max_attempts} attempts used")
    exclude = (
        list(failed_nodes or []) if failure_class == "node_failure" and policy.exclude_failed_nodes else []
    )
    return RetryDecision(
        True,
        f"{failure_class} is retried (attempt {attempt_number + 1} of {policy.max_attempts})",
        after_s=policy.backoff_s * 2 ** (attempt_number - 1),
        exclude_nodes=exclude,
    )
