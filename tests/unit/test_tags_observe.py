"""Attempt tags (one place builds and reads them) and what squeue/sacct records mean for an attempt."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta

from gateway.core.runs.values import KEEP, Attempt, AttemptFacts
from gateway.core.slurm.observe import array_update, from_sacct, from_squeue, is_news, is_ours, settled
from gateway.core.slurm.records import AccountingRecord, JobStatus
from gateway.core.slurm.states import RunState
from gateway.core.slurm.tags import attempt_tag, job_comment, parse_comment, requeue_tag
from gateway.store.models import AttemptRow

T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def test_tags_round_trip():
    tag = attempt_tag("r-0123456789abcdef", 2)
    assert tag == "gw-r-0123456789abcdef-2"
    assert parse_comment(tag).run_id == "r-0123456789abcdef" and parse_comment(tag).number == 2
    requeued = requeue_tag(tag, 1)
    assert (
        requeued == tag + "~r1" and job_comment(requeued) == tag and requeue_tag(requeued, 2) == tag + "~r2"
    )
    assert parse_comment(requeued).number == 2
    for other in (None, "", "my own comment", "gw-", "gw-r-x-", "gw-r-abc-1; rm -rf"):
        assert parse_comment(other) is None, other


def test_every_fact_is_an_attempt_column():
    columns = set(AttemptRow.__table__.columns.keys())
    assert {f.name for f in fields(AttemptFacts)} <= columns
    assert AttemptFacts().changes() == {}
    assert AttemptFacts(exit_code=None, node_list="c1").changes() == {"exit_code": None, "node_list": "c1"}


def attempt(**changes) -> Attempt:
    base = dict(
        id=1, run_id="r-1", number=1, tag="gw-r-1-1", job_id="7", state=RunState.QUEUED, slurm_state=None,
        reason=None, stale=False, node_list=None, submit_time=None, start_time=None, end_time=None,
        exit_code=None, exit_signal=None, elapsed_s=None, alloc_tres={}, max_rss_kb=None,
        cancelled_by_uid=None, timelimit_min=None, tasks={}, array_size=None, expected_start=None,
        created_at=T0, updated_at=T0,
    )  # fmt: skip
    return Attempt(**{**base, **changes})


def status(**changes) -> JobStatus:
    base = dict(
        job_id="7", array_job_id=None, array_task_id=None, name="x", user="root", partition="cpu",
        state=RunState.RUNNING, slurm_state="RUNNING", reason=None, node_list="c1", comment="gw-r-1-1",
        submit_time=T0, start_time=T0 + timedelta(seconds=5), nodes=1, cpus=1, tres_per_node=None,
    )  # fmt: skip
    return JobStatus(**{**base, **changes})


def record(**changes) -> AccountingRecord:
    base = dict(
        job_id="7", job_id_raw="7", array_job_id=None, array_task_id=None, name="x", user="root",
        account="a", partition="cpu", comment="gw-r-1-1", slurm_state="COMPLETED", state=RunState.SUCCEEDED,
        cancelled_by_uid=None, exit_code=0, exit_signal=0, submit_time=T0, start_time=T0, end_time=T0,
        elapsed_s=3, timelimit_min=5, alloc_tres={"cpu": "1"}, node_list="c1", reason=None, max_rss_kb=10,
    )  # fmt: skip
    return AccountingRecord(**{**base, **changes})


def test_squeue_of_a_running_job_sets_its_start_and_clears_the_estimate():
    update = from_squeue(attempt(), status())
    assert update.state is RunState.RUNNING and update.event_at == T0 + timedelta(seconds=5)
    assert update.facts.start_time == T0 + timedelta(seconds=5) and update.facts.expected_start is None


def test_squeue_of_a_pending_job_keeps_the_start_and_records_the_estimate():
    pending = status(state=RunState.QUEUED, slurm_state="PENDING", reason="Priority")
    update = from_squeue(attempt(), pending)
    assert update.facts.start_time is KEEP and update.facts.expected_start == pending.start_time
    assert update.reason == "Priority" and update.event_at is None


def test_only_an_update_that_changes_the_attempt_is_news():
    def waiting(**changes) -> JobStatus:
        queued = dict(state=RunState.QUEUED, slurm_state="PENDING", reason="Priority", node_list=None)
        return status(**{**queued, **changes})

    assert is_news(attempt(), from_squeue(attempt(), waiting()))  # the reason and the facts are new
    stored = attempt(
        slurm_state="PENDING", reason="Priority", submit_time=T0, expected_start=waiting().start_time
    )
    assert not is_news(stored, from_squeue(stored, waiting()))  # the same again: nothing to write
    assert is_news(stored, from_squeue(stored, waiting(reason="Resources")))
    assert is_news(stored, from_squeue(stored, waiting(start_time=T0 + timedelta(minutes=9))))  # new estimate
    assert is_news(stored, from_squeue(stored, status()))  # it started
    stale = replace(stored, stale=True)
    assert is_news(stale, from_squeue(stale, waiting()))  # an answer clears the stale flag
    blank = waiting(slurm_state=None, reason=None, submit_time=None, start_time=None)
    assert not is_news(attempt(reason=""), from_squeue(attempt(), blank))  # no reason is no reason


def test_sacct_placeholder_is_not_settled_and_read_again():
    placeholder = record(timelimit_min=None)
    assert not settled(placeholder) and from_sacct(attempt(), placeholder) is None
    final = from_sacct(attempt(), record())
    assert (
        final.state is RunState.SUCCEEDED
        and final.facts.exit_code == 0
        and final.facts.expected_start is None
    )


def test_a_record_without_a_start_keeps_the_start_squeue_saw():
    # slurmdbd may not have the start of a requeued job's first record when the requeue is read
    assert from_sacct(attempt(), record(start_time=None)).facts.start_time is KEEP
    assert from_sacct(attempt(), record(start_time=T0)).facts.start_time == T0


def test_an_older_job_with_the_same_id_is_not_ours():
    assert is_ours(record(), attempt())
    assert not is_ours(record(comment="gw-r-other-1"), attempt())
    assert is_ours(record(comment=None, submit_time=T0), attempt(created_at=T0))
    assert not is_ours(record(comment=None, submit_time=T0 - timedelta(hours=1)), attempt(created_at=T0))
    assert is_ours(record(comment="gw-r-1-1"), attempt(tag="gw-r-1-1~r1"))


def test_an_array_is_merged_task_by_task():
    array = attempt(array_size=2)
    tasks = [
        record(job_id="7_0", job_id_raw="8", array_job_id="7", array_task_id="0", end_time=T0),
        record(job_id="7_1", job_id_raw="9", array_job_id="7", array_task_id="1", end_time=T0 + timedelta(1)),
    ]
    update = array_update(array, [], tasks)
    assert update.state is RunState.SUCCEEDED and update.event_at == T0 + timedelta(1)
    # the array's span from the first start to the last end (1 day here), not the tasks' sum (6 s)
    assert sorted(update.facts.tasks) == ["0", "1"] and update.facts.elapsed_s == 86400
    assert update.facts.exit_code == 0 and update.facts.exit_signal == 0
    # slurmdbd without a start for the records yet: the longest task's elapsed, not a sum
    unstarted = [replace(t, start_time=None, elapsed_s=e) for t, e in zip(tasks, (3, 5), strict=True)]
    assert array_update(array, [], unstarted).facts.elapsed_s == 5
    half = array_update(array, [status(job_id="7_1", array_job_id="7", array_task_id="1")], tasks[:1])
    assert half.state is RunState.RUNNING and half.facts.end_time is KEEP
