"""Shared values and helpers of the pending-reason explanation tests."""

from __future__ import annotations

from datetime import UTC, datetime

from gateway.core.explain.pending import Explanation, NodeState, QuotaUse, WaitContext, explain_wait

NOW = datetime(2026, 3, 2, 12, 45, tzinfo=UTC)
PROJECT_GPUS = QuotaUse("project vision", "GPUs at once", 2, 2)
ALICE_GPUS = QuotaUse("user alice in project vision", "GPUs at once", 4, 4)
PROJECT_GPU_HOURS = QuotaUse("project vision", "GPU-hours this month", 495, 500)
PROJECT_QUEUE = QuotaUse("project vision", "jobs in queue", 100, 100)
NODES = (
    NodeState("g1", "MIXED", 64, 60, 4, 4),
    NodeState("g2", "MIXED", 64, 32, 4, 3),
    NodeState("g3", "DOWN*", 64, 0, 4, 0, "Not responding"),
    NodeState("g4", "IDLE+DRAIN", 64, 0, 4, 0, "ECC errors on GPU 2"),
)


def explain(reason: str | None, **facts) -> Explanation:
    facts.setdefault("partition", "gpu")
    return explain_wait(WaitContext(reason=reason, **facts))


def text(found: Explanation) -> str:
    return "\n".join([found.summary, *found.details, *found.actions])
