"""Whether a run's request fits the cluster at all: each partition's real shape, and what would fit.

A request no node of its partition could ever hold (GPUs on a partition with
none, more memory or CPUs than a node has, more nodes than the partition has,
a time limit past the partition's MaxTime) is not refused by sbatch in every
case: some are accepted and pend forever (``PartitionNodeLimit``,
``PartitionTimeLimit``). The partition's own limits on one job count as well:
MaxNodes and MinNodes, MaxCPUsPerNode, MaxMemPerNode, MaxMemPerCPU (Slurm
raises a job's CPUs until its memory per CPU is under it, so memory can need
more CPUs than a node has) and DefMemPerCPU/DefMemPerNode (the memory a job
that asks none is given). ``shapes`` reads a partition's shape from Slurm's
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
    """What a partition's nodes have (the largest of each, and how many nodes there are), and the
    partition's own limits on one job (None: UNLIMITED)."""

    partition: str
    nodes: int
    cpus_per_node: int  # the most CPUs one node has
    mem_mb_per_node: int  # the most memory (RealMemory, MiB) one node has
    gpus_per_node: int  # the most GPUs one node has (0: none)
    total_cpus: int
    total_gpus: int
    max_time_min: int | None  # None: no limit
    max_nodes: int | None = None  # MaxNodes
    min_nodes: int = 0  # MinNodes
    max_cpus_per_node: int | None = None  # MaxCPUsPerNode
    max_mem_per_node_mb: int | None = None  # MaxMemPerNode
    max_mem_per_cpu_mb: int | None = None  # MaxMemPerCPU
    def_mem_per_node_mb: int | None = None  # DefMemPerNode
    def_mem_per_cpu_mb: int | None = None  # DefMemPerCPU

    @property
    def nodes_per_job(self) -> int:
        """The most nodes one job may have: the partition's nodes, or its MaxNodes when lower."""
        return min(self.nodes, self.max_nodes) if self.max_nodes else self.nodes

    @property
    def cpus_per_job_node(self) -> int:
        """The most CPUs one job may use on one node: a node's CPUs, or MaxCPUsPerNode when lower."""
        if self.max_cpus_per_node and (not self.cpus_per_node or self.max_cpus_per_node < self.cpus_per_node):
            return self.max_cpus_per_node
        return self.cpus_per_node

    @property
    def mem_mb_per_job_node(self) -> int:
        """The most memory (MiB) one job may have on one node: a node's, or MaxMemPerNode when lower,
        or MaxMemPerCPU x the CPUs it may use there."""
        caps = [m for m in (self.mem_mb_per_node, self.max_mem_per_node_mb) if m]
        if self.max_mem_per_cpu_mb and self.cpus_per_job_node:
            caps.append(self.max_mem_per_cpu_mb * self.cpus_per_job_node)
        return min(caps, default=0)


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
            max_nodes=part.max_nodes,
            min_nodes=part.min_nodes,
            max_cpus_per_node=part.max_cpus_per_node,
            max_mem_per_node_mb=part.max_mem_per_node_mb,
            max_mem_per_cpu_mb=part.max_mem_per_cpu_mb,
            def_mem_per_node_mb=part.def_mem_per_node_mb,
            def_mem_per_cpu_mb=part.def_mem_per_cpu_mb,
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
    mem_asked: bool  # any memory form given (mem_gb 0, all of a node's, included)


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
    asked = res.mem_gb is not None or bool(res.mem_per_cpu_mb or res.mem_per_gpu_mb)
    return _Need(nodes, tasks_per_node, cpus_node, gpus_node, mem, total_cpus, res.gpus_total(), asked)


def _mem(mb: int) -> str:
    return f"{mb} MB ({mb / 1024:.3g} GB)"


@dataclass(frozen=True)
class _Check:
    """One request against one queue's shape; each method gives the misfits of one kind of limit."""

    res: Resources
    need: _Need
    queue: str
    shape: Shape
    others: dict[str, Shape]

    @property
    def part(self) -> str:
        return f"partition {self.shape.partition} of queue {self.queue}"

    def elsewhere(self, fits: str, ok: Callable[[Shape], bool]) -> str:
        """'; queue gpu has 4 per node' for each other queue where ``ok``."""
        names = [f"queue {name} has {fits.format(s=s)}" for name, s in sorted(self.others.items()) if ok(s)]
        return "; " + "; ".join(names) if names else ""

    def gpus(self) -> list[Misfit]:
        res, need, shape, queue = self.res, self.need, self.shape, self.queue
        field = (
            "resources.gpus_per_node"
            if res.gpus_per_node
            else ("resources.gpus_per_task" if res.gpus_per_task else "resources.gpus")
        )
        if need.gpus_per_node and shape.gpus_per_node == 0:
            more = self.elsewhere("{s.gpus_per_node} per node", lambda s: s.gpus_per_node > 0)
            return [Misfit(field, f"queue {queue} has no GPUs{more}", res.gpus_asked())]
        if need.gpus_per_node > shape.gpus_per_node:
            more = self.elsewhere(
                "{s.gpus_per_node} per node", lambda s: s.gpus_per_node >= need.gpus_per_node
            )
            what = (
                f" (this asks {need.gpus_per_node} GPUs on one node)"
                if field != "resources.gpus_per_node"
                else ""
            )
            return [
                Misfit(
                    field,
                    f"queue {queue} has at most {shape.gpus_per_node} GPUs per node{what}: "
                    f"ask for at most {shape.gpus_per_node}{more}",
                    res.gpus_asked(),
                )
            ]
        if need.total_gpus > shape.total_gpus and need.nodes is None:
            message = f"queue {queue} has {shape.total_gpus} GPUs in all: ask for at most {shape.total_gpus}"
            return [Misfit(field, message, need.total_gpus)]
        return []

    def nodes(self) -> list[Misfit]:
        need, shape, queue = self.need, self.shape, self.queue
        if need.nodes is None:
            return []
        if shape.max_nodes and need.nodes > shape.max_nodes and shape.max_nodes < shape.nodes:
            more = self.elsewhere(
                "{s.nodes_per_job} nodes per job", lambda s: s.nodes_per_job >= (need.nodes or 1)
            )
            message = (
                f"{self.part} allows at most {shape.max_nodes} node{'s' * (shape.max_nodes != 1)} per job "
                f"(its MaxNodes): ask for at most {shape.max_nodes}{more} ({FOREVER} PartitionNodeLimit)"
            )
            return [Misfit("resources.nodes", message, need.nodes)]
        if need.nodes > shape.nodes:
            more = self.elsewhere("{s.nodes} nodes", lambda s: s.nodes >= (need.nodes or 1))
            message = (
                f"queue {queue} has {shape.nodes} node{'s' * (shape.nodes != 1)}: "
                f"ask for at most {shape.nodes}{more} ({FOREVER} PartitionNodeLimit)"
            )
            return [Misfit("resources.nodes", message, need.nodes)]
        if need.nodes < shape.min_nodes:
            message = (
                f"{self.part} takes jobs of at least {shape.min_nodes} nodes (its MinNodes): "
                f"ask for at least {shape.min_nodes} ({FOREVER} PartitionNodeLimit)"
            )
            return [Misfit("resources.nodes", message, need.nodes)]
        return []

    def cpus(self) -> list[Misfit]:
        res, need, shape, queue = self.res, self.need, self.shape, self.queue
        most = shape.cpus_per_job_node
        if most and need.cpus_per_node > most:
            field = "resources.cpus_per_gpu" if res.cpus_per_gpu else "resources.cpus_per_task"
            per = (
                f"{res.cpus_per_gpu} per GPU x {need.gpus_per_node} GPUs"
                if res.cpus_per_gpu
                else f"{res.cpus_per_task or 1} per task x {need.tasks_per_node} tasks"
            )
            more = self.elsewhere(
                "{s.cpus_per_job_node} per node", lambda s: s.cpus_per_job_node >= need.cpus_per_node
            )
            if most < shape.cpus_per_node:
                limit = f"{self.part} lets a job use at most {most} CPUs per node (its MaxCPUsPerNode)"
            else:
                limit = f"nodes of queue {queue} have at most {most} CPUs"
            message = f"{limit}; this asks {need.cpus_per_node} on one node ({per}){more}"
            return [Misfit(field, message, need.cpus_per_node)]
        total = most * shape.nodes_per_job
        if need.nodes is None and total and need.total_cpus > total:
            if total < shape.total_cpus:
                message = (
                    f"{self.part} lets a job have at most {total} CPUs ({shape.nodes_per_job} nodes x "
                    f"{most}, its MaxNodes and MaxCPUsPerNode); this asks {need.total_cpus}"
                )
            else:
                message = f"queue {queue} has {shape.total_cpus} CPUs in all; this asks {need.total_cpus}"
            return [Misfit("resources.ntasks", message, need.total_cpus)]
        return []

    def memory(self) -> list[Misfit]:
        res, need, shape = self.res, self.need, self.shape
        if not need.mem_asked:
            return self._default_memory()
        mem_node = need.mem_mb_per_node or 0
        if not mem_node:
            return []
        field = next(
            f"resources.{n}" for n in ("mem_gb", "mem_per_cpu_mb", "mem_per_gpu_mb") if getattr(res, n)
        )
        asked = getattr(res, field.split(".")[1])
        per = "" if res.mem_gb else f" ({_mem(mem_node)} on one node)"
        fits = shape.mem_mb_per_job_node
        more = self.elsewhere(
            "{s.mem_mb_per_job_node} MB per node", lambda s: s.mem_mb_per_job_node >= mem_node
        )
        ask = f"ask for at most {fits // 1024 or 1} GB (--mem={fits}M){more}"
        if shape.mem_mb_per_node and mem_node > shape.mem_mb_per_node:
            has = _mem(shape.mem_mb_per_node)
            message = f"nodes of queue {self.queue} have at most {has} of memory{per}: {ask}"
        elif shape.max_mem_per_node_mb and mem_node > shape.max_mem_per_node_mb:
            message = (
                f"{self.part} allows at most {_mem(shape.max_mem_per_node_mb)} per node (its MaxMemPerNode)"
                f"{per}: {ask}"
            )
        elif shape.max_mem_per_cpu_mb and self._cpus_for_memory(mem_node) > shape.cpus_per_job_node:
            limit = shape.max_mem_per_cpu_mb
            if res.mem_per_cpu_mb:
                ask = f"ask for at most {limit} MB per CPU, or fewer CPUs{more}"
            message = (
                f"{self.part} allows at most {limit} MB per CPU (its MaxMemPerCPU), so Slurm would raise "
                f"this job to {self._cpus_for_memory(mem_node)} CPUs on one node for {_mem(mem_node)}, and "
                f"a job may use {shape.cpus_per_job_node} there: {ask}"
            )
        else:
            return []
        return [Misfit(field, message, asked)]

    def _cpus_for_memory(self, mem_node: int) -> int:
        """The CPUs per node Slurm gives a job for ``mem_node`` MiB under MaxMemPerCPU: it raises the CPUs
        per task by the ratio of the memory per CPU asked to the limit (slurm.conf(5), MaxMemPerCPU)."""
        limit, cpus = self.shape.max_mem_per_cpu_mb, self.need.cpus_per_node
        if not limit:
            return cpus
        if self.res.mem_per_cpu_mb:
            return cpus * math.ceil(self.res.mem_per_cpu_mb / limit)
        return max(cpus, math.ceil(mem_node / limit))

    def _default_memory(self) -> list[Misfit]:
        """A job that asks no memory gets the partition's DefMemPerNode, or DefMemPerCPU x its CPUs."""
        need, shape = self.need, self.shape
        if shape.def_mem_per_cpu_mb:
            given = shape.def_mem_per_cpu_mb * need.cpus_per_node
            how = f"its DefMemPerCPU, {shape.def_mem_per_cpu_mb} MB x {need.cpus_per_node} CPUs"
        elif shape.def_mem_per_node_mb:
            given, how = shape.def_mem_per_node_mb, "its DefMemPerNode"
        else:
            return []
        fits = shape.mem_mb_per_job_node
        if not fits or given <= fits:
            return []
        message = (
            f"this asks no memory, so {self.part} would give it {_mem(given)} on one node ({how}), "
            f"and a job may have at most {_mem(fits)} there: ask for memory, at most {fits // 1024 or 1} GB "
            f"(--mem={fits}M)"
        )
        return [Misfit("resources.mem_gb", message, "not asked")]

    def time(self, walltime_min: int | None) -> list[Misfit]:
        shape = self.shape
        if walltime_min is None or shape.max_time_min is None or walltime_min <= shape.max_time_min:
            return []
        more = self.elsewhere(
            "MaxTime {s.max_time_min} minutes",
            lambda s: s.max_time_min is None or s.max_time_min >= walltime_min,
        )
        message = (
            f"{self.part} allows at most {shape.max_time_min} minutes (its MaxTime){more} "
            f"({FOREVER} PartitionTimeLimit)"
        )
        return [Misfit("resources.walltime_min", message, walltime_min)]


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
    check = _Check(res, _need(res), queue, shape, others)
    return check.gpus() + check.nodes() + check.cpus() + check.memory() + check.time(walltime_min)
