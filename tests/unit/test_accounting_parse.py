"""The accounting ingest's sacct parser on recorded output (tests/fixtures/slurm) and odd lines."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.core.accounting.parse import LEDGER_FIELDS, US, parse_ledger, tres_numbers
from gateway.errors import SlurmOutputError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm"


def line(**fields: str) -> str:
    values = {name: "" for name in LEDGER_FIELDS}
    values.update(
        Cluster="gwlocal",
        DBIndex="7",
        JobID="50",
        JobIDRaw="50",
        User="root",
        State="COMPLETED",
        ExitCode="0:0",
        Submit="2026-12-01T10:00:00",
        Eligible="2026-12-01T10:00:00",
        Start="2026-12-01T10:00:05",
        End="2026-12-01T10:01:05",
        ElapsedRaw="60",
        Timelimit="00:10:00",
        AllocTRES="billing=1,cpu=1,mem=262144K,node=1",
        ReqTRES="billing=1,cpu=1,mem=262144K,node=1",
    )
    values.update(fields)
    return US.join(values[name] for name in LEDGER_FIELDS)


def test_recorded_requeue_gives_one_record_per_attempt_with_its_own_identity():
    read = parse_ledger((FIXTURES / "sacct_ledger_requeue.txt").read_text())
    assert read.problems == []
    job2 = [r for r in read.records if r.job_id == "2"]
    assert [r.state for r in job2] == ["REQUEUED", "COMPLETED"]
    assert [r.db_index for r in job2] == [3, 5]
    assert job2[0].key != job2[1].key  # a requeue has its own submit time
    assert job2[0].submit_time == datetime(2026, 12, 1, 13, 45, 42, tzinfo=UTC)
    # once ended, both records carry the comment (while the requeued job ran again, sacct showed it empty)
    assert [r.comment for r in job2] == ["acct-probe", "acct-probe"]
    assert job2[0].failed and not job2[1].failed
    assert job2[1].elapsed_s == 60 and job2[1].alloc.mem_mb == 256 and job2[1].alloc.cpus == 1
    assert [s.step for s in job2[0].steps] == ["batch"] and job2[0].steps[0].state == "CANCELLED"
    assert job2[1].max_rss_kb == 3364  # the largest step MaxRSS


def test_recorded_gpu_job_has_typed_gpus_and_its_steps():
    read = parse_ledger((FIXTURES / "sacct_ledger_requeue.txt").read_text())
    gpu = next(r for r in read.records if r.job_id == "3")
    assert (gpu.alloc.gpus, gpu.alloc.gpu_type, gpu.partition) == (2, "fake", "gpu")
    assert [s.step for s in gpu.steps] == ["0", "1", "batch"]
    assert gpu.gpu_hours == pytest.approx(2 * 3 / 3600)


def test_cancelled_by_uid_running_and_pending_array_rest():
    text = "\n".join(
        [
            line(JobID="60", JobIDRaw="60", State="CANCELLED by 1001", ExitCode="0:15"),
            line(JobID="61", JobIDRaw="61", State="RUNNING", End="Unknown", ElapsedRaw="12"),
            line(
                JobID="62_[3-9%2]",
                JobIDRaw="62",
                State="PENDING",
                Start="Unknown",
                End="Unknown",
                ElapsedRaw="0",
            ),
        ]
    )
    read = parse_ledger(text)
    cancelled, running, pending = read.records
    assert (cancelled.state, cancelled.cancelled_by_uid, cancelled.exit_signal) == ("CANCELLED", 1001, 15)
    assert cancelled.cancelled and not cancelled.failed  # a cancellation is counted apart from failures
    assert running.end_time is None and not running.ended and not running.failed
    assert (pending.array_job_id, pending.array_task_id) == ("62", "[3-9%2]")
    assert pending.start_time is None and pending.elapsed_s == 0


def test_a_newline_in_a_job_name_is_joined_back():
    text = line(JobID="70", JobIDRaw="70", JobName="two\nlines", Comment="gw-r-ab-1") + "\n" + line()
    read = parse_ledger(text)
    assert read.problems == []
    assert [r.job_id for r in read.records] == ["70", "50"]
    assert read.records[0].name == "two\nlines" and read.records[0].comment == "gw-r-ab-1"


def test_odd_lines_are_skipped_and_named_not_fatal():
    text = "\n".join(
        [
            line(JobID="80", JobIDRaw="80", Submit="garbage"),  # unreadable time
            line(JobID="81.batch", JobIDRaw="81.batch"),  # a step whose allocation is not in the read
            line(JobID="82", JobIDRaw="82") + US + "extra",  # one field too many
            line(JobID="83", JobIDRaw="83", AllocTRES="cpu=x"),  # unreadable count
            line(JobID="84", JobIDRaw="84", Submit="Unknown"),  # no submit time: no identity
            line(JobID="85", JobIDRaw="85"),
        ]
    )
    read = parse_ledger(text)
    assert [r.job_id for r in read.records] == ["85"]
    assert len(read.problems) == 4
    assert any("80" in p for p in read.problems) and any("fields" in p for p in read.problems)


def test_step_lines_fold_into_the_latest_record_of_their_job():
    text = "\n".join(
        [
            line(JobID="90", JobIDRaw="90", State="REQUEUED", Submit="2026-12-01T10:00:00"),
            line(JobID="90.batch", JobIDRaw="90.batch", State="CANCELLED", MaxRSS="100K"),
            line(JobID="90", JobIDRaw="90", Submit="2026-12-01T10:02:00"),
            line(JobID="90.batch", JobIDRaw="90.batch", MaxRSS="300K"),
        ]
    )
    first, second = parse_ledger(text).records
    assert (first.max_rss_kb, second.max_rss_kb) == (100, 300)
    assert first.steps[0].state == "CANCELLED" and second.steps[0].state == "COMPLETED"


def test_tres_numbers():
    t = tres_numbers("billing=4,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=32G,node=2")
    assert (t.cpus, t.mem_mb, t.gpus, t.gpu_type, t.nodes, t.billing) == (8, 32768, 2, "a100", 2, 4)
    assert tres_numbers("cpu=1,mem=1024").mem_mb == 1024  # a bare number is MiB
    assert tres_numbers("gres/gpu:fake=3").gpus == 3  # only the typed count given
    assert tres_numbers("") == tres_numbers("cpu=0")
    with pytest.raises(SlurmOutputError):
        tres_numbers("cpu=two")
