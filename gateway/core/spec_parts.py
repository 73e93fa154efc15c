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

MAX_ARRAY_TASKS = 1000
MAX_TEXT = 64 * 1024  # longest command, script body or environment value accepted
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
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class Resources(_Strict):
    """What one run asks of Slurm. Units are in the names."""

    nodes: Annotated[int, Field(ge=1, le=64)] = 1
    tasks_per_node: Annotated[int, Field(ge=1, le=256)] = 1
    gpus_per_node: Annotated[int, Field(ge=0, le=16)] = 0
    gpu_type: str | None = None
    cpus_per_task: Annotated[int, Field(ge=1, le=512)] = 1
    mem_gb: Annotated[float, Field(gt=0, le=4096)] = 1.0
    walltime_min: Annotated[int, Field(ge=1, le=60 * 24 * 30)] = 60

    @field_validator("gpu_type")
    @classmethod
    def _gpu_type(cls, value: str | None) -> str | None:
        if value is not None and not names.GPU_TYPE.fullmatch(value):
            raise ValueError(f"not a valid GPU type; use {names.GPU_TYPE_HELP}")
        return value

    @model_validator(mode="after")
    def _gpu_type_needs_gpus(self) -> Resources:
        if self.gpu_type is not None and self.gpus_per_node == 0:
            raise ValueError("gpu_type is set but gpus_per_node is 0; ask for at least 1 GPU")
        return self

    @property
    def mem_mb(self) -> int:
        """Memory per node in MiB, as Slurm's ``--mem`` takes it (rounded up)."""
        return math.ceil(self.mem_gb * 1024)


class RetryOverride(_Strict):
    """A run's own retry policy; what it leaves out comes from its queue's (gateway/core/retry.py)."""

    classes: list[str] | None = None
    max_attempts: Annotated[int, Field(ge=1, le=20)] | None = None
    backoff_s: Annotated[float, Field(ge=0, le=86_400)] | None = None

    @field_validator("classes")
    @classmethod
    def _classes(cls, value: list[str] | None) -> list[str] | None:
        from gateway.core.failures import CLASSES

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
        count = len(self.params) if self.params is not None else math.prod(map(len, self.grid.values()))
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
