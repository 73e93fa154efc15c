"""The pending-reason explainer: one test per Slurm reason family, with realistic numbers."""

from __future__ import annotations

import pytest

from gateway.core.explain.pending import QuotaUse
from gateway.core.explain.text import (
    parse_limit_code,
)
from tests.unit.explain_helpers import (
    ALICE_GPUS,
    PROJECT_GPU_HOURS,
    PROJECT_GPUS,
    PROJECT_QUEUE,
    explain,
    text,
)

# ---- quotas -------------------------------------------------------------------------------------


def test_qos_group_gpu_cap_names_numbers_and_holders():
    found = explain("QOSGrpGRES", requested_gpus=2, quotas=(PROJECT_GPUS,), running_in_scope=("4711",))
    assert found.category == "quota"
    assert found.code == "QOSGrpGRES"
    assert (
        found.summary == "waiting for the project's GPU cap: 2 of 2 GPUs in use (project vision) by job 4711"
    )
    assert found.blocking == PROJECT_GPUS
    assert "This job needs 2 GPUs; 2 GPUs must free up before it fits." in found.details
    assert found.actions[0].startswith("Wait")
    assert any("raise" in a for a in found.actions)


def test_group_gpu_cap_says_how_many_must_free_up_and_what_fits_now():
    quota = QuotaUse("project vision", "GPUs at once", 3, 4)
    found = explain("AssocGrpGRES", requested_gpus=2, quotas=(quota,), running_in_scope=("r-1 job 11", "12"))
    assert "3 of 4 GPUs in use" in found.summary
    assert "by r-1 job 11 and job 12" in found.summary
    assert "This job needs 2 GPUs; 1 GPU must free up before it fits." in found.details
    assert "Ask for at most 1 GPU to fit in what is free now." in found.actions


def test_request_larger_than_the_whole_cap_can_never_fit():
    found = explain(
        "QOSGrpGRES", requested_gpus=8, quotas=(QuotaUse("project vision", "GPUs at once", 0, 4),)
    )
    assert "more than the whole cap of 4" in text(found)
    assert any(a.startswith("Ask for at most 4 GPUs") for a in found.actions)


def test_the_blocking_quota_is_preferred_over_one_with_room():
    roomy = QuotaUse("project other", "GPUs at once", 1, 8)
    found = explain("QOSGrpGRES", requested_gpus=1, quotas=(roomy, PROJECT_GPU_HOURS, PROJECT_GPUS))
    assert found.blocking == PROJECT_GPUS


def test_quota_with_no_matching_entry_says_the_cap_is_slurms_and_numbers_unknown():
    found = explain("QOSGrpGRES", requested_gpus=2, quotas=(PROJECT_QUEUE, PROJECT_GPU_HOURS))
    assert found.category == "quota"
    assert found.blocking is None
    assert "set in Slurm" in found.summary and "no numbers" in found.summary
    assert "sacctmgr show qos" in " ".join(found.actions)
    assert not any(ch.isdigit() for ch in found.summary)


def test_gpu_hour_budget_shows_use_and_what_the_job_would_take():
    found = explain(
        "QOSGrpGRESMinutes",
        requested_gpus=2,
        requested_walltime_min=600,
        quotas=(PROJECT_GPUS, PROJECT_GPU_HOURS),
        running_in_scope=("31", "32"),
    )
    assert found.category == "quota"
    assert found.blocking == PROJECT_GPU_HOURS
    assert found.summary.startswith(
        "waiting for the project's GPU-hour budget: 495 of 500 GPU-hours used this month"
    )
    assert "This job may use up to 20 GPU-hours (2 GPUs for 10 h (600 min)); 5 left." in found.details
    assert "Running now in this scope: jobs 31 and 32." in found.details
    assert any("reset" in a for a in found.actions)
    assert any("--time" in a for a in found.actions)


def test_association_gpu_hour_budget_without_numbers_points_at_sacctmgr_assoc():
    found = explain("AssocGrpGRESMinutes", requested_gpus=1)
    assert found.category == "quota"
    assert "GPU-hour budget set in Slurm on the account" in found.summary
    assert any("sacctmgr show assoc" in a for a in found.actions)


def test_per_user_gpu_limit_takes_the_users_cap():
    found = explain("QOSMaxGRESPerUser", requested_gpus=1, quotas=(PROJECT_GPUS, ALICE_GPUS))
    assert found.blocking == ALICE_GPUS
    assert found.summary.startswith("waiting for the per-user GPU cap: 4 of 4 GPUs in use (user alice")


def test_per_user_limit_ignores_project_caps():
    found = explain("QOSMaxGRESPerUser", requested_gpus=1, quotas=(PROJECT_GPUS,))
    assert found.blocking is None
    assert "no numbers" in found.summary


@pytest.mark.parametrize("code", ["QOSGrpSubmitJobsLimit", "AssocGrpSubmitJobsLimit"])
def test_submit_limits_count_jobs_in_the_queue(code):
    found = explain(code, quotas=(PROJECT_GPUS, PROJECT_QUEUE))
    assert found.category == "quota"
    assert found.blocking == PROJECT_QUEUE
    assert "100 of 100 jobs in queue" in found.summary
    assert "Cancel queued jobs you no longer need, or wait for some to finish." in found.actions


@pytest.mark.parametrize("code", ["QOSMaxJobsPerUserLimit", "AssocMaxJobsLimit", "AssocGrpJobsLimit"])
def test_running_job_limits(code):
    found = explain(code, quotas=(PROJECT_QUEUE,))  # a queue cap is not a running-jobs cap
    assert found.category == "quota"
    assert "running-jobs cap" in found.summary
    assert found.blocking is None
    assert found.actions[0] == "Wait: it starts by itself when a running job in this scope ends."


def test_running_jobs_cap_with_numbers():
    quota = QuotaUse("user alice in project vision", "running jobs", 5, 5)
    found = explain("AssocMaxJobsLimit", quotas=(quota,), running_in_scope=("1", "2", "3", "4", "5", "6"))
    assert "5 of 5 running jobs" in found.summary
    assert "by jobs 1, 2, 3, 4, 5 and 1 more" in found.summary
    assert "This job needs 1 running job; 1 running job must end first." in found.details


def test_association_cpu_cap():
    quota = QuotaUse("project vision", "CPUs at once", 250, 256)
    found = explain("AssocGrpCpuLimit", requested_cpus=16, quotas=(quota, PROJECT_GPUS))
    assert found.blocking == quota
    assert "250 of 256 CPUs in use" in found.summary
    assert "This job needs 16 CPUs; 10 CPUs must free up before it fits." in found.details
    assert "Ask for at most 6 CPUs to fit in what is free now." in found.actions


@pytest.mark.parametrize("code", ["QOSMaxWallDurationPerJobLimit", "AssocMaxWallDurationPerJobLimit"])
def test_wall_time_per_job_limit_without_the_value(code):
    found = explain(code, requested_walltime_min=4320)
    assert found.category == "time_limit"
    assert "will not start as it is" in found.summary
    assert "3 d (4320 min) asked" in found.summary
    assert "set in Slurm" in found.summary
    assert any("TimeLimit=" in a for a in found.actions)


def test_wall_time_per_job_limit_with_the_value():
    cap = QuotaUse("qos normal", "wall time per job", 0, 2880)
    found = explain("QOSMaxWallDurationPerJobLimit", requested_walltime_min=4320, quotas=(cap,))
    assert "(3 d (4320 min) asked, at most 2 d (2880 min))" in found.summary
    assert found.actions[0].startswith("Ask for at most 2880 min")
    assert "--time=2880" in found.actions[0]
    assert found.blocking == cap


def test_per_job_gpu_limit():
    cap = QuotaUse("qos normal", "GPUs per job", 0, 8)
    found = explain("QOSMaxGRESPerJob", requested_gpus=16, quotas=(cap, PROJECT_GPUS))
    assert found.category == "quota"
    assert found.blocking == cap
    assert "(16 GPUs asked, at most 8 GPUs)" in found.summary
    assert found.actions == ("Resubmit asking for at most 8 GPUs.",)


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("QOSGrpMemLimit", "memory cap"),
        ("QOSGrpNodeLimit", "node cap"),
        ("QOSGrpCPUMinutesLimit", "CPU-hour budget"),
        ("QOSGrpCPURunMinutesLimit", "CPU-hour budget"),
        ("AssocGrpBillingMinutes", "billing-units budget"),
        ("QOSGrpGRESRunMinutes", "GPU-hour budget"),
        ("QOSMaxNodePerJobLimit", "more nodes than the QOS allows per job"),
        ("AssocMaxCpuPerJobLimit", "more CPUs than the account allows per job"),
        ("QOSMinGRES", "fewer GPUs than the QOS requires per job"),
        ("QOSMaxGRESPerAccount", "GPU cap"),
        ("QOSGrpWallLimit", "wall-time cap"),
        ("QOSGrpEnergy", "energy cap"),
    ],
)
def test_unlisted_limit_codes_are_explained_from_their_parts(code, words):
    found = explain(code, requested_gpus=1, requested_cpus=4)
    assert found.category == "quota"
    assert words in found.summary
    assert found.details[0].startswith(f"Slurm's {code}:")
    assert found.actions


@pytest.mark.parametrize(
    ("code", "parts"),
    [
        ("QOSGrpGRES", ("QOS", "Grp", "gpu", None, None)),
        ("QOSGrpGRESMinutes", ("QOS", "Grp", "gpu", "minutes", None)),
        ("QOSGrpGRESRunMinutes", ("QOS", "Grp", "gpu", "run_minutes", None)),
        ("AssocGrpSubmitJobsLimit", ("Assoc", "Grp", "submit", None, None)),
        ("QOSMaxSubmitJobPerUserLimit", ("QOS", "Max", "submit", None, "user")),
        ("AssocMaxJobsLimit", ("Assoc", "Max", "jobs", None, "user")),
        ("QOSMaxJobsPerAccount", ("QOS", "Max", "jobs", None, "account")),
        ("QOSMaxWallDurationPerJobLimit", ("QOS", "Max", "wall", None, "job")),
        ("QOSMaxCpuMinutesPerJobLimit", ("QOS", "Max", "cpu", "minutes", "job")),
        ("QOSGrpMemoryMinutes", ("QOS", "Grp", "mem", "minutes", None)),
        ("QOSMaxGRESPerNode", ("QOS", "Max", "gpu", None, "node")),
        ("QOSGrpSomethingNew", ("QOS", "Grp", "other", None, None)),
    ],
)
def test_limit_code_parts(code, parts):
    limit = parse_limit_code(code)
    assert limit is not None
    assert (limit.owner, limit.kind, limit.resource, limit.budget, limit.per) == parts


@pytest.mark.parametrize("code", ["QOSJobLimit", "Resources", "qosgrpgres", "QOS", "AssocGrp GRES", ""])
def test_non_limit_codes_are_not_parsed_as_limits(code):
    assert parse_limit_code(code) is None


# ---- resources, priority, nodes -----------------------------------------------------------------
