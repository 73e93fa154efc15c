"""GPU telemetry: what the sampler's JSON lines say about an attempt's GPUs (pure, no I/O).

The sampler (``accounting/telemetry/gpu_sampler.py``, docs/telemetry.md) writes one file per node of a job.
``parse_lines`` reads one file's text into a ``NodeTelemetry``; ``summarise_gpu`` turns one GPU's
samples into a ``GpuSummary``; ``attempt_telemetry`` folds an attempt's nodes into an
``AttemptTelemetry`` with its idle GPU-hours. The math:

- mean and max utilisation: over the samples (they are taken at a fixed interval);
- idle fraction: the share of samples whose utilisation is below the idle threshold (percent);
- energy (Wh): power integrated over time by the trapezoid rule between consecutive samples;
- peak memory: the largest ``mem_used_mib`` sampled;
- idle GPU-hours: allocated GPU-hours (``allocated_gpu_hours``) x the mean idle fraction of the
  sampled GPUs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SAMPLER_FILE = "telemetry/gpu_sampler.py"  # below the accounting/ folder (gateway.resources.ACCOUNTING)

MAX_SERIES_POINTS = 500  # per GPU, what is kept for plotting (evenly thinned)
STATUSES = ("ok", "no_nvml", "no_gpus", "mismatch", "crashed", "no_telemetry", "unreadable")


@dataclass(frozen=True)
class TelemetryLaunch:
    """How the sbatch script starts the sampler (from the settings): None in a render: no sampler."""

    sampler_path: str  # accounting/telemetry/gpu_sampler.py as compute nodes see it
    python: str  # the interpreter (it needs pynvml for the real NVML)
    interval_s: float
    nvml: str  # "real" or "fake"


@dataclass(frozen=True)
class Sample:
    at_s: float
    util_pct: float | None
    mem_used_mib: float | None
    power_w: float | None
    temp_c: float | None = None
    sm_clock_mhz: float | None = None


@dataclass
class NodeTelemetry:
    """One sampler file: its node, its GPUs (by UUID) and their samples, how it ended."""

    node: str | None = None
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)  # uuid -> start-line description
    samples: dict[str, list[Sample]] = field(default_factory=dict)  # uuid -> samples in time order
    status: str = "ok"
    reason: str | None = None
    skipped_lines: int = 0


@dataclass(frozen=True)
class GpuSummary:
    node: str
    gpu_index: int
    uuid: str
    name: str
    samples: int
    duration_s: float
    util_mean_pct: float | None
    util_max_pct: float | None
    idle_fraction: float | None
    mem_peak_mib: float | None
    mem_total_mib: float | None
    energy_wh: float | None
    power_mean_w: float | None
    temp_max_c: float | None
    series: list[list[float | None]]  # [t_s since the first sample, util_pct, mem_used_mib, power_w]


@dataclass(frozen=True)
class AttemptTelemetry:
    status: str  # one of STATUSES: ok when any GPU was sampled
    note: str | None
    gpus: list[GpuSummary]
    allocated_gpu_hours: float | None
    idle_fraction: float | None
    idle_gpu_hours: float | None
    energy_wh: float | None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_lines(text: str) -> NodeTelemetry:
    """One sampler file's text as a NodeTelemetry; a line that is not a sampler record is skipped."""
    node = NodeTelemetry()
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            node.skipped_lines += bool(line.strip())
            continue
        kind = record.get("kind") if isinstance(record, dict) else None
        if kind == "start":
            node.node = str(record.get("node") or "")
            for gpu in record.get("gpus") or []:
                if isinstance(gpu, dict) and isinstance(gpu.get("uuid"), str):
                    node.gpus[gpu["uuid"]] = gpu
                    node.samples.setdefault(gpu["uuid"], [])
        elif kind == "sample" and record.get("uuid") in node.gpus and _number(record.get("at")) is not None:
            node.samples[record["uuid"]].append(
                Sample(
                    at_s=float(record["at"]),
                    util_pct=_number(record.get("util_pct")),
                    mem_used_mib=_number(record.get("mem_used_mib")),
                    power_w=_number(record.get("power_w")),
                    temp_c=_number(record.get("temp_c")),
                    sm_clock_mhz=_number(record.get("sm_clock_mhz")),
                )
            )
        elif kind in ("unavailable", "crashed"):
            node.status = str(record.get("status") or "crashed") if kind == "unavailable" else "crashed"
            node.reason = str(record.get("reason") or kind)[:500]
            node.node = node.node or str(record.get("node") or "")
        elif kind is None:
            node.skipped_lines += 1
    return node


def energy_wh(samples: list[Sample]) -> float | None:
    """Power integrated over time (trapezoid rule), in watt-hours; None without two power readings."""
    points = [(s.at_s, s.power_w) for s in samples if s.power_w is not None]
    if len(points) < 2:
        return None
    pairs = zip(points, points[1:], strict=False)
    joules = sum((p0 + p1) / 2 * max(0.0, t1 - t0) for (t0, p0), (t1, p1) in pairs)
    return joules / 3600.0


def idle_fraction(samples: list[Sample], threshold_pct: float) -> float | None:
    """The share of samples with utilisation below ``threshold_pct``; None when none reported it."""
    utils = [s.util_pct for s in samples if s.util_pct is not None]
    return sum(u < threshold_pct for u in utils) / len(utils) if utils else None


def thin(samples: list[Sample], max_points: int = MAX_SERIES_POINTS) -> list[list[float | None]]:
    """At most ``max_points`` samples, evenly spaced, the last always kept, as plot rows."""
    if not samples:
        return []
    step = max(1, -(-len(samples) // max_points))
    kept = samples[::step]
    if kept[-1] is not samples[-1]:
        kept = [*kept[: max_points - 1], samples[-1]]
    first = samples[0].at_s
    return [[round(s.at_s - first, 3), s.util_pct, s.mem_used_mib, s.power_w] for s in kept]


def _stat(values: list[float | None], how: str) -> float | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return max(present) if how == "max" else sum(present) / len(present)


def summarise_gpu(node: str, gpu: dict[str, Any], samples: list[Sample], threshold_pct: float) -> GpuSummary:
    """One GPU's summary from its samples (time order); see the module docstring for the math."""
    utils = [s.util_pct for s in samples]
    return GpuSummary(
        node=node,
        gpu_index=int(gpu.get("index") or 0),
        uuid=str(gpu["uuid"]),
        name=str(gpu.get("name") or "unknown")[:96],
        samples=len(samples),
        duration_s=(samples[-1].at_s - samples[0].at_s) if samples else 0.0,
        util_mean_pct=_stat(utils, "mean"),
        util_max_pct=_stat(utils, "max"),
        idle_fraction=idle_fraction(samples, threshold_pct),
        mem_peak_mib=_stat([s.mem_used_mib for s in samples], "max"),
        mem_total_mib=_number(gpu.get("mem_total_mib")),
        energy_wh=energy_wh(samples),
        power_mean_w=_stat([s.power_w for s in samples], "mean"),
        temp_max_c=_stat([s.temp_c for s in samples], "max"),
        series=thin(samples),
    )


def attempt_telemetry(
    nodes: list[NodeTelemetry],
    *,
    threshold_pct: float,
    allocated_gpu_hours: float | None,
    problems: list[str] | None = None,
) -> AttemptTelemetry:
    """An attempt's telemetry from its nodes' files; ``problems``: what could not be read.

    Status ``ok`` when any GPU has samples; else the first node's reason (``no_nvml`` ...), else
    ``no_telemetry`` (no file: the job never started the sampler).
    """
    gpus = [
        summarise_gpu(n.node or "", gpu, n.samples.get(uuid, []), threshold_pct)
        for n in nodes
        for uuid, gpu in n.gpus.items()
    ]
    sampled = [g for g in gpus if g.samples]
    notes = [f"{n.node or '?'}: {n.reason}" for n in nodes if n.reason] + list(problems or [])
    if sampled:
        status = "ok"
    elif nodes and any(n.reason for n in nodes):
        status = next(n.status for n in nodes if n.reason)
    elif problems:
        status = "unreadable"
    else:
        status = "no_telemetry"
    allocated = allocated_gpu_hours
    fractions = [g.idle_fraction for g in sampled if g.idle_fraction is not None]
    idle = sum(fractions) / len(fractions) if fractions else None
    energies = [g.energy_wh for g in sampled if g.energy_wh is not None]
    return AttemptTelemetry(
        status=status,
        note="; ".join(notes)[:1024] or None,
        gpus=gpus,
        allocated_gpu_hours=allocated,
        idle_fraction=idle,
        idle_gpu_hours=allocated * idle if allocated is not None and idle is not None else None,
        energy_wh=sum(energies) if energies else None,
    )


@dataclass(frozen=True)
class AttemptGpuFacts:
    """What the harvest needs to know of an ended attempt (from the refresh's sacct facts)."""

    job_id: str | None
    allocated_gpu_hours: float | None  # None: no GPU allocated, or not known yet
    cluster: str | None = None  # the attempt's cluster as recorded (None: before clusters, the first)


@dataclass(frozen=True)
class StoredTelemetry:
    """An attempt's harvested telemetry, as the store gives it back."""

    attempt: int
    job_id: str | None
    idle_threshold_pct: float
    harvested_at: str  # ISO 8601, UTC
    telemetry: AttemptTelemetry
    cluster: str | None = None  # the cluster it was sampled on (None: harvested before clusters existed)


def allocated_gpus(alloc_tres: dict[str, str]) -> int:
    """The GPU count in an attempt's AllocTRES (``gres/gpu``); 0 when it has none."""
    try:
        return int(alloc_tres.get("gres/gpu", "0") or 0)
    except ValueError:
        return 0


def requested_gpus(resources: dict[str, Any]) -> int:
    """The GPUs a run spec's ``resources`` ask for, per job (an array task is a job); 0: none."""

    def count(name: str) -> int:
        value = resources.get(name)
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0

    if count("gpus"):
        return count("gpus")
    if count("gpus_per_node"):
        return count("gpus_per_node") * max(1, count("nodes"))
    if count("gpus_per_task"):
        tasks = count("ntasks") or max(1, count("nodes")) * max(1, count("tasks_per_node"))
        return count("gpus_per_task") * tasks
    return 0


def allocated_gpu_hours(
    alloc_tres: dict[str, str],
    elapsed_s: float | None,
    tasks: dict[str, dict[str, Any]],
    resources: dict[str, Any],
) -> float | None:
    """GPU-hours an attempt held: AllocTRES ``gres/gpu`` x elapsed; for a job array (whose attempt
    carries no AllocTRES) the sum over its tasks of the spec's GPUs x each task's elapsed. None
    when it held no GPU or the times are not known."""
    gpus = allocated_gpus(alloc_tres)
    if gpus and elapsed_s is not None:
        return gpus * elapsed_s / 3600.0
    per_task = requested_gpus(resources)
    elapsed = [t.get("elapsed_s") for t in tasks.values() if isinstance(t, dict)]
    known = [e for e in elapsed if isinstance(e, int | float)]
    if per_task and elapsed and len(known) == len(elapsed):
        return per_task * sum(known) / 3600.0
    return None
