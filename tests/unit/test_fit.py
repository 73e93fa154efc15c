"""A request against the partitions' real shape (recorded scontrol output of this cluster), and a
mistyped field name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.core.access.fit import misfits, shapes
from gateway.core.slurm.parse import parse_nodes, parse_partitions
from gateway.core.slurm.rest_parse import parse_partitions_json
from gateway.core.spec.parts import Resources
from gateway.core.spec.run_spec import build_spec
from gateway.errors import SpecError

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "slurm"
SHAPES = shapes(
    parse_partitions((FIXTURES / "scontrol_partitions.txt").read_text()),
    parse_nodes((FIXTURES / "scontrol_nodes.txt").read_text()),
)


def found(queue: str, walltime_min: int | None = 60, **resources) -> list[tuple[str, str]]:
    others = {name: SHAPES[name] for name in ("cpu", "gpu") if name != queue}
    return [
        (m.field, m.message)
        for m in misfits(Resources(**resources), walltime_min, queue, SHAPES[queue], others)
    ]


def test_the_shapes_are_the_nodes():
    cpu, gpu = SHAPES["cpu"], SHAPES["gpu"]
    assert (cpu.nodes, cpu.cpus_per_node, cpu.mem_mb_per_node, cpu.gpus_per_node) == (2, 4, 4000, 0)
    assert (gpu.gpus_per_node, gpu.total_gpus, gpu.max_time_min) == (4, 8, 2880)


def test_gpus_on_a_queue_without_them_name_the_queue_that_has_them():
    assert found("cpu", gpus_per_node=8) == [
        ("resources.gpus_per_node", "queue cpu has no GPUs; queue gpu has 4 per node")
    ]
    assert found("cpu", gpus_per_node=1) == [
        ("resources.gpus_per_node", "queue cpu has no GPUs; queue gpu has 4 per node")
    ]
    assert found("cpu", gpus=2)[0][1] == "queue cpu has no GPUs; queue gpu has 4 per node"


def test_more_gpus_than_a_node_has_says_how_many_it_has():
    ((field, message),) = found("gpu", gpus_per_node=100)
    assert field == "resources.gpus_per_node"
    assert message == "queue gpu has at most 4 GPUs per node: ask for at most 4"
    # two tasks of 3 GPUs on one node
    ((field, message),) = found("gpu", gpus_per_task=3, tasks_per_node=2)
    assert field == "resources.gpus_per_task" and "this asks 6 GPUs on one node" in message


def test_more_nodes_than_the_partition_has():
    assert found("cpu", nodes=3) == [
        (
            "resources.nodes",
            "queue cpu has 2 nodes: ask for at most 2 (the gateway's rule: Slurm would take the job and "
            "keep it pending for good, PartitionNodeLimit)",
        )
    ]


def test_memory_and_cpus_beyond_a_node():
    ((field, message),) = found("cpu", mem_gb=64)
    assert field == "resources.mem_gb"
    assert message.startswith("nodes of queue cpu have at most 4000 MB (3.91 GB) of memory")
    assert "--mem=4000M" in message
    ((field, message),) = found("cpu", mem_per_cpu_mb=2000, cpus_per_task=4)
    assert field == "resources.mem_per_cpu_mb" and "8000 MB (7.81 GB) on one node" in message
    ((field, message),) = found("cpu", cpus_per_task=8)
    assert field == "resources.cpus_per_task"
    assert message == "nodes of queue cpu have at most 4 CPUs; this asks 8 on one node (8 per task x 1 tasks)"
    # sbatch -n 8 without -N: Slurm spreads the tasks over both nodes
    assert found("cpu", nodes=None, tasks_per_node=None, ntasks=8) == []
    assert found("cpu", nodes=None, tasks_per_node=None, ntasks=9)[0][0] == "resources.ntasks"


def test_a_time_limit_past_the_partitions_maxtime_names_a_queue_that_allows_it():
    assert found("cpu", walltime_min=2000) == [
        (
            "resources.walltime_min",
            "partition cpu of queue cpu allows at most 1440 minutes (its MaxTime); "
            "queue gpu has MaxTime 2880 minutes (the gateway's rule: Slurm would take the job and "
            "keep it pending for good, PartitionTimeLimit)",
        )
    ]


def test_what_fits_is_not_refused():
    assert found("cpu", mem_gb=3, cpus_per_task=4, nodes=2) == []
    assert found("gpu", gpus_per_node=4, cpus_per_gpu=1, mem_per_gpu_mb=900, nodes=2) == []
    assert found("gpu", gpus=8, nodes=None) == [] and found("gpu", mem_gb=0) == []


@pytest.mark.parametrize(
    ("data", "path", "message"),
    [
        ({"comand": "x"}, "comand", "unknown field; did you mean `command`?"),
        ({"command": "x", "resources": {"gpu_per_node": 1}}, "resources.gpu_per_node", "`gpus_per_node`?"),
        ({"command": "x", "zzz": 1}, "zzz", "unknown field; valid fields here: name, project, queue, "),
    ],
)  # fmt: skip
def test_a_mistyped_field_gets_the_field_it_is_close_to(data, path, message):
    with pytest.raises(SpecError) as info:
        build_spec({"name": "n", "project": "p", "queue": "cpu", **data})
    (issue,) = [i for i in info.value.issues if i.path == path]
    assert issue.message.startswith(message) or message in issue.message


# The partitions' own limits on one job. This cluster sets none (UNLIMITED), so the lines are this
# cluster's recorded ones with limits written in as Slurm 22.05 prints them (the formats
# " MaxNodes=%u", " MaxCPUsPerNode=%u", " DefMemPerCPU=%lu", " MaxMemPerNode=%lu", " MaxMemPerCPU=%lu"
# in libslurmfull's slurm_sprint_partition_info; a partition has the per-node or the per-CPU form of
# each memory limit). tests/service/test_partition_limits.py sets one on the live cluster.
LIMITED = shapes(
    parse_partitions((FIXTURES / "odd_scontrol_partitions_limits.txt").read_text()),
    parse_nodes((FIXTURES / "scontrol_nodes.txt").read_text()),
)


def limited(queue: str, **resources) -> list[tuple[str, str]]:
    others = {name: LIMITED[name] for name in ("cpu", "gpu") if name != queue}
    return [(m.field, m.message) for m in misfits(Resources(**resources), 60, queue, LIMITED[queue], others)]


def test_the_partition_limits_are_read_from_scontrol_and_from_slurmrestd():
    cpu, gpu = parse_partitions((FIXTURES / "odd_scontrol_partitions_limits.txt").read_text())
    assert (cpu.max_nodes, cpu.min_nodes, cpu.max_cpus_per_node) == (1, 0, 2)
    assert (cpu.def_mem_per_cpu_mb, cpu.max_mem_per_node_mb, cpu.max_mem_per_cpu_mb) == (1800, 3000, None)
    assert (gpu.max_nodes, gpu.min_nodes, gpu.max_mem_per_cpu_mb, gpu.def_mem_per_node_mb) == (
        None,
        2,
        600,
        None,
    )
    # this cluster's own partitions: every limit UNLIMITED, from scontrol and from slurmrestd alike
    recorded = parse_partitions((FIXTURES / "scontrol_partitions.txt").read_text())
    rest = parse_partitions_json(json.loads((FIXTURES / "rest_partitions.json").read_text()))
    for part in (*recorded, *rest):
        limits = (part.max_nodes, part.max_cpus_per_node, part.max_mem_per_node_mb, part.max_mem_per_cpu_mb)
        assert limits == (None,) * 4 and part.min_nodes == 0, part
        assert (part.def_mem_per_node_mb, part.def_mem_per_cpu_mb) == (None, None)
    assert [(p.name, p.max_time_min) for p in rest] == [(p.name, p.max_time_min) for p in recorded]


def test_max_nodes_is_named_with_what_would_fit():
    assert limited("cpu", nodes=2, mem_gb=1) == [
        (
            "resources.nodes",
            "partition cpu of queue cpu allows at most 1 node per job (its MaxNodes): ask for at most 1; "
            "queue gpu has 2 nodes per job (the gateway's rule: Slurm would take the job and keep it "
            "pending for good, PartitionNodeLimit)",
        )
    ]
    # without -N: 3 tasks of 1 CPU need two nodes of at most 2 CPUs each, and one node is the most
    ((field, message),) = limited("cpu", nodes=None, tasks_per_node=None, ntasks=3, mem_gb=1)
    assert field == "resources.ntasks"
    assert message == (
        "partition cpu of queue cpu lets a job have at most 2 CPUs (1 nodes x 2, its MaxNodes and "
        "MaxCPUsPerNode); this asks 3"
    )


def test_min_nodes_is_named():
    assert limited("gpu", nodes=1, mem_gb=1) == [
        (
            "resources.nodes",
            "partition gpu of queue gpu takes jobs of at least 2 nodes (its MinNodes): ask for at least 2 "
            "(the gateway's rule: Slurm would take the job and keep it pending for good, PartitionNodeLimit)",
        )
    ]
    assert limited("gpu", nodes=2, mem_gb=1) == []


def test_max_cpus_per_node_is_named_apart_from_the_nodes_cpus():
    ((field, message),) = limited("cpu", cpus_per_task=3, mem_gb=1)
    assert field == "resources.cpus_per_task"
    assert message == (
        "partition cpu of queue cpu lets a job use at most 2 CPUs per node (its MaxCPUsPerNode); this asks "
        "3 on one node (3 per task x 1 tasks); queue gpu has 4 per node"
    )
    assert limited("cpu", cpus_per_task=2, mem_gb=1) == []


def test_max_mem_per_node_is_named():
    ((field, message),) = limited("cpu", mem_gb=3.5)
    assert field == "resources.mem_gb"
    assert message == (
        "partition cpu of queue cpu allows at most 3000 MB (2.93 GB) per node (its MaxMemPerNode): ask for "
        "at most 2 GB (--mem=3000M)"
    )
    # past the node's memory as well: the node's own memory is the limit named
    assert limited("cpu", mem_gb=8)[0][1].startswith("nodes of queue cpu have at most 4000 MB")


def test_max_mem_per_cpu_raises_the_cpus_until_they_do_not_fit():
    # 3 GB on one node at 600 MB per CPU: Slurm would raise the job to 6 CPUs; a node has 4
    ((field, message),) = limited("gpu", nodes=2, mem_gb=3)
    assert field == "resources.mem_gb"
    assert message == (
        "partition gpu of queue gpu allows at most 600 MB per CPU (its MaxMemPerCPU), so Slurm would raise "
        "this job to 6 CPUs on one node for 3072 MB (3 GB), and a job may use 4 there: ask for at most 2 GB "
        "(--mem=2400M)"
    )
    assert limited("gpu", nodes=2, mem_gb=2) == []  # 4 CPUs
    # per CPU: 700 MB is twice the CPUs of 600; 2 CPUs per task become 4 (fits), 3 become 6 (does not)
    assert limited("gpu", nodes=2, mem_per_cpu_mb=700, cpus_per_task=2) == []
    ((field, message),) = limited("gpu", nodes=2, mem_per_cpu_mb=700, cpus_per_task=3)
    assert field == "resources.mem_per_cpu_mb" and "raise this job to 6 CPUs" in message
    assert message.endswith("ask for at most 600 MB per CPU, or fewer CPUs; queue cpu has 3000 MB per node")


def test_def_mem_per_cpu_is_what_a_job_asking_no_memory_gets():
    # 2 CPUs x 1800 MB = 3600 MB, past the MaxMemPerNode of 3000
    ((field, message),) = limited("cpu", cpus_per_task=2, mem_gb=None)
    assert field == "resources.mem_gb"
    assert message == (
        "this asks no memory, so partition cpu of queue cpu would give it 3600 MB (3.52 GB) on one node "
        "(its DefMemPerCPU, 1800 MB x 2 CPUs), and a job may have at most 3000 MB (2.93 GB) there: ask for "
        "memory, at most 2 GB (--mem=3000M)"
    )
    assert limited("cpu", cpus_per_task=1, mem_gb=None) == []
    assert limited("cpu", cpus_per_task=2, mem_gb=2) == []  # memory asked: DefMemPerCPU does not apply
