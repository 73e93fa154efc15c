"""Who cancelled an attempt, in the words a person reads (issue 29: a page said "cancelled by 0")."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from gateway.core.domain import Attempt, StateEvent
from gateway.core.slurm.states import RunState
from gateway.services.runs.retry import canceller

NOW = datetime(2026, 12, 3, tzinfo=UTC)
ATTEMPT = Attempt(
    id=1, run_id="r-1", number=1, tag="t", job_id="7", state=RunState.CANCELLED, slurm_state="CANCELLED by 0",
    reason=None, stale=False, node_list="c1", submit_time=NOW, start_time=NOW, end_time=NOW, exit_code=0,
    exit_signal=15, elapsed_s=3, alloc_tres={}, max_rss_kb=None, cancelled_by_uid=0, timelimit_min=5,
    tasks={}, array_size=None, expected_start=None, created_at=NOW, updated_at=NOW,
)  # fmt: skip


def note(text: str) -> StateEvent:
    return StateEvent(1, 1, NOW, RunState.RUNNING, RunState.RUNNING, "RUNNING", text, "gateway")


def test_a_cancel_through_the_gateway_names_the_user_who_asked_not_the_service_uid():
    asked = replace(ATTEMPT, events=[note("cancel requested by mia")])
    assert canceller(asked) == "mia (through the gateway)"


def test_a_cancel_outside_the_gateway_says_so_with_the_uid_and_none_when_slurm_did_not_say():
    assert canceller(ATTEMPT) == "OS user uid 0 (outside the gateway, with scancel)"
    assert canceller(replace(ATTEMPT, cancelled_by_uid=None)) is None
