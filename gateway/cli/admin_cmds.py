"""gw commands for usage, the queue, audit and tokens (API), and operator commands (``gw admin``, local).

``gw admin ...`` runs on the gateway host against its database and Slurm
directly (GATEWAY_* settings), so it works before any token exists:
bootstrap with ``gw admin apply site.yaml`` and ``gw admin token USER``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
import yaml
from rich.table import Table

from gateway.cli import exits
from gateway.cli.client import ApiError
from gateway.cli.output import console, err_console, print_json
from gateway.errors import GatewayError, SpecError

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
token_app = typer.Typer(no_args_is_help=True, help="Your API tokens.")


def register(app: typer.Typer, admin: typer.Typer, client, fail) -> None:  # noqa: ANN001, C901
    """Add the commands to ``gw`` (``client()`` builds the API client, ``fail`` reports an ApiError)."""

    def _call(fn, *args, **kwargs):  # noqa: ANN001, ANN202
        try:
            return fn(*args, **kwargs)
        except ApiError as exc:
            fail(exc)

    @app.command()
    def quota(
        project: Annotated[str | None, typer.Argument(help="Project (default: all of yours).")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Usage against the caps: GPUs now, GPU-hours this month, jobs in queue."""
        api = client()
        names = [project] if project else [p["name"] for p in _call(api.projects)]
        reports = [_call(api.usage, name) for name in names]
        if as_json:
            print_json(reports)
            return
        table = Table(show_edge=False, header_style="bold")
        for column in ("PROJECT", "WHO", "GPUS NOW", "GPU-HOURS THIS MONTH", "JOBS IN QUEUE"):
            table.add_column(column)
        for report in reports:
            table.add_row(report["project"], "(project)", *_uses(report))
            for user in report["users"]:
                table.add_row("", user["user"], *_uses(user))
        console.print(table)

    @app.command()
    def queue(as_json: JsonOpt = False) -> None:
        """The admin's view: per partition nodes, running and pending jobs; per project usage."""
        view = _call(client().queue)
        if as_json:
            print_json(view)
            return
        for part in view["partitions"]:
            console.print(f"[bold]partition {part['name']}[/bold] ({part['state']})")
            nodes = Table(show_edge=False, box=None)
            for column in ("NODE", "STATE", "CPUS USED", "GPUS USED", "GPUS FREE"):
                nodes.add_column(column)
            for node in part["nodes"]:
                nodes.add_row(
                    node["name"],
                    node["state"],
                    f"{node['alloc_cpus']}/{node['cpus']}",
                    f"{node['gpus_alloc']}/{node['gpus']}",
                    str(node["gpus_free"]),
                )
            console.print(nodes)
            jobs = Table(show_edge=False, box=None)
            for column in ("JOB", "STATE", "USER", "ACCOUNT", "GPUS", "REASON / NODES", "RUN"):
                jobs.add_column(column)
            for job in part["running"] + part["pending"]:
                where = job["nodes"] if job["state"] == "running" else (job["reason"] or "")
                jobs.add_row(
                    job["job_id"],
                    job["state"],
                    job["user"],
                    job["account"] or "",
                    str(job["gpus"]),
                    where or "",
                    job["run_id"] or "",
                )
            console.print(jobs if part["running"] or part["pending"] else "  no jobs")
            console.print()
        table = Table(show_edge=False, header_style="bold")
        for column in ("PROJECT", "GPUS NOW", "GPU-HOURS THIS MONTH", "JOBS IN QUEUE"):
            table.add_column(column)
        for report in view["projects"]:
            table.add_row(report["project"], *_uses(report))
        console.print(table)

    @app.command()
    def audit(
        project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
        actor: Annotated[str | None, typer.Option(help="Only this user's actions.")] = None,
        action: Annotated[str | None, typer.Option(help="Only this action, e.g. run.submit.")] = None,
        target: Annotated[str | None, typer.Option(help="Only this target id, e.g. a run id.")] = None,
        limit: Annotated[int, typer.Option(help="At most this many.")] = 100,
        as_json: JsonOpt = False,
    ) -> None:
        """The audit log (admins: everything; leads: their projects)."""
        page = _call(client().audit, project=project, actor=actor, action=action, target=target, limit=limit)
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

    @token_app.command("issue")
    def token_issue(
        name: Annotated[str, typer.Option(help="A name to recognise it by.")] = "default",
        user: Annotated[str | None, typer.Option(help="For another user (admins only).")] = None,
        expires_days: Annotated[float | None, typer.Option(help="Days until it expires (0: never).")] = 90,
    ) -> None:
        """Issue a token; the secret is printed once."""
        issued = _call(
            client().issue_token, user=user, name=name, expires_in_days=expires_days if expires_days else None
        )
        console.print(issued["token"], markup=False)
        err_console.print(
            f"token {issued['prefix']}... for {issued['user']}, expires {issued['expires_at'] or 'never'}"
        )

    @token_app.command("list")
    def token_list(
        user: Annotated[str | None, typer.Option(help="Another user's (admins only).")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Your tokens (never their secrets)."""
        tokens = _call(client().tokens, user)
        if as_json:
            print_json(tokens)
            return
        table = Table(show_edge=False, header_style="bold")
        for column in ("ID", "NAME", "PREFIX", "CREATED", "EXPIRES", "REVOKED", "LAST USED"):
            table.add_column(column)
        for t in tokens:
            table.add_row(
                str(t["id"]),
                t["name"],
                t["prefix"],
                *(str(t[k] or "-")[:16] for k in ("created_at", "expires_at", "revoked_at", "last_used_at")),
            )
        console.print(table)

    @token_app.command("revoke")
    def token_revoke(token_id: Annotated[int, typer.Argument(help="Token id (gw token list).")]) -> None:
        """Revoke a token; it stops working at once."""
        token = _call(client().revoke_token, token_id)
        console.print(f"token {token['id']} ({token['prefix']}...) revoked")

    app.add_typer(token_app, name="token")

    # -- operator commands, local ----------------------------------------------------

    @admin.command("apply")
    def admin_apply(
        site_file: Annotated[Path, typer.Argument(help="Site file (YAML).")],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Only print what would change.")] = False,
        no_slurm: Annotated[bool, typer.Option("--no-slurm", help="Do not push caps to Slurm.")] = False,
    ) -> None:
        """Make the gateway (and Slurm's associations) match a site file; prints each change."""
        from gateway.services.site import parse_site

        try:
            config = parse_site(site_file.read_text(encoding="utf-8"), source=str(site_file))
        except OSError as exc:
            err_console.print(f"cannot read {site_file}: {exc}", markup=False)
            raise typer.Exit(exits.USAGE) from exc
        except SpecError as exc:
            err_console.print(str(exc), markup=False)
            raise typer.Exit(exits.USAGE) from exc
        with _local() as services:
            changes = services.site.apply(None, config, dry_run=dry_run)
            slurm = [] if no_slurm else services.slurm_sync.sync(None, dry_run=dry_run)
        for line in changes:
            console.print(("would " if dry_run else "") + line, markup=False)
        for line in slurm:
            console.print(("would " if dry_run else "") + "slurm: " + line, markup=False)
        if not changes and not slurm:
            console.print("nothing to change")

    @admin.command("export")
    def admin_export(
        output: Annotated[
            Path | None, typer.Option("-o", "--output", help="Write here (default: stdout).")
        ] = None,
    ) -> None:
        """Write the current users, projects, members, queues and caps as a site file."""
        with _local() as services:
            config = services.site.export(None)
        text = yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
        if output:
            output.write_text(text, encoding="utf-8")
        else:
            console.print(text, markup=False, end="")

    @admin.command("sync-slurm")
    def admin_sync_slurm(
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Only print what would change.")] = False,
    ) -> None:
        """Push the projects' caps to Slurm accounts and associations (sacctmgr)."""
        with _local() as services:
            changes = services.slurm_sync.sync(None, dry_run=dry_run)
        for line in changes or ["nothing to change"]:
            console.print(line, markup=False)

    audit_admin = typer.Typer(no_args_is_help=True, help="The audit log, on the gateway host.")

    @audit_admin.command("verify")
    def admin_audit_verify() -> None:
        """Recompute the audit hash chain; exit 1 and name the events if any was edited or deleted."""
        with _local() as services:
            problems = services.audit.verify()
        if problems:
            for problem in problems:
                err_console.print(f"[red]tampered[/red]: {problem}")
            raise typer.Exit(1)
        console.print("audit log intact")

    admin.add_typer(audit_admin, name="audit")

    @admin.command("token")
    def admin_token(
        user: Annotated[str, typer.Argument(help="The user the token is for.")],
        name: Annotated[str, typer.Option(help="A name to recognise it by.")] = "default",
        expires_days: Annotated[float | None, typer.Option(help="Days until it expires (0: never).")] = 90,
        write_config: Annotated[
            Path | None,
            typer.Option(
                help="Also write url and token to this gw config file (e.g. ~/.config/gw/config.toml)."
            ),
        ] = None,
        url: Annotated[
            str, typer.Option(help="The url to write with --write-config.")
        ] = "http://127.0.0.1:8000",
    ) -> None:
        """Issue a token for USER on the gateway host (bootstrap: no token needed); prints the secret once."""
        with _local() as services:
            secret, token = services.auth.issue_token(
                None, user, name=name, expires_in_days=expires_days or None
            )
        if write_config:
            write_config.parent.mkdir(parents=True, exist_ok=True)
            write_config.write_text(f'url = "{url}"\ntoken = "{secret}"\n', encoding="utf-8")
            write_config.chmod(0o600)
            err_console.print(f"wrote {write_config}")
        console.print(secret, markup=False)
        err_console.print(f"token {token.prefix}... for {user}, expires {token.expires_at or 'never'}")


def _uses(report: dict) -> list[str]:
    def show(use: dict) -> str:
        cap = use["cap"]
        used = use["used"]
        text = f"{used:g}" if isinstance(used, float) else str(used)
        return f"{text} / {cap:g}" if cap is not None else f"{text} (no cap)"

    return [show(report["gpus"]), show(report["gpu_hours"]), show(report["jobs_in_queue"])]


class _local:
    """The services, built from GATEWAY_* settings, for operator commands on the gateway host."""

    def __enter__(self):  # noqa: ANN204
        from gateway.services import build_services
        from gateway.settings import Settings

        try:
            self.services = build_services(Settings())
        except GatewayError as exc:
            err_console.print(f"[red]error[/red]: {exc}")
            raise typer.Exit(exits.UNAVAILABLE) from exc
        return self.services

    def __exit__(self, exc_type, exc, tb) -> None:  # noqa: ANN001
        self.services.close()
        if isinstance(exc, GatewayError):
            err_console.print(f"[red]error[/red]: {exc}")
            raise typer.Exit(exits.for_status(_status(exc))) from exc


def _status(exc: GatewayError) -> int:
    from gateway.api.errors import status_for

    return status_for(exc)[0]
