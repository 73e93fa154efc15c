"""How ``gw`` shows things: Rich tables for people, JSON with ``--json``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

# Not on a terminal (a pipe, a file, a log) and no COLUMNS said how wide: as squeue does, print every
# value whole and every message on one line rather than cut or wrap them at a guessed 80 columns
# (`gw runs | grep ...` must see the full names, `2>err.log` the whole message).
PIPE_WIDTH = 100_000
_SIZED = "COLUMNS" in os.environ
console = Console(highlight=False, width=None if _SIZED or sys.stdout.isatty() else PIPE_WIDTH)
err_console = Console(
    stderr=True, highlight=False, width=None if _SIZED or sys.stderr.isatty() else PIPE_WIDTH
)

STATE_STYLE = {
    "succeeded": "green",
    "running": "cyan",
    "queued": "yellow",
    "held": "yellow",
    "submitting": "yellow",
    "cancelled": "magenta",
    "unknown": "bold yellow",
}


def print_json(data: Any) -> None:
    """Print ``data`` as indented JSON on stdout; values JSON cannot hold (datetimes) as ``str``."""
    console.print_json(json.dumps(data, default=str))


def print_listing(
    items: list[dict],
    as_json: bool,
    columns: Sequence[str],
    row: Callable[[dict], Sequence[str]],
    *,
    none: str | None = None,
) -> None:
    """``items`` as JSON with ``--json``; else ``none`` when there are none (if given); else a table of
    ``columns`` (borderless, bold headers), one line ``row(item)`` per item."""
    if as_json:
        print_json(items)
        return
    if none is not None and not items:
        console.print(none)
        return
    table = Table(show_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column)
    for item in items:
        table.add_row(*row(item))
    console.print(table)


def state_text(state: str, stale: bool = False) -> str:
    """A run or attempt state as Rich markup, coloured by :data:`STATE_STYLE` (red when not listed)."""
    style = STATE_STYLE.get(state, "red")
    return f"[{style}]{state}[/{style}]" + (" [dim](stale)[/dim]" if stale else "")


RUN_COLUMNS = ("RUN", "NAME", "PROJECT", "QUEUE", "STATE", "JOB", "SUBMITTER", "CREATED")


def run_row(run: dict, *, clustered: bool = False) -> list[str]:
    """One run summary's values, in ``run_columns(clustered)`` order, as plain text."""
    cluster = [run.get("cluster") or "-"] if clustered else []
    return [
        run["id"],
        run["name"],
        run["project"],
        run["queue"],
        run["state"],
        run.get("job_id") or "-",
        *cluster,
        run["submitter"],
        run["created_at"][:19].replace("T", " "),
    ]


def runs_table(items: list[dict]) -> Table:
    """A table of run summaries (``RunSummary`` dicts as the API returns them), one row each; a CLUSTER
    column after JOB when a run's job is on a named cluster (several clusters: docs/clusters.md)."""
    clustered = any(run.get("cluster") for run in items)
    table = Table(show_edge=False, header_style="bold")
    for column in run_columns(clustered):
        table.add_column(column, no_wrap=column in ("RUN", "STATE", "CREATED"))
    for run in items:
        row = [escape(value) for value in run_row(run, clustered=clustered)]
        row[4] = state_text(run["state"])
        table.add_row(*row)
    return table


def run_columns(clustered: bool) -> tuple[str, ...]:
    """:data:`RUN_COLUMNS`, with CLUSTER after JOB when ``clustered``."""
    return (*RUN_COLUMNS[:6], "CLUSTER", *RUN_COLUMNS[6:]) if clustered else RUN_COLUMNS


def print_tsv(columns: tuple[str, ...], rows: list[list[str]]) -> None:
    """``--format tsv``: a header line, then one line a row, values tab-separated and whole (for awk,
    cut, a spreadsheet); a tab or newline inside a value becomes a space."""
    for values in [list(columns), *rows]:
        sys.stdout.write("\t".join(v.replace("\t", " ").replace("\n", " ") for v in values) + "\n")


def _fmt_duration(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def show_run(run: dict, *, script: bool = False) -> None:
    """Print one run (a ``RunPublic`` dict) for people: header, each attempt, why it waits, the script.

    Prints to :data:`console`; ``script`` adds the rendered sbatch script at the end. ``run`` is not changed.
    """
    _print_header(run)
    for attempt in run["attempts"]:
        console.print()
        _print_attempt(attempt)
    if (run.get("spec") or {}).get("sweep") and run["attempts"]:
        console.print(f"each task's sweep point, metrics and artifacts: gw tasks {run['id']}", markup=False)
    if run.get("waiting"):
        console.print()
        _print_waiting(run["waiting"])
    if script:
        console.print()
        console.print(run["script"], markup=False)


def _print_header(run: dict) -> None:
    console.print(f"[bold]{run['id']}[/bold]  {run['name']}  {state_text(run['state'])}")
    console.print(
        f"project {run['project']}  queue {run['queue']}  submitter {run['submitter']}  "
        f"tags {', '.join(run['tags']) or '-'}"
    )
    console.print(
        f"spec sha256 {run['spec_sha256'][:16]}  script sha256 {run['script_sha256'][:16]}  "
        f"template {run['template_name']} @ {run['template_version']}"
    )
    console.print(f"run dir {run['run_dir']}")
    if run.get("parent_run_id"):
        console.print(f"derived from {run['parent_run_id']}:")
        for change in run.get("derived_diff") or []:
            console.print(f"  {change['path']}: {change['before']!r} -> {change['after']!r}", markup=False)
    if run.get("children"):
        console.print(f"reruns: {', '.join(run['children'])}")


def _print_attempt(attempt: dict) -> None:
    origin = "" if attempt.get("origin", "submit") == "submit" else f" ({attempt['origin']})"
    console.print(
        f"[bold]attempt {attempt['number']}{origin}[/bold]  job {attempt['job_id'] or '-'}"
        + (f" on {escape(attempt['cluster'])}" if attempt.get("cluster") else "")
        + "  "
        f"{state_text(attempt['state'], attempt['stale'])}"
        + (f"  reason: {escape(attempt['reason'])}" if attempt["reason"] else "")
    )
    console.print("  " + "  ".join(f"[dim]{k}[/dim] {escape(v)}" for k, v in _attempt_facts(attempt)))
    if attempt["tasks"]:
        _print_tasks(attempt)
    console.print(_timeline(attempt["events"]))
    if attempt.get("failure"):
        _print_failure(attempt["failure"])
    if attempt.get("waits"):
        waited = ", ".join(f"{w['reason']} {_fmt_duration(int(w['seconds']))}" for w in attempt["waits"])
        console.print(f"  [dim]waited[/dim] {escape(waited)}")


def _exit_text(code: int | None, signal: int | None) -> str:
    """``3``, or ``0:9`` when a signal ended it (sacct's ExitCode), ``-`` before it ended."""
    if code is None:
        return "-"
    return f"{code}:{signal}" if signal else str(code)


def _attempt_facts(attempt: dict) -> list[tuple[str, str]]:
    tres = attempt["alloc_tres"]
    if attempt["tasks"] or attempt.get("array_size") is not None:
        # an array: nodes, exit, allocation and memory are each task's (the table below); the
        # elapsed time is the array's span from its first start to its last end, never a sum
        facts = [
            ("submitted", _time(attempt["submit_time"])),
            ("first start", _time(attempt["start_time"])),
            ("last end", _time(attempt["end_time"])),
            ("span", _fmt_duration(_span_s(attempt))),
        ]
    else:
        facts = [
            ("nodes", attempt["node_list"] or "-"),
            ("submitted", _time(attempt["submit_time"])),
            ("started", _time(attempt["start_time"])),
            ("ended", _time(attempt["end_time"])),
            ("elapsed", _fmt_duration(attempt["elapsed_s"])),
            ("exit", _exit_text(attempt["exit_code"], attempt["exit_signal"])),
            ("alloc", ",".join(f"{k}={v}" for k, v in tres.items()) or "-"),
            ("max rss", "-" if attempt["max_rss_kb"] is None else f"{attempt['max_rss_kb'] / 1024:.1f} MiB"),
        ]
    if attempt.get("expected_start"):
        facts.append(("expected start", _time(attempt["expected_start"])))
    if attempt.get("cancelled_by_uid") is not None:
        facts.append(("cancelled by uid", str(attempt["cancelled_by_uid"])))
    return facts


def _span_s(attempt: dict) -> int | None:
    """An array's wall-clock span, first start to last end (None until both are known)."""
    start, end = attempt.get("start_time"), attempt.get("end_time")
    if not (start and end):
        return None
    return max(0, int((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()))


def _task_order(index: str) -> tuple[int, str]:
    return (int(index), index) if index.isdigit() else (1 << 62, index)


def _print_tasks(attempt: dict) -> None:
    """The array's summary line (tasks by state, exit codes) and one row per task it has seen."""
    tasks = attempt["tasks"]
    states: dict[str, int] = {}
    for task in tasks.values():
        states[task["state"]] = states.get(task["state"], 0) + 1
    size = attempt["array_size"] if attempt.get("array_size") is not None else len(tasks)
    unseen = size - len(tasks)
    summary = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
    if unseen > 0:
        summary += f", {unseen} not seen yet"
    codes = sorted({t["exit_code"] for t in tasks.values() if t.get("exit_code") is not None})
    exits = f"; exit codes {', '.join(map(str, codes))}" if codes else ""
    console.print(f"  [dim]array of {size} tasks:[/dim] {summary}{exits}", highlight=False)
    table = Table(show_edge=False, box=None, padding=(0, 1))
    for column in ("TASK", "STATE", "EXIT", "ELAPSED", "NODE"):
        table.add_column(column)
    for index in sorted(tasks, key=_task_order):
        task = tasks[index]
        table.add_row(
            index,
            task.get("state") or "-",
            _exit_text(task.get("exit_code"), task.get("exit_signal")),
            _fmt_duration(task.get("elapsed_s")),
            Text(task.get("node_list") or "-"),
        )
    console.print(table)


def _timeline(events: list[dict]) -> Table:
    timeline = Table(show_edge=False, box=None, padding=(0, 1))
    for column in ("AT", "FROM", "TO", "SOURCE", "REASON"):
        timeline.add_column(column, style="dim" if column == "AT" else None)
    for event in events:
        timeline.add_row(
            _time(event["at"]),
            event["from_state"] or "-",
            event["to_state"],
            event["source"],
            Text(event["reason"] or ""),  # Slurm's words or a job's: shown as text, never as markup
        )
    return timeline


def _print_failure(failure: dict) -> None:
    if failure["class"] == "cancelled":  # its own outcome: someone asked for it, nothing failed
        console.print(f"  [yellow]cancelled[/yellow] {escape(failure['summary'])}", highlight=False)
        return
    console.print(
        f"  [red]failure: {escape(failure['class'])}[/red] {escape(failure['summary'])}", highlight=False
    )
    console.print(f"  [green]->[/green] {escape(failure['action'])}")
    evidence = failure.get("evidence") or {}
    shown = {k: v for k, v in evidence.items() if k != "log_tail" and v not in (None, "", [])}
    if shown:
        console.print("  evidence: " + ", ".join(f"{k}={v}" for k, v in shown.items()), markup=False)
    if evidence.get("log_tail"):
        console.print("  last lines of stderr:", style="dim")
        for line in str(evidence["log_tail"]).splitlines()[-10:]:
            console.print(f"    {line}", markup=False)


def _print_waiting(waiting: dict) -> None:
    code, summary = escape(waiting["code"]), escape(waiting["summary"])
    console.print(f"[bold yellow]why it waits[/bold yellow] ({code}): {summary}")
    for line in waiting["details"]:
        console.print(f"  {line}", markup=False)
    for line in waiting["actions"]:
        console.print(f"  [green]->[/green] {escape(line)}")


def _time(value: str | None) -> str:
    return value[:19].replace("T", " ") if value else "-"


def health_headline(url: str, report: dict) -> str:
    """``gw health``'s first line: healthy, degraded (a cluster of several does not answer, the others
    and the database do: the gateway serves) or not, and what was checked (``GET /healthz``)."""
    found = report.get("clusters")
    clusters: dict = found if isinstance(found, dict) else {}
    silent = [n for n, c in clusters.items() if isinstance(c, dict) and not c.get("ok")]
    serving = _ok(report.get("database")) and len(silent) < len(clusters)
    if report.get("status") == "ok":
        verdict = "healthy"
    elif silent and serving:
        verdict = f"degraded: cluster {', '.join(silent)} not answering (its queues refuse submissions)"
    else:
        verdict = "NOT healthy"
    checked = "each cluster lists its partitions" if clusters else "Slurm lists its partitions"
    return f"gateway at {url}: {verdict} (checked: it answers, its database takes a query, {checked})"


def _ok(check: object) -> bool:
    return isinstance(check, dict) and bool(check.get("ok"))


def health_lines(report: dict) -> list[str]:
    """``gw health``'s lines: each check, its latency or its error; Slurm's SSH hop on a line of its own."""
    lines = []
    for name in ("database", "slurm"):
        check = report.get(name)
        if not isinstance(check, dict):
            continue
        lines.append(f"  {name}: {_check_text(check, slurm=name == 'slurm')}")
        via = check.get("via")
        if isinstance(via, dict):
            lines.append(f"    via {via.get('hop')}: {_check_text(via)}")
    clusters = report.get("clusters")
    for name, c in clusters.items() if isinstance(clusters, dict) else ():
        if not isinstance(c, dict):
            continue
        lines.append(f"  cluster {name}: {_check_text(c, slurm=True)}")
        via = c.get("via")
        if isinstance(via, dict):  # its own submit host's hop, or the server-wide one
            lines.append(f"    via {via.get('hop')}: {_check_text(via)}")
    if not lines and report.get("detail"):
        lines.append(f"  {report['detail']}")
    return lines


def _check_text(check: dict, *, slurm: bool = False) -> str:
    """A check's answer; a failed Slurm check (``slurm``) also says since when and when it last answered."""
    if check.get("ok"):
        return f"ok in {check.get('latency_ms')} ms"
    text = f"FAILED: {check.get('error')}"
    if slurm:
        last = check.get("last_answered_at")
        since = f"not answering since {_time(check['down_since'])} UTC; " if check.get("down_since") else ""
        answered = (
            f"last answered {_time(last)} UTC" if last else "it has not answered this gateway process yet"
        )
        text += f" ({since}{answered})"
    return text
