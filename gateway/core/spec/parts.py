"""Pieces of a run spec: shared checks, the resources a run asks for, and array sweeps."""

from __future__ import annotations

import itertools
import math
import re
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from gateway.core import names
from gateway.core.described import MAX_TEXT, GpuType, documented
from gateway.core.runs.failure_classes import CLASSES

MAX_ARRAY_TASKS = 1000
MODULE_NAME = re.compile(r"[A-Za-z0-9._/+-]{1,128}")  # an environment module, as `module load` takes it
SHA256_HEX = re.compile(r"[0-9a-f]{64}")

JsonScalar = str | int | float | bool | None


def _check_name(value: str, what: str = "name") -> str:
    if not names.NAME.fullmatch(value):
        raise ValueError(f"not a valid {what}; use {names.NAME_HELP}")
    return value


def _check_text(value: str, *, allow_newlines: bool) -> str:
    if "\x00" in value:
        raise ValueError("contains a NUL byte, which no shell script can carry")
    if not allow_newlines and names.CONTROL_CHARS.search(value):
        raise ValueError("contains a control character (newline, tab, escape ...)")
    if len(value) > MAX_TEXT:
        raise ValueError(f"is {len(value)} characters long; at most {MAX_TEXT} are accepted")
    return value


class _Strict(BaseModel):
    # allow_inf_nan: a float field refuses NaN and infinities ("Infinity" as text too), whoever calls.
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False, allow_inf_nan=False)


class Resources(_Strict):
    """What one run asks of Slurm. Units are in the names.

    ``None`` means "not asked": Slurm's own default applies, as under plain
    sbatch (``gw sbatch`` leaves unset what the script did not set). Memory
    is one of ``mem_gb`` (per node; 0 asks for all of each node's memory),
    ``mem_per_cpu_mb`` or ``mem_per_gpu_mb``; CPUs are ``cpus_per_task`` or
    ``cpus_per_gpu``. GPUs are ``gpus_per_node`` (``--gres=gpu:N``,
    ``--gpus-per-node``), ``gpus`` (the whole job, ``--gpus``) or
    ``gpus_per_task``; ``gpu_type`` types any of them.
    """

    # The bounds are sanity limits only: what the cluster can hold is checked against each partition's
    # real shape at admission (gateway/core/access/fit.py), with the partition's numbers.
    nodes: Annotated[int, Field(ge=1, le=100_000)] | None = 1
    ntasks: Annotated[int, Field(ge=1, le=16_384)] | None = None  # the job's tasks in all (sbatch -n)
    tasks_per_node: Annotated[int, Field(ge=1, le=256)] | None = 1
    gpus_per_node: Annotated[int, Field(ge=0, le=1024)] = 0
    gpus: Annotated[int, Field(ge=1, le=1024)] | None = None
    gpus_per_task: Annotated[int, Field(ge=1, le=1024)] | None = None
    gpu_type: GpuType | None = None
    cpus_per_task: Annotated[int, Field(ge=1, le=512)] | None = 1
    cpus_per_gpu: Annotated[int, Field(ge=1, le=512)] | None = None
    mem_gb: Annotated[float, Field(ge=0, le=4096)] | None = 1.0
    mem_per_cpu_mb: Annotated[int, Field(ge=1, le=4 * 1024 * 1024)] | None = None
    mem_per_gpu_mb: Annotated[int, Field(ge=1, le=4 * 1024 * 1024)] | None = None
    # None: no --time line, so Slurm gives the partition's DefaultTime (gw sbatch without -t)
    walltime_min: Annotated[int, Field(ge=1, le=60 * 24 * 30)] | None = 60

    @model_validator(mode="before")
    @classmethod
    def _one_of_each(cls, data: Any) -> Any:
        # A per-CPU or per-GPU amount replaces the per-node defaults it excludes in Slurm.
        if isinstance(data, dict):
            data = dict(data)
            if data.get("mem_per_cpu_mb") is not None or data.get("mem_per_gpu_mb") is not None:
                data.setdefault("mem_gb", None)
            if data.get("cpus_per_gpu") is not None:
                data.setdefault("cpus_per_task", None)
        return data

    @field_validator("gpu_type")
    @classmethod
    def _gpu_type(cls, value: str | None) -> str | None:
        if value is not None and not names.GPU_TYPE.fullmatch(value):
            raise ValueError(f"not a valid GPU type; use {names.GPU_TYPE_HELP}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Resources:
        if self.gpu_type is not None and self.gpus_asked() == 0:
            raise ValueError("gpu_type is set but gpus_per_node is 0; ask for at least 1 GPU")
        mems = [n for n in ("mem_gb", "mem_per_cpu_mb", "mem_per_gpu_mb") if getattr(self, n) is not None]
        if len(mems) > 1:
            raise ValueError(f"give one of {' or '.join(mems)}: Slurm takes one memory size per job")
        if self.cpus_per_gpu is not None and self.cpus_per_task is not None:
            raise ValueError("give cpus_per_task or cpus_per_gpu, not both (Slurm refuses both)")
        if (self.mem_per_gpu_mb or self.cpus_per_gpu) and not self.gpus_asked():
            raise ValueError("mem_per_gpu_mb and cpus_per_gpu need GPUs; ask for at least 1 GPU")
        forms = [n for n in ("gpus_per_node", "gpus", "gpus_per_task") if getattr(self, n)]
        if len(forms) > 1:
            raise ValueError(f"give GPUs one way, not {' and '.join(forms)}")
        return self

    def gpus_asked(self) -> int:
        """GPUs per node, for the whole job or per task: nonzero when the run asks for GPUs."""
        return self.gpus_per_node or self.gpus or self.gpus_per_task or 0

    def gpus_total(self) -> int:
        """GPUs the whole job holds (per task: x tasks; per node: x nodes)."""
        if self.gpus:
            return self.gpus
        if self.gpus_per_task:
            return self.gpus_per_task * (self.ntasks or (self.tasks_per_node or 1) * (self.nodes or 1))
        return self.gpus_per_node * (self.nodes or 1)

    @property
    def mem_mb(self) -> int | None:
        """Memory per node in MiB, as Slurm's ``--mem`` takes it (rounded up); None: not asked."""
        return None if self.mem_gb is None else math.ceil(self.mem_gb * 1024)


class RetryOverride(_Strict):
    """A run's own retry policy; what it leaves out comes from its queue's (gateway/core/runs/retry.py)."""

    classes: list[Annotated[str, documented(enum=list(CLASSES))]] | None = None
    max_attempts: Annotated[int, Field(ge=1, le=20)] | None = None
    backoff_s: Annotated[float, Field(ge=0, le=86_400)] | None = None

    @field_validator("classes")
    @classmethod
    def _classes(cls, value: list[str] | None) -> list[str] | None:
        for item in value or []:
            if item not in CLASSES:
                raise ValueError(f"unknown failure class {item!r}; classes are: {', '.join(CLASSES)}")
        return value


class Sweep(_Strict):
    """An array sweep: a list of param sets, or a grid (every combination).

    Each set is laid over the run's ``params``; task *i* of the Slurm job
    array runs with set *i*.
    """

    params: list[dict[str, Any]] | None = None
    grid: dict[str, list[Any]] | None = None
    indices: list[Annotated[int, Field(ge=0, le=4_000_000)]] | None = None
    max_parallel: Annotated[int, Field(ge=1, le=MAX_ARRAY_TASKS)] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Sweep:
        if (self.params is None) == (self.grid is None):
            raise ValueError("give exactly one of 'params' (a list of param sets) or 'grid'")
        for key, values in (self.grid or {}).items():
            if not values:
                raise ValueError(f"grid key {key!r} has no values")
        # Count before expanding: a grid of a few long lists is a huge product.
        grid = self.grid or {}
        count = len(self.params) if self.params is not None else math.prod(len(v) for v in grid.values())
        if count == 0:
            raise ValueError("the sweep has no param sets; give at least one")
        if count > MAX_ARRAY_TASKS:
            raise ValueError(f"the sweep has {count} param sets; at most {MAX_ARRAY_TASKS}")
        if self.indices is not None:
            if len(self.indices) != count:
                raise ValueError(f"indices has {len(self.indices)} entries for {count} param sets")
            if len(set(self.indices)) != len(self.indices):
                raise ValueError("indices repeat; each array task needs its own index")
        return self

    def task_indices(self) -> list[int]:
        """The Slurm array index of each param set (0, 1, ... unless ``indices`` says)."""
        return list(self.indices) if self.indices is not None else list(range(len(self.expand())))

    def expand(self) -> list[dict[str, Any]]:
        """The param sets in task order (grid: last key varies fastest)."""
        if self.params is not None:
            return [dict(p) for p in self.params]
        assert self.grid is not None
        keys = list(self.grid)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*self.grid.values())]
