"""Reading an attempt's timeline: how long it waited, for each reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from gateway.core.runs.values import StateEvent
from gateway.core.slurm.states import WAITING, RunState


def wait_by_reason(events: Sequence[StateEvent], *, now: datetime) -> list[tuple[str, float]]:
    """Seconds spent waiting under each pending reason, in the order the reasons first appeared.

    A waiting stretch runs from an event that enters a waiting state (or
    changes the reason while waiting) to the next event; the last stretch of
    a still-waiting attempt runs to ``now``.
    """
    # Notes (same state before and after: a cancel request, a warning) are not transitions.
    transitions = [
        e for e in events if e.from_state is None or e.from_state != e.to_state or _reason_change(e)
    ]
    totals: dict[str, float] = {}
    for current, following in zip(transitions, [*transitions[1:], None], strict=True):
        if current.to_state not in WAITING:
            continue
        end = following.at if following is not None else now
        reason = current.reason or ("held" if current.to_state is RunState.HELD else "none")
        totals[reason] = totals.get(reason, 0.0) + max((end - current.at).total_seconds(), 0.0)
    return list(totals.items())


def _reason_change(event: StateEvent) -> bool:
    """A same-state event from Slurm (squeue/sacct) records a new pending reason."""
    return event.source in ("squeue", "sacct")
