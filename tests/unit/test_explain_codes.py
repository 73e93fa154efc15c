"""Explanations of time limits, dependencies, fixed-wording codes, and any input at all."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.core.explain.pending import QuotaUse
from gateway.core.explain.text import (
    MAX_HOSTS,
    dependency_words,
    expand_hostlist,
    node_trouble,
)
from tests.unit.explain_helpers import (
    ALICE_GPUS,
    NODES,
    NOW,
    PROJECT_GPU_HOURS,
    PROJECT_GPUS,
    PROJECT_QUEUE,
    explain,
    text,
)

# ---- quotas -------------------------------------------------------------------------------------


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
