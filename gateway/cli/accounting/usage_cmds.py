"""gw quota, gw queue and gw audit: usage against the caps, the admin's queue view, the audit log (API)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from gateway.cli.common import JsonOpt, call, client, fail
from gateway.cli.output import console, print_json
from gateway.client.errors import ApiError


def register(app: typer.Typer) -> None:
    """Add ``gw quota``, ``gw queue`` and ``gw audit`` to ``app``."""
    app.command()(quota)
    app.command()(queue)
    app.command()(audit)


def quota(
    project: Annotated[str | None, typer.Argument(help="Project (default: all of yours).")] = None,
    cluster: Annotated[
        str | None,
        typer.Option(help="Only on this Slurm cluster (default: each one the project has queues on)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Usage against the caps: GPUs now, GPU-hours this month, jobs in queue.

    One block per cluster the project has queues on (each cluster enforces the caps on its own
    associations, docs/clusters.md)."""
    names = [project] if project else [p["name"] for p in call("projects")]
    reports = [report for name in names for report in _reports(name, cluster)]
    if as_json:
        print_json(reports)
        return
    for report in reports:
        title = f"[bold]project {escape(report['project'])}[/bold] on cluster {escape(report['cluster'])}"
        if report.get("error"):
            console.print(f"{title}: [red]not answering[/red]: {escape(report['error'])}")
            console.print()
            continue
        console.print(title)
        table = Table(show_edge=False, header_style="bold")
        for column in ("WHO", "GPUS NOW", "GPU-HOURS THIS MONTH", "JOBS IN QUEUE"):
            table.add_column(column)
        table.add_row("(project)", *_uses(report))
        for user in report["users"]:
            table.add_row(user["user"], *_uses(user))
        console.print(table)
        console.print()


def _reports(project: str, cluster: str | None) -> list[dict]:
    """``project``'s usage on ``cluster``, or on each cluster its queues are on (a queue naming none
    is on the first: that one first, then the others by name); a cluster whose Slurm does not answer
    (5xx) is given by its error."""
    if cluster is not None:
        return [call("usage", project, cluster=cluster)]
    named = {q.get("cluster") for q in call("project", project)["queues"]} or {None}
    asked = sorted(named, key=lambda name: (name is not None, name or ""))  # the first cluster first
    reports: dict[str, dict] = {}
    for name in asked:
        try:
            report = client().usage(project, cluster=name)
        except ApiError as exc:
            if exc.status < 500:
                fail(exc)
            report = {"project": project, "cluster": name or "(the first)", "error": str(exc.detail)}
        reports.setdefault(report["cluster"], report)
    return list(reports.values())


def queue(
    cluster: Annotated[
        str | None,
        typer.Option(help="Only this Slurm cluster's partitions and usage (docs/clusters.md)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The admin's view: per partition nodes, running and pending jobs; per project usage."""
    view = call("queue", cluster=cluster)
    if as_json:
        print_json(view)
        return
    for part in view["partitions"]:
        if part.get("error"):
            why = escape(part["error"])
            console.print(f"[bold]cluster {part.get('cluster')}[/bold]: [red]not answering[/red]: {why}")
            console.print()
            continue
        on = f" on {part['cluster']}" if part.get("cluster") else ""
        console.print(f"[bold]partition {part['name']}[/bold]{on} ({part['state']})")
        console.print(_nodes_table(part["nodes"]))
        jobs = _jobs_table(part["running"] + part["pending"])
        console.print(jobs if part["running"] or part["pending"] else "  no jobs")
        console.print()
    clusters = any(part.get("cluster") for part in view["partitions"])  # several: usage is per cluster
    table = Table(show_edge=False, header_style="bold")
    named = ("CLUSTER",) if clusters else ()
    for column in ("PROJECT", *named, "GPUS NOW", "GPU-HOURS THIS MONTH", "JOBS IN QUEUE"):
        table.add_column(column)
    for report in view["projects"]:
        table.add_row(report["project"], *((report["cluster"],) if clusters else ()), *_uses(report))
    console.print(table)


def audit(
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    actor: Annotated[str | None, typer.Option(help="Only this user's actions.")] = None,
    action: Annotated[str | None, typer.Option(help="Only this action, e.g. run.submit.")] = None,
    target: Annotated[str | None, typer.Option(help="Only this target id, e.g. a run id.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """The audit log (admins: everything; leads: their projects)."""
    page = call("audit", project=project, actor=actor, action=action, target=target, limit=limit)
    if as_json:
        print_json(page)
        return
    table = Table(show_edge=False, header_style="bold")
    for column in ("SEQ", "AT", "ACTOR", "ACTION", "TARGET", "PROJECT", "FROM"):
        table.add_column(column)
    for event in page["items"]:
        table.add_row(
            str(event["seq"]),
            event["at"][:19].replace("T", " "),
            event["actor"],
            event["action"],
            f"{event['target_type']} {event['target_id']}",
            event["project"] or "",
            event["source"] or "",
        )
    console.print(table)


def _nodes_table(nodes: list[dict]) -> Table:
    table = Table(show_edge=False, box=None)
    for column in ("NODE", "STATE", "CPUS USED", "GPUS USED", "GPUS FREE"):
        table.add_column(column)
    for node in nodes:
        table.add_row(
            node["name"],
            node["state"],
            f"{node['alloc_cpus']}/{node['cpus']}",
            f"{node['gpus_alloc']}/{node['gpus']}",
            str(node["gpus_free"]),
        )
    return table


def _jobs_table(jobs: list[dict]) -> Table:
    table = Table(show_edge=False, box=None)
    for column in ("JOB", "STATE", "USER", "ACCOUNT", "GPUS", "REASON / NODES", "RUN"):
        table.add_column(column)
    for job in jobs:
        where = job["nodes"] if job["state"] == "running" else (job["reason"] or "")
        table.add_row(
            job["job_id"],
            job["state"],
            job["user"],
            job["account"] or "",
            str(job["gpus"]),
            Text(where or ""),  # Slurm's reason or node list: text, never markup
            job["run_id"] or "",
        )
    return table


def _uses(report: dict) -> list[str]:
    def show(use: dict) -> str:
        cap = use["cap"]
        used = use["used"]
        text = f"{used:g}" if isinstance(used, float) else str(used)
        return f"{text} / {cap:g}" if cap is not None else f"{text} (no cap)"

    return [show(report["gpus"]), show(report["gpu_hours"]), show(report["jobs_in_queue"])]
