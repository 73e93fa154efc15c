"""The one Slurm-state table, its odd spellings and its unknown fallback."""

from __future__ import annotations

import pytest

from gateway.core.slurm.states import LIVE, SLURM_STATES, TERMINAL, RunState, map_slurm_state


@pytest.mark.parametrize(
    ("raw", "state", "word", "uid"),
    [
        ("PENDING", RunState.QUEUED, "PENDING", None),
        ("RUNNING", RunState.RUNNING, "RUNNING", None),
        ("COMPLETING", RunState.RUNNING, "COMPLETING", None),
        ("COMPLETED", RunState.SUCCEEDED, "COMPLETED", None),
        ("FAILED", RunState.FAILED, "FAILED", None),
        ("CANCELLED by 1001", RunState.CANCELLED, "CANCELLED", 1001),
        ("CANCELLED by 0", RunState.CANCELLED, "CANCELLED", 0),
        ("CANCELLED+", RunState.CANCELLED, "CANCELLED", None),
        ("CANCELLED", RunState.CANCELLED, "CANCELLED", None),
        ("PREEMPTED", RunState.PREEMPTED, "PREEMPTED", None),
        ("NODE_FAIL", RunState.NODE_FAILED, "NODE_FAIL", None),
        ("BOOT_FAIL", RunState.NODE_FAILED, "BOOT_FAIL", None),
        ("OUT_OF_MEMORY", RunState.OUT_OF_MEMORY, "OUT_OF_MEMORY", None),
        ("OUT_OF_ME+", RunState.UNKNOWN, "OUT_OF_ME", None),  # truncated column: unknown, not a guess
        ("TIMEOUT", RunState.TIMED_OUT, "TIMEOUT", None),
        ("DEADLINE", RunState.TIMED_OUT, "DEADLINE", None),
        ("REQUEUED", RunState.REQUEUED, "REQUEUED", None),
        ("REQUEUE_HOLD", RunState.HELD, "REQUEUE_HOLD", None),
        ("REQUEUE_FED", RunState.REQUEUED, "REQUEUE_FED", None),
        ("SPECIAL_EXIT", RunState.HELD, "SPECIAL_EXIT", None),
        ("SUSPENDED", RunState.SUSPENDED, "SUSPENDED", None),
        ("RESIZING", RunState.RUNNING, "RESIZING", None),
        ("SOMETHING_NEW", RunState.UNKNOWN, "SOMETHING_NEW", None),
        ("", RunState.UNKNOWN, "", None),
        ("  running ", RunState.RUNNING, "RUNNING", None),
    ],
)
def test_state_table(raw, state, word, uid):
    mapped = map_slurm_state(raw)
    assert (mapped.state, mapped.slurm_state, mapped.by_uid) == (state, word, uid)


def test_held_pending_reasons():
    assert map_slurm_state("PENDING", "JobHeldUser").state is RunState.HELD
    assert map_slurm_state("PENDING", "JobHeldAdmin").state is RunState.HELD
    assert map_slurm_state("PENDING", "Resources").state is RunState.QUEUED


def test_every_state_is_live_terminal_or_unknown():
    for state in RunState:
        assert (state in LIVE) + (state in TERMINAL) + (state is RunState.UNKNOWN) == 1, state
    assert RunState.UNKNOWN not in TERMINAL  # unknown is never an ending
    assert set(SLURM_STATES.values()) <= set(RunState)
