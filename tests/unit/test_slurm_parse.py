"""Parsers on recorded Slurm output (tests/fixtures/slurm) and on odd lines met in the wild."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gateway.core.slurm.parse import (
    SACCT_FIELDS,
    SQUEUE_FIELDS,
    US,
    parse_kv_line,
    parse_nodes,
    parse_partitions,
    parse_sacct,
    parse_sbatch_parsable,
    parse_squeue,
)
from gateway.core.slurm.states import RunState
from gateway.core.slurm.units import mem_to_kb, parse_duration_s, parse_exit_code, parse_time, parse_tres
from gateway.errors import SlurmOutputError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm"


def sacct_line(**fields: str) -> str:
    defaults = {name: "" for name in SACCT_FIELDS}
    defaults.update(ExitCode="0:0", ElapsedRaw="0", Timelimit="01:00:00", State="COMPLETED")
    defaults.update(fields)
    return US.join(defaults[name] for name in SACCT_FIELDS)


def squeue_line(**fields: str) -> str:
    defaults = {name: "" for name, _ in SQUEUE_FIELDS}
    defaults.update(state="PENDING", reason="None", partition="cpu", user="u", name="n", account="acct")
    defaults.update(array_task_id="N/A", submit="2026-11-30T04:00:00", start="N/A")
    defaults.update(fields)
    return US.join(defaults[name] for name, _ in SQUEUE_FIELDS)


# -- small readers ---------------------------------------------------------------


def test_times_are_utc_and_placeholders_are_none():
    assert parse_time("2026-11-30T04:11:21") == datetime(2026, 11, 30, 4, 11, 21, tzinfo=UTC)
    for word in ["Unknown", "None", "N/A", ""]:
        assert parse_time(word) is None
    with pytest.raises(SlurmOutputError, match="unreadable Slurm time"):
        parse_time("Mon Nov 30")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:00:05", 5),
        ("01:02:03", 3723),
        ("2-00:00:01", 172801),
        ("05:30", 330),
        ("00:01.500", 1),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("INVALID", None),
    ],
)
def test_durations(text, seconds):
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize(
    ("text", "kb"),
    [("1234K", 1234), ("512M", 512 * 1024), ("1.5G", int(1.5 * 1024 * 1024)), ("0", 0), ("", None)],
)
def test_memory_sizes(text, kb):
    assert mem_to_kb(text) == kb


def test_memory_bare_number_takes_default_unit_and_junk_is_refused():
    assert mem_to_kb("4000", default_unit="M") == 4000 * 1024
    with pytest.raises(SlurmOutputError):
        mem_to_kb("lots")


def test_exit_codes():
    assert parse_exit_code("0:0") == (0, 0)
    assert parse_exit_code("3:0") == (3, 0)
    assert parse_exit_code("0:9") == (0, 9)
    assert parse_exit_code("") == (None, None)
    with pytest.raises(SlurmOutputError):
        parse_exit_code("x:y")


def test_tres():
    assert parse_tres("billing=2,cpu=2,gres/gpu=2,gres/gpu:fake=2,mem=512M,node=1") == {
        "billing": "2",
        "cpu": "2",
        "gres/gpu": "2",
        "gres/gpu:fake": "2",
        "mem": "512M",
        "node": "1",
    }
    assert parse_tres("") == {}


def test_sbatch_parsable():
    assert parse_sbatch_parsable("123\n") == "123"
    assert parse_sbatch_parsable("123;gwlocal\n") == "123"
    assert parse_sbatch_parsable("sbatch: warning: x\n99\n") == "99"
    assert parse_sbatch_parsable("") is None
    assert parse_sbatch_parsable("Submitted batch job 5") is None


def test_kv_line_values_with_spaces_and_equals():
    kv = parse_kv_line(
        "NodeName=c1 Arch=x86_64 OS=Linux 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016 "
        "CfgTRES=cpu=4,mem=4000M,billing=4 AllocTRES= Reason=Not responding [slurm@2026-11-30T04:00:00]"
    )
    assert kv["OS"] == "Linux 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016"
    assert kv["CfgTRES"] == "cpu=4,mem=4000M,billing=4"
    assert kv["AllocTRES"] == ""
    assert kv["Reason"] == "Not responding [slurm@2026-11-30T04:00:00]"


# -- odd lines -------------------------------------------------------------------


def test_sacct_cancelled_by_uid_and_steps_fold_into_their_job():
    text = "\n".join(
        [
            sacct_line(JobID="10", JobIDRaw="10", State="CANCELLED by 1001", ExitCode="0:15", User="alice"),
            sacct_line(JobID="10.batch", JobIDRaw="10.batch", State="CANCELLED", MaxRSS="2048K"),
            sacct_line(JobID="10.extern", JobIDRaw="10.extern", State="COMPLETED", MaxRSS="100K"),
        ]
    )
    (record,) = parse_sacct(text)
    assert record.state is RunState.CANCELLED and record.cancelled_by_uid == 1001
    assert record.exit_signal == 15
    assert record.max_rss_kb == 2048
    assert [s.step for s in record.steps] == ["batch", "extern"]


def test_sacct_requeued_job_gives_one_record_per_attempt():
    text = "\n".join(
        [
            sacct_line(JobID="20", JobIDRaw="20", State="REQUEUED", Start="2026-11-30T01:00:00"),
            sacct_line(JobID="20.batch", JobIDRaw="20.batch", State="CANCELLED", MaxRSS="900K"),
            sacct_line(JobID="20", JobIDRaw="20", State="NODE_FAIL", Start="2026-11-30T01:05:00"),
            sacct_line(JobID="20", JobIDRaw="20", State="COMPLETED", Start="2026-11-30T01:10:00"),
            sacct_line(JobID="20.batch", JobIDRaw="20.batch", State="COMPLETED", MaxRSS="1200K"),
        ]
    )
    records = parse_sacct(text)
    assert [r.state for r in records] == [RunState.REQUEUED, RunState.NODE_FAILED, RunState.SUCCEEDED]
    assert [r.max_rss_kb for r in records] == [900, None, 1200]


def test_sacct_pending_array_range_and_tasks():
    text = "\n".join(
        [
            sacct_line(JobID="30_0", JobIDRaw="31", State="COMPLETED"),
            sacct_line(JobID="30_0.batch", JobIDRaw="31.batch", State="COMPLETED", MaxRSS="10K"),
            sacct_line(JobID="30_[1-4%2]", JobIDRaw="30", State="PENDING", Start="Unknown", End="Unknown"),
        ]
    )
    done, pending = parse_sacct(text)
    assert (done.array_job_id, done.array_task_id, done.job_id_raw, done.max_rss_kb) == ("30", "0", "31", 10)
    assert (pending.array_task_id, pending.state, pending.start_time) == ("[1-4%2]", RunState.QUEUED, None)


def test_sacct_states_slurm_may_add_later_are_unknown():
    (record,) = parse_sacct(sacct_line(JobID="40", JobIDRaw="40", State="LAUNCH_FAILED"))
    assert record.state is RunState.UNKNOWN and record.slurm_state == "LAUNCH_FAILED"


def test_sacct_orphan_step_is_skipped_and_bad_lines_refused():
    assert parse_sacct(sacct_line(JobID="50.batch", JobIDRaw="50.batch")) == []
    with pytest.raises(SlurmOutputError, match="fields"):
        parse_sacct("60|COMPLETED|0:0")


def test_squeue_odd_values():
    (job,) = parse_squeue(
        squeue_line(
            job_id="70_3",
            array_job_id="70",
            array_task_id="3",
            state="PENDING",
            reason="AssocGrpGRES",
            start="2026-12-01T10:00:00",
            comment="(null)",
            node_list="",
            tres="gres/gpu:fake:2",
            priority="4294901757",
        )
    )
    assert (job.array_job_id, job.array_task_id) == ("70", "3")
    assert job.reason == "AssocGrpGRES" and job.comment is None and job.node_list is None
    assert job.start_time == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert job.priority == 4294901757
    assert job.account == "acct" and job.gpus == 2
    (plain,) = parse_squeue(squeue_line(job_id="71", array_job_id="71", reason="None"))
    assert plain.array_job_id is None and plain.reason is None


def test_squeue_job_name_with_spaces_and_pipes():
    (job,) = parse_squeue(squeue_line(job_id="72", name="my | odd name"))
    assert job.name == "my | odd name"


# -- recorded output from the real cluster ---------------------------------------


def fixture(name: str) -> str:
    path = FIXTURES / name
    if not path.exists():
        pytest.fail(f"missing fixture {path}; record it with tests/fixtures/slurm/record.py")
    return path.read_text()


def test_recorded_sacct():
    records = parse_sacct(fixture("sacct_mixed.txt"))
    states = {r.slurm_state for r in records}
    assert {"COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY", "REQUEUED"} <= states
    # Quirk (Slurm 22.05): the requeued instance of a job is accounted without its comment.
    requeued_id = next(r.job_id for r in records if r.slurm_state == "REQUEUED")
    requeued_again = [r for r in records if r.job_id == requeued_id and r.slurm_state != "REQUEUED"]
    assert [r.comment for r in requeued_again] == [None]
    assert all(r.comment == "gw-fixture" for r in records if r not in requeued_again)
    oom = next(r for r in records if r.state is RunState.OUT_OF_MEMORY)
    assert oom.max_rss_kb and oom.max_rss_kb > 20 * 1024, "MaxRSS of the OOM job"
    cancelled = next(r for r in records if r.slurm_state == "CANCELLED" and r.start_time)
    assert cancelled.cancelled_by_uid == 0
    failed = next(r for r in records if r.state is RunState.FAILED)
    assert failed.exit_code == 3
    array = [r for r in records if r.array_job_id]
    assert len({r.array_task_id for r in array}) == 3
    gpu = next(r for r in records if r.partition == "gpu")
    assert gpu.alloc_gpus == 2
    requeued = [
        r
        for r in records
        if r.job_id_raw == next(x for x in records if x.slurm_state == "REQUEUED").job_id_raw
    ]
    assert len(requeued) >= 2, "a requeued job shows one record per attempt"


def test_recorded_squeue():
    jobs = parse_squeue(fixture("squeue_live.txt"))
    assert jobs and all(j.comment == "gw-fixture" for j in jobs)
    reasons = {j.reason for j in jobs}
    assert "PartitionTimeLimit" in reasons or "JobHeldUser" in reasons
    assert any(j.state is RunState.HELD for j in jobs)


def test_recorded_cluster_facts():
    partitions = {p.name: p for p in parse_partitions(fixture("scontrol_partitions.txt"))}
    assert partitions["cpu"].is_default and partitions["cpu"].max_time_min == 1440
    nodes = {n.name: n for n in parse_nodes(fixture("scontrol_nodes.txt"))}
    assert nodes["g1"].gpus == 4 and nodes["g1"].gpu_type == "fake"
    assert nodes["c1"].gpus == 0 and nodes["c1"].partitions == ["cpu"]
