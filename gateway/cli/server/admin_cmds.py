"""gw admin ...: operator commands, run on the gateway host against its database and Slurm directly.

They read the GATEWAY_* settings and need no token, so they work before any
exists: bootstrap with ``gw admin apply site.yaml`` and ``gw admin token USER``.
Each calls the services as ``Principal.operator()`` (a site admin, audited as
``operator`` from ``gateway host``); the services check permissions as for
anyone else.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Annotated

import typer
import yaml
from rich.markup import escape

from gateway.cli import exits
from gateway.cli.common import spec_error, usage
from gateway.cli.output import console, err_console
from gateway.errors import GatewayError, SpecError

if TYPE_CHECKING:
    from gateway.core.access.values import Principal
    from gateway.services import Services

audit_admin = typer.Typer(no_args_is_help=True, help="The audit log, on the gateway host.")
evidence_key_admin = typer.Typer(
    no_args_is_help=True, help="The site key that signs evidence bundles (Ed25519)."
)
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Only print what would change.")]


def register_admin(admin: typer.Typer) -> None:
    """Add the operator commands to ``gw admin``."""
    admin.command("apply")(admin_apply)
    admin.command("export")(admin_export)
    admin.command("sync-slurm")(admin_sync_slurm)
    admin.add_typer(audit_admin, name="audit")
    admin.add_typer(evidence_key_admin, name="evidence-key")
    admin.command("token")(admin_token)
    admin.command("ssh-check")(admin_ssh_check)


def admin_apply(
    site_file: Annotated[Path, typer.Argument(help="Site file (YAML).")],
    dry_run: DryRunOpt = False,
    no_slurm: Annotated[bool, typer.Option("--no-slurm", help="Do not push caps to Slurm.")] = False,
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Remove the users and projects the file leaves out (never the last admin); "
            "without it they are kept.",
        ),
    ] = False,
) -> None:
    """Make the gateway (and Slurm's associations) match a site file; prints each change."""
    from gateway.adapters.files import read_text
    from gateway.core.site.schema import parse_site

    try:
        config = parse_site(read_text(site_file, what="site file"), source=str(site_file))
    except SpecError as exc:
        spec_error(exc)
    with _local(dry_run=dry_run) as services:
        result = services.site.apply(
            _operator(), config, dry_run=dry_run, sync_slurm=not no_slurm, prune=prune
        )
    for line in result.changes:
        console.print(("would " if dry_run else "") + line, markup=False)
    for line in result.slurm:
        console.print(("would " if dry_run else "") + "slurm: " + line, markup=False)
    if not result.changes and not result.slurm:
        console.print("nothing to change")
    for line in result.kept:
        console.print(line.replace("pass prune", "pass --prune"), markup=False)


def admin_export(
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write here (default: stdout).")
    ] = None,
) -> None:
    """Write the current users, projects, members, queues and caps as a site file."""
    with _local() as services:
        config = services.site.export(_operator())
    text = yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True), sort_keys=False)
    if output:
        output.write_text(text, encoding="utf-8")
    else:
        console.print(text, markup=False, end="")


def admin_sync_slurm(dry_run: DryRunOpt = False) -> None:
    """Push the projects' caps to Slurm accounts and associations (sacctmgr)."""
    with _local(dry_run=dry_run) as services:
        changes = services.slurm_sync.sync(_operator(), dry_run=dry_run)
    for line in changes or ["nothing to change"]:
        console.print(line, markup=False)


@evidence_key_admin.command("generate")
def admin_evidence_key_generate(
    path: Annotated[
        Path, typer.Argument(help="Where the private key goes (0600); the public key: PATH.pub.")
    ],
) -> None:
    """Make a new Ed25519 evidence signing key: PATH (private, 0600) and PATH.pub (public, to hand out).

    Set GATEWAY_EVIDENCE_SIGNING_KEY=PATH for gw serve; anyone checks a bundle with
    `gw evidence verify BUNDLE --public-key PATH.pub` (docs/evidence-schema.md#signatures).
    """
    from gateway.adapters.evidence_key import write_key_pair

    try:
        public, key_id = write_key_pair(path)
    except OSError as exc:
        err_console.print(f"cannot write the key: {exc.strerror or exc}", markup=False)
        raise typer.Exit(exits.USAGE) from exc
    console.print(
        f"wrote {path} (private, 0600) and {public} (public); key id {key_id}", markup=False, soft_wrap=True
    )
    console.print(
        f"set GATEWAY_EVIDENCE_SIGNING_KEY={path} for gw serve, and hand out {public}",
        markup=False,
        soft_wrap=True,
    )


@audit_admin.command("verify")
def admin_audit_verify() -> None:
    """Recompute the audit hash chain, check it against the checkpoints; exit 1 naming each problem."""
    with _local() as services:
        verdict = services.audit.verify(_operator())
    for problem in verdict.problems:
        err_console.print(f"[red]problem[/red]: {escape(problem)}", soft_wrap=True)
    if verdict.problems:
        raise typer.Exit(1)
    last = verdict.last_checkpoint
    covered = (
        f"{verdict.checkpoints} checkpoint{'s' if verdict.checkpoints != 1 else ''} in "
        f"{verdict.anchor_path} agree{'s' if verdict.checkpoints == 1 else ''}, the newest: {last}"
        if last
        else f"no checkpoint yet in {verdict.anchor_path}, so a cut at its end cannot be detected "
        "(gw serve writes them; or gw admin audit checkpoint)"
    )
    console.print(f"audit log intact: {verdict.events} events; {covered}", markup=False, soft_wrap=True)


@audit_admin.command("checkpoint")
def admin_audit_checkpoint(
    new_file: Annotated[
        bool,
        typer.Option(
            "--new-file",
            help="Move the anchor file aside (kept) and start a new one (after a loss, or a restore).",
        ),
    ] = False,
) -> None:
    """Append the audit chain's head to the anchor file now; exit 5 if the log or the file is damaged."""
    with _local() as services:
        outcome = services.audit.checkpoint(actor="operator", source="gateway host", new_file=new_file)
    console.print(outcome.note, markup=False, soft_wrap=True)


def admin_token(
    user: Annotated[str, typer.Argument(help="The user the token is for.")],
    name: Annotated[str, typer.Option(help="A name to recognise it by.")] = "default",
    expires_days: Annotated[float | None, typer.Option(help="Days until it expires (0: never).")] = 90,
    write_config: Annotated[
        Path | None,
        typer.Option(help="Also write url and token to this gw config file (e.g. ~/.config/gw/config.toml)."),
    ] = None,
    url: Annotated[str, typer.Option(help="The url to write with --write-config.")] = "http://127.0.0.1:8000",
    scope: Annotated[
        str,
        typer.Option(help="api (the API and web UI) or metrics (for a scraper: GET /metrics only)."),
    ] = "api",
) -> None:
    """Issue a token for USER on the gateway host (bootstrap: no token needed); prints the secret once."""
    with _local() as services:
        secret, token = services.auth.issue_token(
            _operator(), user, name=name, expires_in_days=expires_days or None, scope=scope
        )
    console.print(secret, markup=False)
    err_console.print(
        f"{token.scope} token {token.prefix}... for {user}, expires {token.expires_at or 'never'}"
    )
    if write_config:
        try:
            write_private(write_config, f"url = {json.dumps(url)}\ntoken = {json.dumps(secret)}\n")
        except OSError as exc:
            usage(f"cannot write {write_config}: {exc} (the token above was issued all the same)")
        err_console.print(f"wrote {write_config}")


def admin_ssh_check() -> None:
    """Log in to the submit host as the service user and as each mapped OS user; exit 69 if any fails.

    Each submit host once: the server-wide one and each cluster's own, naming the clusters it serves.
    """
    with _local() as services:
        reports = services.submit_host.check_logins(_operator())
    for report in reports:
        serves = f" for cluster {', '.join(report.clusters)}" if report.clusters else ""
        console.print(f"submit host: {report.hop}{serves}", markup=False)
        for role, check in [("service", report.service), *(("user", c) for c in report.users)]:
            took = f" in {check.latency_ms:g} ms" if check.latency_ms is not None else ""
            console.print(
                f"{'ok ' if check.ok else 'FAIL'} {role} {check.user}{took}: {check.detail}", markup=False
            )
        working = sum(c.ok for c in report.users)
        console.print(f"{working} of {len(report.users)} mapped users can submit", markup=False)
    if not all(report.ok for report in reports):
        raise typer.Exit(exits.UNAVAILABLE)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that no one else can ever read it (mode 0600 from the start).

    The text goes to a new file made 0600 in the same directory (created 0700
    if missing), then renamed over ``path``: a reader who opened an older,
    wider file keeps its old content, and a symlink at ``path`` is replaced,
    not followed. (JSON strings are valid TOML basic strings.)
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _operator() -> Principal:  # its module (pydantic specs) loads when a command runs
    from gateway.core.access.values import Principal

    return Principal.operator()


class _local:
    """The services, built from the server's settings, for operator commands on the gateway host.

    The database must exist: a missing SQLite file is named and nothing is made (``gw admin db
    upgrade`` creates it). A ``dry_run`` writes nothing, not even a schema upgrade: on a database
    whose schema is behind it exits, saying to run ``gw admin db upgrade``.
    """

    def __init__(self, *, dry_run: bool = False) -> None:
        self.dry_run = dry_run

    def __enter__(self) -> Services:
        from gateway.cli.server.server_settings import load_settings, require_database
        from gateway.wiring import build_services

        settings = load_settings()
        require_database(settings)  # an admin command never creates the database (dry runs included)
        try:
            self.services = build_services(settings, upgrade=not self.dry_run)
        except GatewayError as exc:
            err_console.print(f"[red]error[/red]: {escape(str(exc))}")
            raise typer.Exit(exits.UNAVAILABLE) from exc
        return self.services

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.services.close()
        if isinstance(exc, GatewayError):
            err_console.print(f"[red]error[/red]: {escape(str(exc))}")
            raise typer.Exit(exits.for_status(_status(exc))) from exc


def _status(exc: GatewayError) -> int:
    from gateway.error_status import status_for

    return status_for(exc)[0]


local_services = _local  # the same, for the operator commands of other modules (accounting_admin)
