"""A request against the partitions' real shape (recorded scontrol output of this cluster), and a
mistyped field name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.core.access.fit import misfits, shapes
from gateway.core.slurm.parse import parse_nodes, parse_partitions
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
