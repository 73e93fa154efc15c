"""gw release mirror-status and gw handoff ...: the MLflow mirror, MLflow tracking and webhook deliveries.

``gw release mirror-status PROJECT/NAME`` shows each release's MLflow version,
each alias's mirror, the webhook deliveries and any drift between MLflow and
the gateway (exit 5 when there is drift, so a check can alert on it).
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import typer

from gateway.cli import exits
from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.output import console, print_json
from gateway.core.releases.domain import parse_release_ref

handoff_app = typer.Typer(no_args_is_help=True, help="MLflow mirror jobs and webhook deliveries.")
ITEM_ID = re.compile(r"hx-[0-9a-f]{16}")
STATUSES = ("pending", "done", "failed", "dead")
KINDS = ("mlflow.release", "mlflow.alias", "mlflow.run", "webhook")


def register(app: typer.Typer) -> None:
    """Add ``gw handoff`` to ``app``."""
    app.add_typer(handoff_app, name="handoff")


def add_release_commands(release_app: typer.Typer) -> None:
    """Add ``gw release mirror-status`` to the release group."""
    release_app.command("mirror-status")(mirror_status)


def _item_line(i: dict[str, Any]) -> str:
    where = i["target"] or i["result"].get("version_url") or i["result"].get("run_url") or ""
    error = f"  last error: {i['last_error']}" if i["last_error"] and i["status"] != "done" else ""
    due = f"  next try {i['next_at']}" if i["status"] in ("pending", "failed") and i["next_at"] else ""
    return f"  {i['id']}  {i['kind']:<14} {i['status']:<7} tries {i['attempts']}  {where}{due}{error}"


def mirror_status(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")], as_json: JsonOpt = False
) -> None:
    """A model's MLflow mirror: each release's version, each alias, webhook deliveries, and drift."""
    try:
        ref = parse_release_ref(model, version=False)
    except ValueError as exc:
        usage(str(exc))
    found = call("mirror_status", ref.project, ref.name)
    if as_json:
        print_json(found)
    else:
        console.print(f"{found['model']} -> MLflow {found['mlflow'] or '(none configured)'}", markup=False)
        if found["registered_model"]:
            console.print(f"registered model {found['registered_model']}", markup=False)
        for r in found["releases"]:
            version = r["mlflow_version"] or "-"
            console.print(f"release {r['version']}: MLflow version {version}", markup=False)
            for i in ([r["mirror"]] if r["mirror"] else []) + r["webhooks"]:
                console.print(_item_line(i), markup=False)
        for a in found["aliases"]:
            console.print(
                f"alias {a['alias']} -> release {a['version']} (MLflow version {a['mlflow_version'] or '-'})",
                markup=False,
            )
            for i in ([a["mirror"]] if a["mirror"] else []) + a["webhooks"]:
                console.print(_item_line(i), markup=False)
        if found["problem"]:
            console.print(found["problem"], markup=False)
        for d in found["drift"]:
            console.print(f"DRIFT: {d}", markup=False)
        if found["checked"] and not found["drift"]:
            console.print("MLflow matches the gateway (no drift)", markup=False)
    if found["drift"]:
        raise typer.Exit(exits.CONFLICT)


@handoff_app.command("list")
def list_items(
    project: Annotated[str | None, typer.Option("--project", help="Only this project's.")] = None,
    status: Annotated[str | None, typer.Option("--status", help=f"One of {', '.join(STATUSES)}.")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help=f"One of {', '.join(KINDS)}.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Mirror jobs and webhook deliveries of the projects you may read, oldest first."""
    if status is not None and status not in STATUSES:
        usage(f"--status {status!r}: one of {', '.join(STATUSES)}")
    if kind is not None and kind not in KINDS:
        usage(f"--kind {kind!r}: one of {', '.join(KINDS)}")
    found = call("handoff_items", project=project, status=status, kind=kind)
    if as_json:
        print_json(found)
        return
    for i in found:
        console.print(f"{i['project']}  {i['subject']}" + _item_line(i), markup=False)


@handoff_app.command("run")
def run_status(
    run_id: Annotated[str, typer.Argument(help="A run id")],
    sync: Annotated[bool, typer.Option("--sync", help="Log it to MLflow tracking now (idempotent).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """A run's MLflow tracking link and hand-off items (with --sync, log it to MLflow now)."""
    if sync:
        call("sync_run", run_id)
    found = call("run_handoff", run_id)
    if as_json:
        print_json(found)
        return
    console.print(f"{run_id} -> MLflow {found['run_url'] or '(not logged yet)'}", markup=False)
    for i in found["items"]:
        console.print(_item_line(i), markup=False)


@handoff_app.command("replay")
def replay(
    item_id: Annotated[str, typer.Argument(help="A hand-off item id (hx-...)")], as_json: JsonOpt = False
) -> None:
    """Try a mirror job or webhook delivery again now (site admins; the same event id is sent)."""
    if not ITEM_ID.fullmatch(item_id):
        usage(f"{item_id!r} is not a hand-off item id (hx- and 16 hex digits; `gw handoff list` shows them)")
    found = call("replay_handoff", item_id)
    if as_json:
        print_json(found)
    else:
        console.print(_item_line(found), markup=False)
