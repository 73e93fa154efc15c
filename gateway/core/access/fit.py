"""Whether a run's request fits the cluster at all: each partition's real shape, and what would fit.

A request no node of its partition could ever hold (GPUs on a partition with
none, more memory or CPUs than a node has, more nodes than the partition has,
a time limit past the partition's MaxTime) is not refused by sbatch in every
case: some are accepted and pend forever (``PartitionNodeLimit``,
``PartitionTimeLimit``). ``shapes`` reads a partition's shape from Slurm's
partition and node records; ``misfits`` says, in one sentence per limit, the
limit, the value asked and what would fit (the largest value here, and the
project's other queues where the request would fit).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gateway.core.slurm.records import NodeInfo, PartitionInfo
from gateway.core.spec.parts import Resources

# Why the gateway refuses what sbatch would accept: a job Slurm keeps pending for good, by rule.
FOREVER = "the gateway's rule: Slurm would take the job and keep it pending for good,"


@dataclass(frozen=True)
class Shape:
    """What a partition's nodes have: the largest of each, and how many nodes there are."""

    partition: str
    nodes: int
    cpus_per_node: int  # the most CPUs one node has
    mem_mb_per_node: int  # the most memory (RealMemory, MiB) one node has
    gpus_per_node: int  # the most GPUs one node has (0: none)
    total_cpus: int
    total_gpus: int
    max_time_min: int | None  # None: no limit


def shapes(partitions: Iterable[PartitionInfo], nodes: Sequence[NodeInfo]) -> dict[str, Shape]:
    """Each partition's shape by name, from ``scontrol show partition`` and ``scontrol show node``
    (every node counts, whatever its state: a drained node comes back)."""
    out = {}
    for part in partitions:
        own = [n for n in nodes if part.name in n.partitions]
        out[part.name] = Shape(
            partition=part.name,
            nodes=len(own) or part.total_nodes,
            cpus_per_node=max((n.cpus for n in own), default=0),
            mem_mb_per_node=max((n.real_memory_mb for n in own), default=0),
            gpus_per_node=max((n.gpus for n in own), default=0),
            total_cpus=sum(n.cpus for n in own) or part.total_cpus,
            total_gpus=sum(n.gpus for n in own),
            max_time_min=part.max_time_min,
        )
    return out


@dataclass(frozen=True)
class Misfit:
    """One limit a request passes: the spec field, the sentence, the value asked."""

    field: str
    message: str
    value: int | float | str


@dataclass(frozen=True)
class _Need:
    """What one node must hold (per node) and the job in all."""

    nodes: int | None  # asked; None: Slurm picks
    tasks_per_node: int
    cpus_per_node: int
    gpus_per_node: int
    mem_mb_per_node: int | None  # None: not asked (or 0: all of a node's)
    total_cpus: int
    total_gpus: int


def _need(res: Resources) -> _Need:
    nodes = res.nodes
    if res.ntasks and nodes and not res.tasks_per_node:
        tasks_per_node = math.ceil(res.ntasks / nodes)
    else:
        tasks_per_node = res.tasks_per_node or 1
    if res.gpus_per_node:
        gpus_node = res.gpus_per_node
    elif res.gpus_per_task:
        gpus_node = res.gpus_per_task * tasks_per_node
    elif res.gpus:
        gpus_node = math.ceil(res.gpus / nodes) if nodes else 1
    else:
        gpus_node = 0
    if res.cpus_per_gpu:
        cpus_node = res.cpus_per_gpu * max(gpus_node, 1)
    else:
        cpus_node = (res.cpus_per_task or 1) * tasks_per_node
    mem: int | None = None
    if res.mem_gb:
        mem = res.mem_mb
    elif res.mem_per_cpu_mb:
        mem = res.mem_per_cpu_mb * cpus_node
    elif res.mem_per_gpu_mb:
        mem = res.mem_per_gpu_mb * max(gpus_node, 1)
    tasks = res.ntasks or tasks_per_node * (nodes or 1)
    total_cpus = (res.cpus_per_task or 1) * tasks if not res.cpus_per_gpu else cpus_node * (nodes or 1)
    return _Need(nodes, tasks_per_node, cpus_node, gpus_node, mem, total_cpus, res.gpus_total())


def _mem(mb: int) -> str:
    return f"{mb} MB ({mb / 1024:.3g} GB)"


def misfits(
    res: Resources,
    walltime_min: int | None,
    queue: str,
    shape: Shape,
    others: dict[str, Shape],
) -> list[Misfit]:
    """The limits of ``shape`` (queue ``queue``'s partition) that ``res`` passes, each with what would
    fit; ``others``: the project's other queues' shapes by queue name, named where the request fits.
    Empty when the request could run there one day."""
    need = _need(res)
    out: list[Misfit] = []

    def elsewhere(fits: str, ok: Callable[[Shape], bool]) -> str:
        """'; queue gpu has 4 per node' for each other queue where ``ok``."""
        names = [f"queue {name} has {fits.format(s=s)}" for name, s in sorted(others.items()) if ok(s)]
        return "; " + "; ".join(names) if names else ""

    gpu_field = (
        "resources.gpus_per_node"
        if res.gpus_per_node
        else ("resources.gpus_per_task" if res.gpus_per_task else "resources.gpus")
    )
    if need.gpus_per_node and shape.gpus_per_node == 0:
        more = elsewhere("{s.gpus_per_node} per node", lambda s: s.gpus_per_node > 0)
        out.append(Misfit(gpu_field, f"queue {queue} has no GPUs{more}", res.gpus_asked()))
    elif need.gpus_per_node > shape.gpus_per_node:
        more = elsewhere("{s.gpus_per_node} per node", lambda s: s.gpus_per_node >= need.gpus_per_node)
        what = f"{need.gpus_per_node} GPUs on one node" if gpu_field != "resources.gpus_per_node" else ""
        out.append(
            Misfit(
                gpu_field,
                f"queue {queue} has at most {shape.gpus_per_node} GPUs per node"
                + (f" (this asks {what})" if what else "")
                + f": ask for at most {shape.gpus_per_node}{more}",
                res.gpus_asked(),
            )
        )
    elif need.total_gpus > shape.total_gpus and need.nodes is None:
        out.append(
            Misfit(
                gpu_field,
                f"queue {queue} has {shape.total_gpus} GPUs in all: ask for at most {shape.total_gpus}",
                need.total_gpus,
            )
        )
    if need.nodes is not None and need.nodes > shape.nodes:
        more = elsewhere("{s.nodes} nodes", lambda s: s.nodes >= (need.nodes or 1))
        out.append(
            Misfit(
                "resources.nodes",
                f"queue {queue} has {shape.nodes} node{'s' * (shape.nodes != 1)}: "
                f"ask for at most {shape.nodes}{more} ({FOREVER} PartitionNodeLimit)",
                need.nodes,
            )
        )
    if shape.cpus_per_node and need.cpus_per_node > shape.cpus_per_node:
        field = "resources.cpus_per_gpu" if res.cpus_per_gpu else "resources.cpus_per_task"
        per = (
            f"{res.cpus_per_gpu} per GPU x {need.gpus_per_node} GPUs"
            if res.cpus_per_gpu
            else f"{res.cpus_per_task or 1} per task x {need.tasks_per_node} tasks"
        )
        more = elsewhere("{s.cpus_per_node} per node", lambda s: s.cpus_per_node >= need.cpus_per_node)
        out.append(
            Misfit(
                field,
                f"nodes of queue {queue} have at most {shape.cpus_per_node} CPUs; this asks "
                f"{need.cpus_per_node} on one node ({per}){more}",
                need.cpus_per_node,
            )
        )
    elif need.nodes is None and shape.total_cpus and need.total_cpus > shape.total_cpus:
        out.append(
            Misfit(
                "resources.ntasks",
                f"queue {queue} has {shape.total_cpus} CPUs in all; this asks {need.total_cpus}",
                need.total_cpus,
            )
        )
    mem_node = need.mem_mb_per_node or 0
    if mem_node and shape.mem_mb_per_node and mem_node > shape.mem_mb_per_node:
        field = next(
            f"resources.{n}" for n in ("mem_gb", "mem_per_cpu_mb", "mem_per_gpu_mb") if getattr(res, n)
        )
        per = "" if res.mem_gb else f" ({_mem(mem_node)} on one node)"
        more = elsewhere("{s.mem_mb_per_node} MB per node", lambda s: s.mem_mb_per_node >= mem_node)
        out.append(
            Misfit(
                field,
                f"nodes of queue {queue} have at most {_mem(shape.mem_mb_per_node)} of memory{per}: "
                f"ask for at most {shape.mem_mb_per_node // 1024 or 1} GB"
                f" (--mem={shape.mem_mb_per_node}M){more}",
                getattr(res, field.split(".")[1]),
            )
        )
    if walltime_min is not None and shape.max_time_min is not None and walltime_min > shape.max_time_min:
        more = elsewhere(
            "MaxTime {s.max_time_min} minutes",
            lambda s: s.max_time_min is None or s.max_time_min >= walltime_min,
        )
        out.append(
            Misfit(
                "resources.walltime_min",
                f"partition {shape.partition} of queue {queue} allows at most {shape.max_time_min} "
                f"minutes (its MaxTime){more} ({FOREVER} PartitionTimeLimit)",
                walltime_min,
            )
        )
    return out
