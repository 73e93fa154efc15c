"""One state for a Slurm job array, from the states of its tasks."""

from __future__ import annotations

from collections.abc import Iterable

from gateway.core.slurm.states import RunState

# When tasks ended differently, the array reports the first of these it finds.
_ENDING_ORDER = (
    RunState.FAILED,
    RunState.OUT_OF_MEMORY,
    RunState.TIMED_OUT,
    RunState.NODE_FAILED,
    RunState.PREEMPTED,
    RunState.CANCELLED,
    RunState.SUCCEEDED,
)
_LIVE_ORDER = (
    RunState.RUNNING,
    RunState.REQUEUED,
    RunState.SUSPENDED,
    RunState.QUEUED,
    RunState.HELD,
)


def array_state(task_states: Iterable[RunState], expected: int) -> RunState | None:
    """The array's state: live while any task is, else its worst ending.

    ``expected`` is the number of tasks. With every known task ended but
    fewer known than expected, the rest are not accounted for yet: the
    answer is None (no conclusion; keep the last known state).
    """
    states = list(task_states)
    if not states:
        return None
    for state in _LIVE_ORDER:
        if state in states:
            return state
    if RunState.UNKNOWN in states:
        return RunState.UNKNOWN
    if len(states) < expected:
        return None
    for state in _ENDING_ORDER:
        if state in states:
            return state
    return RunState.UNKNOWN
