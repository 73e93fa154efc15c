"""Reading a run's (or a sweep task's) metrics files through the run host, as the job's user.

Used by the output harvest (``outputs.py``) and the sweep tasks' harvest (``task_harvest.py``).
"""

from __future__ import annotations

import os

from gateway.adapters.runhost import RunHost
from gateway.core.lineage.run_metrics import MAX_POINTS, last_values, parse_metrics_json, parse_metrics_jsonl

MAX_METRICS_BYTES = 32 * 1024 * 1024


def read_metrics(
    host: RunHost, run_dir: str, paths: list[str], *, as_user: str, notes: list[str]
) -> tuple[dict[str, float] | None, dict[str, list[tuple[int | None, float]]] | None]:
    """The summary and series of a run's metrics files (relative to ``run_dir``), read as ``as_user``.

    What cannot be read or parsed is a line in ``notes``, never an error. (None, None) when no file
    gave metrics.
    """
    summary: dict[str, float] | None = None
    series: dict[str, list[tuple[int | None, float]]] | None = None
    for rel in paths:
        read = host.read_file(
            os.path.join(run_dir, rel),
            as_user=as_user,
            max_bytes=MAX_METRICS_BYTES + 1,
            offset_bytes=0,
            inside=run_dir,
        )
        if not read.exists or read.error:
            notes.append(f"metrics file {rel} not found (or not a regular file)")
            continue
        if read.size_bytes > MAX_METRICS_BYTES:
            notes.append(
                f"metrics file {rel} is {read.size_bytes} bytes; at most {MAX_METRICS_BYTES} are read"
            )
            continue
        text = read.text()
        if rel.endswith(".jsonl"):
            parsed = parse_metrics_jsonl(text)
            if parsed.skipped_lines:
                notes.append(f"metrics file {rel}: {parsed.skipped_lines} line(s) skipped")
            series = {**(series or {}), **parsed.points}
            if summary is None:
                summary = {}
            for name, value in last_values(parsed).items():
                summary.setdefault(name, value)
        else:
            try:
                values = parse_metrics_json(text)
            except ValueError as exc:
                notes.append(f"metrics file {rel}: {exc}")
                continue
            # a summary file's values win over a series' last ones
            summary = {**(summary or {}), **values}
    if series is not None:
        total = sum(map(len, series.values()))
        if total > MAX_POINTS:
            notes.append(f"{total} metric points; only the first {MAX_POINTS} kept")
    return summary, series
