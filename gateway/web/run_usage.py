"""What a run cost and how it used its GPUs, for the run page: the accounting service's priced
records and the telemetry service's per-GPU summaries, with a utilisation plot per GPU (SVG).

The numbers come from the same services as ``GET /runs/{id}/cost`` and ``GET /runs/{id}/telemetry``;
this module only arranges them for the template and draws the plots.
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from gateway.core.access.values import Principal
from gateway.core.runs.values import Run
from gateway.services import Services
from gateway.web import svg

# The telemetry status of an attempt, in words (docs/telemetry.md, "The harvest and the summaries").
STATUS_WORDS = {
    "ok": "sampled",
    "no_nvml": "no NVML on the node (no driver or no pynvml): nothing was sampled",
    "no_gpus": "NVML found no GPUs on the node",
    "mismatch": "the job's GPUs could not be matched to NVML devices",
    "crashed": "the sampler stopped with an error",
    "unreadable": "sample files are there but could not be read",
    "no_telemetry": "no samples: the sampler did not run (telemetry off when the job was submitted?)",
}
UTIL = 1  # a series point: [t_s since the first sample, util_pct, mem_used_mib, power_w]


def gpu_idle_hours(attempt: dict[str, Any], gpu: dict[str, Any]) -> float | None:
    """One GPU's share of its attempt's idle GPU-hours: the attempt's allocated GPU-hours split evenly
    over its sampled GPUs, times this GPU's idle fraction (None when either is unknown). Over the
    sampled GPUs these add up to the attempt's ``idle_gpu_hours``."""
    gpus = attempt["gpus"]
    if attempt["allocated_gpu_hours"] is None or gpu["idle_fraction"] is None or not gpus:
        return None
    return attempt["allocated_gpu_hours"] / len(gpus) * gpu["idle_fraction"]


def util_plot(gpu: dict[str, Any]) -> Markup:
    """GPU utilisation (%) over the seconds since its first sample, on a 0-100 scale."""
    name = f"{gpu['node']} GPU {gpu['gpu_index']} utilisation %"
    points = [[p[0], p[UTIL]] for p in gpu.get("series") or [] if p[0] is not None]
    series = {name: points} if points else {}
    return svg.line_plot(series, height=160, x_label="s", y_range=(0.0, 100.0), empty="no samples to plot")


def usage_sections(services: Services, principal: Principal, run: Run) -> dict[str, Any]:
    """The run page's ``cost`` (the accounting service's ``RunCost``: records, totals, rate versions,
    a note when not priced) and ``telemetry`` (``run_telemetry``)."""
    return {
        "cost": services.accounting.run_cost(principal, run.id),
        "telemetry": run_telemetry(services, principal, run),
    }


def run_telemetry(services: Services, principal: Principal, run: Run) -> list[dict[str, Any]] | None:
    """Per harvested attempt: its status in words, totals, and its GPUs each with idle GPU-hours and a
    plot; None when this gateway keeps no telemetry (the service is not wired)."""
    if services.telemetry is None:
        return None
    found = services.telemetry.for_run(run.id, principal=principal, samples=True)
    attempts = []
    for attempt in found["attempts"]:
        gpus = [
            {**g, "idle_gpu_hours": gpu_idle_hours(attempt, g), "plot": util_plot(g)} for g in attempt["gpus"]
        ]
        words = STATUS_WORDS.get(attempt["status"], attempt["status"])
        attempts.append({**attempt, "status_words": words, "gpus": gpus})
    return attempts
