"""The slurmrestd job description built from #SBATCH lines, and slurmrestd's JSON read as records."""

from __future__ import annotations

import pytest

from gateway.core.slurm.rest_job import job_description
from gateway.core.slurm.rest_parse import expand_tasks, live_exit_codes, parse_jobs
from gateway.errors import SlurmOutputError, SubmitRejected

SCRIPT = """#!/bin/bash
# a comment line does not end the directives
#SBATCH --job-name="two words" -p gpu
#SBATCH --mem=2G --time=1-00:00:30 --gpus-per-node=fake:2
#SBATCH --exclude=g2 --comment=theirs --no-requeue
#SBATCH --requeue
echo go
#SBATCH --exclusive
"""


def test_directives_become_fields_and_the_tag_is_the_comment():
    body = job_description(SCRIPT, comment="tag-1", environment={"A": "1"}, working_directory="/w",
                           exclude_nodes=["g1"])  # fmt: skip
    job = body["job"]
    assert body["script"] == SCRIPT
    assert job == {
        "current_working_directory": "/w",
        "name": "two words",
        "partition": "gpu",
        "memory_per_node": 2048,
        "time_limit": 1441,
        "gpus_per_node": "fake:2",
        "exclude_nodes": "g2,g1",
        "requeue": True,
        "comment": "tag-1",
        "environment": {"A": "1"},
    }  # --exclusive comes after the first command: sbatch does not read it either


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("#SBATCH --exclusive", "--exclusive has no field"),
        ("#SBATCH --nosuch=1", "not an sbatch option"),
        ("#SBATCH --mem=lots", "not a memory size"),
        ("#SBATCH --signal=B:USR1@60", "B: or R: prefix"),
    ],
)
def test_what_the_description_cannot_carry_is_refused_by_line(line, message):
    with pytest.raises(SubmitRejected, match=message) as info:
        job_description(f"#!/bin/bash\n{line}\ntrue\n", comment="t", environment={}, working_directory="/")
    assert "line 2" in str(info.value)


def test_array_task_lists_expand_like_squeue_array():
    assert expand_tasks("1-3,7,10-14:2%2") == ["1", "2", "3", "7", "10", "12", "14"]
    with pytest.raises(SlurmOutputError):
        expand_tasks("1-x")


def test_a_pending_array_is_one_status_per_task_and_exit_codes_are_wait_statuses():
    answer = {
        "jobs": [
            {"job_id": 302, "array_job_id": 301, "array_task_id": 0, "job_state": "RUNNING",
             "state_reason": "None", "partition": "cpu", "user_name": "u", "name": "n", "exit_code": 768},
            {"job_id": 301, "array_job_id": 301, "array_task_id": None, "array_task_string": "1-2%1",
             "job_state": "PENDING", "state_reason": "JobArrayTaskLimit", "start_time": 0,
             "partition": "cpu", "user_name": "u", "name": "n", "exit_code": 9},
        ]
    }  # fmt: skip
    statuses = parse_jobs(answer)
    assert [(s.job_id, s.array_task_id, s.slurm_state) for s in statuses] == [
        ("301_0", "0", "RUNNING"),
        ("301_1", "1", "PENDING"),
        ("301_2", "2", "PENDING"),
    ]
    assert statuses[1].start_time is None and statuses[1].reason == "JobArrayTaskLimit"
    assert live_exit_codes(answer) == {"302": (3, 0), "301": (0, 9)}
