"""gw telemetry: a run's GPU telemetry per attempt (``GET /runs/{id}/telemetry``); lines for gw show."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from gateway.cli.common import JsonOpt, call
from gateway.cli.output import console, print_json
from gateway.client.errors import ApiError

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient


def register(app: typer.Typer) -> None:
    """Add ``gw telemetry`` to ``app``."""
    app.command()(telemetry)


def telemetry(
    run_id: Annotated[str, typer.Argument(help="Run id.")],
    samples: Annotated[bool, typer.Option("--samples", help="Include each GPU's samples (JSON).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Each attempt's GPUs: utilisation, peak memory, energy, idle fraction, idle GPU-hours."""
    data = call("run_telemetry", run_id, samples=samples)
    if as_json or samples:
        print_json(data)
        return
    if not data["attempts"]:
        console.print("no GPU telemetry (no attempt with GPUs has ended and been harvested yet)")
        return
    for attempt in data["attempts"]:
        console.print(attempt_line(attempt), markup=False)
        if attempt["note"]:
            console.print(f"  note: {attempt['note']}", markup=False)
        if attempt["gpus"]:
            console.print(gpu_table(attempt["gpus"]))


def attempt_line(attempt: dict[str, Any]) -> str:
    """One attempt's telemetry in a line: status, GPUs sampled, idle GPU-hours of allocated, energy."""
    sampled = sum(1 for g in attempt["gpus"] if g["samples"])
    where = f"job {attempt['job_id']}" + (f" on {attempt['cluster']}" if attempt.get("cluster") else "")
    head = f"attempt {attempt['attempt']} ({where}): {attempt['status']}"
    parts = [f"{head}, {sampled} GPU(s) sampled"]
    if attempt["allocated_gpu_hours"] is not None:
        idle = attempt["idle_gpu_hours"]
        idle_text = "?" if idle is None else f"{idle:.4g}"
        parts.append(
            f"idle {idle_text} of {attempt['allocated_gpu_hours']:.4g} GPU-h "
            f"(below {attempt['idle_threshold_pct']:g}%)"
        )
    if attempt["energy_wh"] is not None:
        parts.append(f"{attempt['energy_wh']:.4g} Wh")
    return ", ".join(parts)


def _num(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.4g}{unit}"


def gpu_table(gpus: list[dict[str, Any]]) -> Table:
    """The per-GPU summaries as a table."""
    table = Table(show_edge=False, header_style="bold")
    for column in ("NODE", "GPU", "UUID", "SAMPLES", "UTIL MEAN", "UTIL MAX", "IDLE", "MEM PEAK", "ENERGY"):
        table.add_column(column)
    for g in gpus:
        idle = None if g["idle_fraction"] is None else 100 * g["idle_fraction"]
        table.add_row(
            g["node"],
            str(g["gpu_index"]),
            g["uuid"],
            str(g["samples"]),
            _num(g["util_mean_pct"], "%"),
            _num(g["util_max_pct"], "%"),
            _num(idle, "%"),
            _num(g["mem_peak_mib"], " MiB"),
            _num(g["energy_wh"], " Wh"),
        )
    return table


def fetch(client: GatewayClient, run_id: str) -> dict[str, Any] | None:
    """The run's telemetry for gw show, or None when the gateway does not answer it (an older one)."""
    try:
        return client.run_telemetry(run_id)
    except ApiError as exc:
        if exc.status in (404, 405):
            return None
        raise


def show_lines(data: dict[str, Any] | None) -> list[str]:
    """What gw show prints of a run's GPU telemetry: a line per harvested attempt; none without any."""
    if not data or not data["attempts"]:
        return []
    return ["GPU telemetry:"] + [f"  {attempt_line(a)}" for a in data["attempts"]]
