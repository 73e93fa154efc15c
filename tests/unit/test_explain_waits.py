"""Explanations of waits for resources, nodes, time, dependencies, and odd inputs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.explain.pending import NodeState
from gateway.core.explain.text import (
    fmt_duration_s,
    fmt_number,
)
from tests.unit.explain_helpers import (
    NODES,
    NOW,
    PROJECT_GPUS,
    explain,
)

# ---- quotas -------------------------------------------------------------------------------------


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
