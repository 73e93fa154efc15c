"""The pending-reason explainer: one test per Slurm reason family, with realistic numbers."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core.explain import Explanation, NodeState, QuotaUse, WaitContext, explain_wait
from gateway.core.explain_text import (
    MAX_HOSTS,
    dependency_words,
    expand_hostlist,
    fmt_duration_s,
    fmt_number,
    node_trouble,
    parse_limit_code,
)

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


def test_resources_shows_free_against_requested_and_nodes_out_of_service():
    found = explain("Resources", requested_gpus=2, nodes=NODES, jobs_ahead=("901", "902"))
    assert found.category == "resources"
    assert (
        found.summary
        == "waiting for free resources in partition gpu: needs 2 GPUs; free now: g1 0 of 4, g2 1 of 4"
    )
    assert "Out of service: g3 down (Not responding), g4 drained (ECC errors on GPU 2)." in found.details
    assert "2 jobs ahead in partition gpu; first: jobs 901 and 902." in found.details
    assert "Asking for fewer GPUs may start it sooner." in found.actions
    assert found.blocking is None


def test_resources_on_a_big_partition_sums_up_and_lists_per_node_in_details():
    nodes = tuple(NodeState(f"g{i:02d}", "MIXED", 64, 32, 8, 7 if i % 2 else 8) for i in range(1, 21))
    found = explain("Resources", requested_gpus=4, nodes=nodes)
    assert "free now: 10 GPUs on 20 nodes, at most 1 on one" in found.summary
    per_node = next(d for d in found.details if d.startswith("Free GPUs per node"))
    assert "g01 1 of 8" in per_node and "and 8 more" in per_node


def test_resources_for_a_cpu_job():
    nodes = (NodeState("c1", "ALLOCATED", 128, 128, 0, 0), NodeState("c2", "MIXED", 128, 120, 0, 0))
    found = explain("Resources", partition="cpu", requested_cpus=32, nodes=nodes)
    assert (
        found.summary
        == "waiting for free resources in partition cpu: needs 32 CPUs; free now: c1 0 of 128, c2 8 of 128"
    )


def test_resources_when_every_node_is_out_of_service():
    nodes = (NodeState("g1", "DOWN", 64, 0, 4, 0, "power"), NodeState("g2", "DRAINED", 64, 0, 4, 0))
    found = explain("Resources", requested_gpus=1, nodes=nodes)
    assert "no node in the partition is in service" in found.summary
    assert "Only 0 GPUs in service in the partition: it waits until more return." in found.details
    assert "Out of service: g1 down (power), g2 drained." in found.details


def test_resources_without_facts_still_explains():
    found = explain("Resources")
    assert found.summary == "waiting for free resources in partition gpu"
    assert found.actions


def test_priority_counts_the_jobs_ahead():
    ahead = tuple(str(n) for n in range(5001, 5013))
    found = explain("Priority", requested_gpus=1, jobs_ahead=ahead)
    assert found.category == "priority"
    assert found.summary == "waiting behind 12 higher-priority jobs in partition gpu"
    assert "First in line: jobs 5001, 5002, 5003, 5004, 5005 and 7 more." in found.details
    assert any("--time" in a for a in found.actions)


def test_priority_with_run_references_and_without_a_list():
    one = explain("Priority", jobs_ahead=("run r-7f job 88",))
    assert one.summary == "waiting behind 1 higher-priority job in partition gpu"
    assert "First in line: run r-7f job 88." in one.details
    assert explain("Priority").summary == "waiting behind higher-priority jobs in partition gpu"


@pytest.mark.parametrize(
    ("reason", "names"),
    [
        ("ReqNodeNotAvail, UnavailableNodes:g[1-2]", "g1, g2"),
        ("ReqNodeNotAvail, UnavailableNodes:n1,n2", "n1, n2"),
        ("ReqNodeNotAvail, UnavailableNodes:g[01-02],cpu3", "g01, g02, cpu3"),
        ("ReqNodeNotAvail,UnavailableNodes:g[1-2,4]", "g1, g2, g4"),
        ("ReqNodeNotAvail, UnavailableNodes:g[1-10]", "g1, g2, g3, g4, g5, g6, g7, g8 and 2 more"),
    ],
)
def test_req_node_not_avail_parses_the_node_list(reason, names):
    found = explain(reason)
    assert found.category == "nodes_unavailable"
    assert found.code == reason.strip()
    assert found.summary == f"waiting for nodes that are not available: {names}"


def test_req_node_not_avail_joins_node_states_and_suggests_shorter_time():
    found = explain("ReqNodeNotAvail, UnavailableNodes:g[3-4]", nodes=NODES, requested_walltime_min=2880)
    assert "Out of service: g3 down (Not responding), g4 drained (ECC errors on GPU 2)." in found.details
    assert any("maintenance" in d for d in found.details)
    assert any("shorter time limit" in a for a in found.actions)


@pytest.mark.parametrize(
    "reason", ["ReqNodeNotAvail", "ReqNodeNotAvail, UnavailableNodes:", "ReqNodeNotAvail, "]
)
def test_req_node_not_avail_without_names(reason):
    found = explain(reason, nodes=NODES)
    assert found.category == "nodes_unavailable"
    assert "down, drained or reserved" in found.summary
    assert "Out of service: g3 down (Not responding), g4 drained (ECC errors on GPU 2)." in found.details


def test_req_node_not_avail_reserved_for_maintenance():
    found = explain("ReqNodeNotAvail, Reserved for maintenance")
    assert found.summary == "waiting for nodes reserved for maintenance"


def test_node_down():
    found = explain("NodeDown", nodes=NODES)
    assert found.category == "nodes_unavailable"
    assert found.summary == "waiting for a node it needs that is down"
    assert any("g3 down" in d for d in found.details)


# ---- start estimate -----------------------------------------------------------------------------


def test_start_estimate_today_with_time_left():
    found = explain("Priority", start_estimate=datetime(2026, 3, 2, 14, 5, tzinfo=UTC), now=NOW)
    assert found.details[-1] == "Slurm expects it to start at 14:05 UTC, in 1 h 20 min."


def test_start_estimate_another_day_and_naive_times_taken_as_utc():
    found = explain("Resources", start_estimate=datetime(2026, 3, 4, 15, 0), now=datetime(2026, 3, 2, 12, 45))
    assert found.details[-1] == "Slurm expects it to start at 2026-03-04 15:00 UTC, in 2 d 2 h."


def test_start_estimate_in_another_time_zone_is_shown_in_utc():
    tz = datetime(2026, 3, 2, 15, 5, tzinfo=UTC).astimezone().tzinfo
    local = datetime(2026, 3, 2, 14, 5, tzinfo=UTC).astimezone(tz)
    assert (
        explain("Priority", start_estimate=local, now=NOW)
        .details[-1]
        .startswith("Slurm expects it to start at 14:05")
    )


def test_start_estimate_without_now_and_in_the_past():
    assert (
        explain("Priority", start_estimate=NOW).details[-1]
        == "Slurm expects it to start at 2026-03-02 12:45 UTC."
    )
    past = explain("Priority", start_estimate=NOW - timedelta(minutes=30), now=NOW)
    assert past.details[-1].startswith("Slurm's start estimate, 12:15 UTC, passed 30 min ago")
    soon = explain("Priority", start_estimate=NOW + timedelta(seconds=20), now=NOW)
    assert soon.details[-1] == "Slurm expects it to start at 12:45 UTC, about now."


@pytest.mark.parametrize("reason", ["Priority", "QOSGrpGRES", "Resources", "JobHeldUser", "Bogus", None])
def test_no_start_estimate_no_start_line(reason):
    found = explain(reason, now=NOW, quotas=(PROJECT_GPUS,), nodes=NODES, requested_gpus=1)
    assert not any("start at" in line or "estimate" in line for line in found.details)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0, "under 1 min"),
        (29, "under 1 min"),
        (45 * 60, "45 min"),
        (3600, "1 h"),
        (4800, "1 h 20 min"),
        (86400, "1 d"),
        (2 * 86400 + 3 * 3600 + 59, "2 d 3 h"),
        (-4800, "1 h 20 min"),
    ],
)
def test_durations(seconds, words):
    assert fmt_duration_s(seconds) == words


@pytest.mark.parametrize(
    ("value", "words"), [(2.0, "2"), (12.345, "12.3"), (0.04, "0"), (float("inf"), "inf")]
)
def test_numbers(value, words):
    assert fmt_number(value) == words


# ---- time limit, dependency, held, begin time, partitions -----------------------------------------


def test_partition_time_limit_asks_for_at_most_the_partition_max():
    found = explain("PartitionTimeLimit", requested_walltime_min=4320, partition_max_walltime_min=2880)
    assert found.category == "time_limit"
    assert found.summary == "asks for 3 d (4320 min); partition gpu allows at most 2 d (2880 min) per job"
    assert found.actions[0].startswith("Ask for at most 2880 min")
    assert "TimeLimit=2880" in found.actions[0]


def test_partition_time_limit_without_numbers():
    found = explain("PartitionTimeLimit", partition="long")
    assert found.summary == "asks for more run time than partition long allows per job"
    assert "scontrol show partition long" in found.actions[0]


def test_dependency_in_words():
    found = explain("Dependency", dependency="afterok:123:124,afterany:125(unfulfilled)")
    assert found.category == "dependency"
    assert found.summary == "waiting for jobs 123 and 124 to succeed and job 125 to end"
    assert explain("Dependency").summary == "waiting for the jobs it depends on"


def test_dependency_never_satisfied():
    found = explain("DependencyNeverSatisfied", dependency="afterok:123(failed)")
    assert found.category == "dependency"
    assert found.summary.startswith("will never start")
    assert "job 123 to succeed" in found.summary
    assert "Dependency as Slurm holds it: afterok:123(failed)." in found.details
    assert any("scancel" in a for a in found.actions)


@pytest.mark.parametrize(
    ("expression", "words"),
    [
        ("afterok:1", "job 1 to succeed"),
        ("afternotok:7?afterany:8", "job 7 to fail or job 8 to end"),
        ("after:5+10", "job 5 to start"),
        ("singleton", "the other jobs with its name and user to end"),
        ("aftercorr:9_*", "job 9_* to succeed, task by task"),
        ("weird:1", "weird:1"),
        ("", ""),
    ],
)
def test_dependency_expressions(expression, words):
    assert dependency_words(expression) == words


@pytest.mark.parametrize(
    ("reason", "category", "summary_part", "action_part"),
    [
        ("JobHeldUser", "held", "held by its owner", "scontrol release"),
        ("JobHeldAdmin", "held", "held by an administrator", "Ask the cluster admins"),
        ("launch failed requeued held", "held", "failed launch", "scontrol release"),
        ("BeginTime", "begin_time", "earliest start time", "StartTime=now"),
        ("PartitionDown", "partition", "partition gpu is down", "another partition"),
        ("PartitionInactive", "partition", "partition gpu is inactive", "another partition"),
        ("PartitionConfig", "partition", "partition gpu is not set up", "scontrol show partition gpu"),
        ("PartitionNodeLimit", "partition", "outside partition gpu's limits", "--nodes"),
        ("BadConstraints", "resources", "--constraint", "sinfo -p gpu"),
        ("Licenses", "license", "license", "scontrol show licenses"),
        ("Reservation", "reservation", "reservation", "scontrol show reservation"),
        ("JobArrayTaskLimit", "quota", "tasks running at once", "ArrayTaskThrottle"),
    ],
)
def test_codes_with_fixed_words(reason, category, summary_part, action_part):
    found = explain(reason)
    assert found.category == category
    assert found.code == reason
    assert summary_part in found.summary
    assert any(action_part in a for a in found.actions)
    assert "{p}" not in text(found)


def test_partition_node_limit_lists_nodes_out_of_service():
    found = explain("PartitionNodeLimit", nodes=NODES)
    assert "Out of service: g3 down (Not responding), g4 drained (ECC errors on GPU 2)." in found.details


# ---- odd and unknown reasons --------------------------------------------------------------------


@pytest.mark.parametrize("reason", [None, "", "   ", "None", " None ", "(None)"])
def test_no_reason_means_just_submitted(reason):
    found = explain(reason)
    assert found.code == "none"
    assert found.category == "not_waiting"
    assert "not looked at it yet" in found.summary


@pytest.mark.parametrize("reason", ["(Resources)", " Resources\n", "resources", "RESOURCES"])
def test_wrapped_spaced_or_recased_codes(reason):
    assert explain(reason).category == "resources"


def test_unknown_code_is_quoted_with_an_action_to_ask_the_admins():
    found = explain("FrobnicatorLimit")
    assert found.category == "unknown"
    assert found.code == "FrobnicatorLimit"
    assert '"FrobnicatorLimit"' in found.summary
    assert any("admins" in a and "FrobnicatorLimit" in a for a in found.actions)


def test_hostile_unknown_code_stays_on_one_line_and_short():
    found = explain("x" * 500 + "\nrm -rf /; {p} {code}")
    assert found.category == "unknown"
    assert "\n" not in found.summary and "\n" not in found.code
    assert len(found.summary) < 200


CODES_IN_THE_BRIEF = [
    "Resources",
    "Priority",
    "Dependency",
    "DependencyNeverSatisfied",
    "JobHeldUser",
    "JobHeldAdmin",
    "BeginTime",
    "PartitionTimeLimit",
    "PartitionConfig",
    "PartitionNodeLimit",
    "PartitionDown",
    "PartitionInactive",
    "ReqNodeNotAvail, UnavailableNodes:n1,n2",
    "NodeDown",
    "BadConstraints",
    "Licenses",
    "Reservation",
    "QOSGrpGRES",
    "QOSGrpGRESMinutes",
    "QOSMaxWallDurationPerJobLimit",
    "QOSMaxGRESPerUser",
    "QOSGrpSubmitJobsLimit",
    "AssocGrpSubmitJobsLimit",
    "QOSMaxJobsPerUserLimit",
    "AssocGrpGRES",
    "AssocGrpGRESMinutes",
    "AssocGrpCpuLimit",
    "AssocMaxJobsLimit",
    "AssocGrpJobsLimit",
    "AssocMaxWallDurationPerJobLimit",
    "launch failed requeued held",
]


@pytest.mark.parametrize("reason", CODES_IN_THE_BRIEF)
@pytest.mark.parametrize("facts", [{}, {"requested_gpus": 2, "requested_walltime_min": 90, "nodes": NODES}])
def test_every_listed_code_is_explained_in_one_line_with_actions(reason, facts):
    found = explain(reason, quotas=(PROJECT_GPUS, ALICE_GPUS, PROJECT_GPU_HOURS, PROJECT_QUEUE), **facts)
    assert found.category not in ("unknown", "not_waiting")
    assert found.summary and "\n" not in found.summary
    assert found.actions
    assert all(line.strip() == line and line for line in (*found.details, *found.actions))


CATEGORIES = {
    "quota",
    "resources",
    "priority",
    "dependency",
    "held",
    "time_limit",
    "partition",
    "nodes_unavailable",
    "begin_time",
    "license",
    "reservation",
    "unknown",
    "not_waiting",
}
numbers = st.floats(allow_nan=True, allow_infinity=True)
scopes = st.one_of(st.text(), st.sampled_from(["project vision", "user alice in project vision"]))
resources = st.one_of(
    st.text(),
    st.sampled_from(
        ["GPUs at once", "GPU-hours this month", "jobs in queue", "running jobs", "wall time per job"]
    ),
)


@given(
    reason=st.one_of(st.none(), st.text(), st.sampled_from(CODES_IN_THE_BRIEF)),
    quotas=st.lists(st.builds(QuotaUse, scopes, resources, numbers, numbers), max_size=3),
    gpus=st.integers(-2, 64),
    walltime=st.one_of(st.none(), st.integers(-10, 10**6)),
    dependency=st.one_of(st.none(), st.text()),
)
def test_any_input_gets_an_explanation_never_an_exception(reason, quotas, gpus, walltime, dependency):
    found = explain(
        reason,
        requested_gpus=gpus,
        requested_walltime_min=walltime,
        partition_max_walltime_min=walltime,
        quotas=tuple(quotas),
        nodes=NODES,
        dependency=dependency,
        start_estimate=NOW,
        now=NOW,
    )
    assert found.category in CATEGORIES
    assert found.summary and found.actions
    assert "\n" not in found.summary


def test_explanations_are_frozen():
    found = explain("Priority")
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.summary = "x"  # type: ignore[misc]


# ---- host lists and node states -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("g1", ("g1",)),
        ("g[1-3]", ("g1", "g2", "g3")),
        ("g[08-10]", ("g08", "g09", "g10")),
        ("g[1-2,5],c7", ("g1", "g2", "g5", "c7")),
        ("r[1-2]n[1-2]", ("r1n1", "r1n2", "r2n1", "r2n2")),
        ("g1,g1, ,g2", ("g1", "g2")),
        ("g[1-", ("g[1-",)),
        ("g[a-b]", ("g[a-b]",)),
        ("g[3-1]", ("g[3-1]",)),
        (f"g[1-{MAX_HOSTS * 10}]", (f"g[1-{MAX_HOSTS * 10}]",)),
        ("", ()),
    ],
)
def test_expand_hostlist(hostlist, names):
    assert expand_hostlist(hostlist) == names


@pytest.mark.parametrize(
    ("state", "trouble"),
    [
        ("IDLE", None),
        ("MIXED", None),
        ("ALLOCATED", None),
        ("IDLE~", None),
        ("DOWN*", "down"),
        ("DOWN+NOT_RESPONDING", "down"),
        ("DRAINED", "drained"),
        ("IDLE+DRAIN", "drained"),
        ("DRAINING", "draining"),
        ("MIXED+DRAIN", "draining"),
        ("drng", "draining"),
        ("IDLE*", "not responding"),
        ("MAINT", "in maintenance"),
        ("idle$", "in maintenance"),
        ("RESERVED", "reserved"),
        ("FAIL", "failing"),
        ("", None),
    ],
)
def test_node_trouble(state, trouble):
    assert node_trouble(state) == trouble
