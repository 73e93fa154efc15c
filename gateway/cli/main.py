"""gw: submit, watch and cancel runs through the gateway API; `gw serve` runs the gateway.

Exit status (``gateway.cli.exits``): 0 ok, 2 bad input, 4 not found, 5 conflict,
69 server/Slurm/database unavailable; ``gw wait``: 0 succeeded, 1 failed,
3 cancelled, 124 timed out; ``gw eval gate``: 0 pass, 1 fail, 3 not comparable.
"""

from __future__ import annotations

import typer

from gateway.cli import common, exits
from gateway.cli.common import JsonOpt
from gateway.cli.lazy import Lazy, LazyGroup
from gateway.cli.output import console, health_headline, health_lines, print_json
from gateway.cli.runs import run_cmds, submit_cmds
from gateway.client.errors import ApiError


def _in(module: str, help: str, *, group: bool = False, hook: str = "register") -> Lazy:
    return Lazy(f"gateway.cli.{module}", help, group=group, hook=hook)


def _admin(module: str, help: str, *, group: bool = False) -> Lazy:
    return _in(module, help, group=group, hook="register_admin")


class Gw(LazyGroup):
    """``gw``: the run commands (``gateway.cli.runs``) and ``gw health``, then the other modules' (imported
    when used)."""

    lazy = {
        "serve": _in(
            "server.serve_cmds",
            "Run the gateway: the REST API, the web pages (/ui) and the periodic Slurm refresh.",
        ),
        "quota": _in(
            "accounting.usage_cmds", "Usage against the caps: GPUs now, GPU-hours this month, jobs in queue."
        ),
        "queue": _in(
            "accounting.usage_cmds",
            "The admin's view: per partition nodes, running and pending jobs; per project usage.",
        ),
        "audit": _in("accounting.usage_cmds", "The audit log (admins: everything; leads: their projects)."),
        "sbatch": _in(
            "runs.sbatch_cmd",
            "sbatch, through the gateway: gw sbatch [OPTIONS] [SCRIPT [ARGS]], reading #SBATCH lines too.",
        ),
        "cost": _in(
            "accounting.accounting_cmds",
            "A run's cost: each accounting record of its attempts (a Slurm requeue is one), and the totals.",
        ),
        "trace": _in(
            "lineage.data_cmds",
            "Where a file, run, eval result or dataset version came from, and what was made from it"
            " (for a file:\ndown to its releases and the aliases that point at them).",
        ),
        "compare": _in(
            "lineage.data_cmds",
            "Two runs side by side: params that differ, dataset versions, metrics, code and environment.",
        ),
        "evidence": _in(
            "evidence.evidence_cmds",
            "Export the evidence bundle of a run, release or file (evidence.json, index.html, manifest.json),"
            "\nor check one: `gw evidence verify BUNDLE [--public-key KEY]`.",
        ),
        "report": _in(
            "accounting.report_cmds",
            "GPU-hours, CPU-hours, cost, waits, the share spent on failed attempts, GPU utilisation and idle"
            "\nGPU-hours, with the rate versions that priced them; storage: run-directory bytes per project,"
            " user"
            "\nor run, against the space limit, growth, and what the next sweep frees.",
        ),
        "telemetry": _in(
            "accounting.telemetry_cmds",
            "Each attempt's GPUs: utilisation, peak memory, energy, idle fraction, idle GPU-hours.",
        ),
        "tasks": _in(
            "runs.task_cmds",
            "A sweep's tasks, one a line: index, state, exit, elapsed, node, its sweep point, final metrics.",
        ),
        "token": _in("access.token_cmds", "Your API tokens.", group=True),
        "retention": _in(
            "retention.retention_cmds", "Retention: holds, and what expired of a run.", group=True
        ),
        "dataset": _in("lineage.data_cmds", "Datasets: versions registered by content.", group=True),
        "env": _in(
            "envs.env_cmds",
            "Training environments: locked venvs, images and module lists, versioned.",
            group=True,
        ),
        "eval": _in("eval.eval_cmds", "Evaluation: suites, eval runs, results, gates, reviews.", group=True),
        "model": _in("releases.release_cmds", "Registered models of a project.", group=True),
        "release": _in(
            "releases.release_cmds", "Releases, aliases, policies, promotions and history.", group=True
        ),
        "handoff": _in("handoff.handoff_cmds", "MLflow mirror jobs and webhook deliveries.", group=True),
        "poc": _in("poc.poc_cmds", "The acceptance scenarios as one command (docs/poc.md).", group=True),
    }


class Admin(LazyGroup):
    """``gw admin``: the operator commands, all in other modules (imported when used)."""

    lazy = {
        "apply": _admin(
            "server.admin_cmds",
            "Make the gateway (and Slurm's associations) match a site file; prints each change.",
        ),
        "export": _admin(
            "server.admin_cmds", "Write the current users, projects, members, queues and caps as a site file."
        ),
        "sync-slurm": _admin(
            "server.admin_cmds", "Push the projects' caps to Slurm accounts and associations (sacctmgr)."
        ),
        "token": _admin(
            "server.admin_cmds",
            "Issue a token for USER on the gateway host (bootstrap: no token needed);"
            " prints the secret once.",
        ),
        "ssh-check": _admin(
            "server.admin_cmds",
            "Log in to the submit host as the service user and as each mapped OS user; exit 69 if any fails.",
        ),
        "db": _admin("server.serve_cmds", "The gateway's database.", group=True),
        "audit": _admin("server.admin_cmds", "The audit log, on the gateway host.", group=True),
        "evidence-key": _admin(
            "server.admin_cmds", "The site key that signs evidence bundles (Ed25519).", group=True
        ),
        "accounting": _admin(
            "server.accounting_admin", "Accounting: the cluster's sacct records.", group=True
        ),
        "retention": _admin("server.retention_admin", "Retention: the sweep of run files.", group=True),
    }


app = typer.Typer(cls=Gw, no_args_is_help=True, add_completion=False, help=__doc__.split("\n\n")[0])
admin = typer.Typer(cls=Admin, no_args_is_help=True, help="Operator commands (run on the gateway host).")
app.add_typer(admin, name="admin")

# -- runs: their commands are in gateway.cli.runs, registered here in gw --help's order ----------

for _command in (
    submit_cmds.submit,
    run_cmds.runs,
    run_cmds.show,
    run_cmds.cancel,
    submit_cmds.rerun,
    run_cmds.logs,
    run_cmds.wait,
):
    app.command()(_command)


@app.command()
def health(as_json: JsonOpt = False) -> None:
    """Is the gateway up, and can it reach its database and Slurm?"""
    client = common.client()
    try:
        report = client.health()
    except ApiError as exc:
        common.fail(exc)
    if as_json:
        print_json(report)
    else:
        console.print(health_headline(client.settings.url, report), markup=False, soft_wrap=True)
        for line in health_lines(report):
            console.print(line, markup=False)
    if report.get("status") != "ok":
        raise typer.Exit(exits.UNAVAILABLE)


if __name__ == "__main__":
    app()
