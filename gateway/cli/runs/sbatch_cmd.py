"""``gw sbatch``: a real sbatch script, as it is, through the gateway.

The translation is ``gateway.core.sbatch.options`` (pure); this module reads
the script (a file, ``--wrap``, or stdin), fills the project when the user
has one, submits, and prints what sbatch prints: ``Submitted batch job N``
on stdout (the run id on stderr), or ``N`` (``N;cluster``) with
``--parsable``. Errors from the server name the option and the ``#SBATCH``
line a field came from.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from gateway.cli import common, exits
from gateway.cli.output import console, err_console, state_text
from gateway.cli.runs.waiting import wait_for
from gateway.client.errors import ApiError
from gateway.errors import SpecError, SpecIssue

if TYPE_CHECKING:
    from gateway.client.api import GatewayClient
    from gateway.core.sbatch.options import SbatchRequest

STDIN_MAX_BYTES = 1 << 20  # a batch script on stdin, like a script file (gateway.adapters.files)


def register(app: typer.Typer) -> None:
    """Add ``gw sbatch`` to ``app``."""

    @app.command(
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []},
    )
    def sbatch(ctx: typer.Context) -> None:
        """sbatch, through the gateway: gw sbatch [OPTIONS] [SCRIPT [ARGS]], reading #SBATCH lines too."""
        from gateway.core.sbatch.options import USAGE

        args = list(ctx.args)
        if args in (["-h"], ["--help"], ["--usage"]):
            console.print(ctx.get_help())
            console.print(
                f"Usage: {USAGE}\nSee docs/sbatch.md for the options and the few it refuses.", markup=False
            )
            raise typer.Exit(exits.OK)
        if "--each" in _options_of(args):  # gw's own: each word after the options is a script
            _each(args)
        args, environment = _environment_option(args)
        request = _translate(args)
        if environment is not None:  # gw's own option: the registered environment the job runs in
            request.spec["environment"] = environment
        _warn(request)
        client = common.client()
        if request.test_only:
            _test_only(client, request)
        try:
            run = client.submit(request.spec)
        except ApiError as exc:
            _fail(exc, request)
        job_id = run.get("job_id")
        if request.parsable:
            console.print(f"{job_id};{request.cluster}" if job_id and request.cluster else job_id or "")
        elif job_id:
            print(f"Submitted batch job {job_id}")  # exactly sbatch's line: scripts read it with awk
        if not request.quiet:
            note = "" if job_id else ": Slurm did not confirm the job yet"
            err_console.print(
                f"run {run['id']} ({state_text(run['state'])}){note}  watch: gw show {run['id']}"
            )
        if request.wait:
            raise typer.Exit(wait_for(client, run["id"], timeout_s=None, poll_s=2.0, quiet=True))


def _environment_option(args: list[str]) -> tuple[list[str], str | None]:
    """``--environment REF`` (or ``=REF``) among gw sbatch's options, before the script: not an sbatch
    option, so it is taken out here (docs/environments.md); the rest, and REF (the last one given)."""
    from gateway.core.lineage.dataset_ref import parse_dataset_ref
    from gateway.core.sbatch.scan import scan

    found: list[tuple[int, int, str | None]] = []  # (start, length, value) of each occurrence
    i = 0
    while i < len(args):
        if args[i] == "--environment":
            found.append((i, 2, args[i + 1] if i + 1 < len(args) else None))
            i += 2
        elif args[i].startswith("--environment="):
            found.append((i, 1, args[i].partition("=")[2]))
            i += 1
        else:
            i += 1
    if not found:
        return args, None
    taken = {j for start, length, _ in found for j in range(start, start + length)}
    kept = [j for j in range(len(args)) if j not in taken]
    _, end = scan([args[j] for j in kept], "option ", [], stop=True)
    script_at = kept[end] if end < len(kept) else len(args)
    mine = [(start, length, value) for start, length, value in found if start < script_at]
    if not mine:
        return args, None
    start, _, environment = mine[-1]
    if environment is None:
        common.usage("--environment needs a value: [project/]name@version")
    try:
        parse_dataset_ref(environment)
    except ValueError as exc:
        common.usage(f"--environment: {str(exc).replace('dataset', 'environment')}")
    drop = {j for s0, n, _ in mine for j in range(s0, s0 + n)}
    return [a for j, a in enumerate(args) if j not in drop], environment


def _warn(request: SbatchRequest) -> None:
    """What sbatch takes but is likely a slip (a ``--mail-user`` that is no mail address), on stderr;
    ``--quiet`` keeps it quiet, as sbatch -Q keeps all but errors."""
    from gateway.core.spec.slurm_fields import mail_user_warning

    warning = mail_user_warning(request.spec.get("mail_user"))
    if warning and not request.quiet:
        err_console.print(f"gw sbatch: warning: {warning}", markup=False, highlight=False)


def _test_only(client: GatewayClient, request: SbatchRequest) -> None:
    """``--test-only``: the gateway's checks and Slurm's own ``sbatch --test-only``, nothing queued;
    Slurm's answer on stderr, as sbatch prints it (``sbatch: Job N to start at ...``)."""
    try:
        check = client.check(request.spec, slurm_test=True)
    except ApiError as exc:
        _fail(exc, request)
    for line in (check.get("slurm_test") or "").splitlines():
        print(f"sbatch: {line}", file=sys.stderr)  # one line, unwrapped: scripts read it
    if not request.quiet:
        hours = f", at most {check['gpu_hours']:g} GPU-hours" if check["gpus"] else ""
        err_console.print(
            f"gw: admitted to queue {check['queue']} as {check['os_user']}: time limit "
            f"{check['walltime_min']} min ({check['walltime_source']}){hours}; nothing submitted",
            markup=False,
            highlight=False,
        )
    raise typer.Exit(exits.OK)


def _options_of(args: list[str]) -> list[str]:
    from gateway.core.sbatch.options import split_gw_sbatch_args

    return split_gw_sbatch_args(args)[0]


def _each(args: list[str]) -> None:
    """``gw sbatch [OPTIONS] --each SCRIPT...``: every script, with the same options and its own
    #SBATCH lines, submitted as one batch (one request, all or none); sbatch's line for each."""
    from gateway.cli.runs.batch_view import batch_refused, show_batch
    from gateway.core.sbatch.options import split_gw_sbatch_args

    options, first, rest = split_gw_sbatch_args(args)
    options = [a for a in options if a != "--each"]
    if first is None:
        common.usage(
            "--each: give the batch scripts after the options (gw sbatch [OPTIONS] --each A.sh B.sh)"
        )
    paths = [first, *rest]
    requests = [_translate_parts(options, path, [], each=True) for path in paths]
    if any(r.test_only or r.wait for r in requests):
        common.usage("--each submits a batch: --test-only and --wait are for one script")
    client = common.client()
    try:
        answer = client.submit_batch([{"spec": r.spec} for r in requests])
    except ApiError as exc:
        _name_fields(exc.body.get("items", []) if isinstance(exc.body, dict) else [], requests)
        batch_refused(exc, paths)
    _name_fields(answer["items"], requests)
    code = show_batch(answer, paths, as_json=False, parsable=requests[0].parsable, sbatch=True)
    raise typer.Exit(code)


def _name_fields(items: list[dict], requests: list[SbatchRequest]) -> None:
    """Each item's field issues named by the option and #SBATCH line of its own script."""
    for item in items:
        error = item.get("error") or {}
        if isinstance(error.get("detail"), list):
            for issue in error["detail"]:
                loc = issue.get("loc", [])
                path = ".".join(str(p) for p in loc[4:])
                if path:
                    issue["loc"] = [*loc[:4], requests[item["index"]].where(path)]


def _translate(args: list[str]) -> SbatchRequest:
    from gateway.core.sbatch.options import split_gw_sbatch_args

    options, script_path, script_args = split_gw_sbatch_args(args)
    return _translate_parts(options, script_path, script_args)


def _translate_parts(
    options: list[str], script_path: str | None, script_args: list[str], *, each: bool = False
) -> SbatchRequest:
    from gateway.adapters.files import read_text
    from gateway.core.sbatch.options import USAGE, sbatch_to_spec, wants_wrap

    try:
        if wants_wrap(options):
            text, name = None, None
            script_args = [a for a in ([script_path] if script_path else []) + script_args]
        elif script_path is not None:
            text, name = read_text(Path(script_path), what="batch script"), Path(script_path).name
        elif sys.stdin.isatty():
            common.usage(f"no batch script given; use: {USAGE}")
        else:
            data = sys.stdin.buffer.read(STDIN_MAX_BYTES + 1)
            if len(data) > STDIN_MAX_BYTES:
                common.usage(f"the batch script on stdin is over {STDIN_MAX_BYTES} bytes")
            text, name = data.decode("utf-8", errors="replace"), None
        environ = dict(os.environ)
        default_project = _default_project()
        if default_project:  # GW_PROJECT, else `project` in the gw config file
            environ["GW_PROJECT"] = default_project
        try:
            return sbatch_to_spec(
                options, text, script_name=name, cwd=os.getcwd(), environ=environ, script_args=script_args
            )
        except SpecError as exc:
            if not any(i.path == "account" for i in exc.issues):
                raise
            projects = _my_projects()
            if len(projects) == 1:  # like sbatch's default account: the one project there is
                environ["GW_PROJECT"] = projects[0]
                return sbatch_to_spec(
                    options, text, script_name=name, cwd=os.getcwd(), environ=environ, script_args=script_args
                )
            mine = ", ".join(projects) or "none (ask a project lead to add you)"
            hint = SpecIssue(
                "account",
                f"no project given; yours: {mine}. Pick one with -A PROJECT (or #SBATCH -A PROJECT), "
                'or set a default: project = "PROJECT" in your gw config file '
                "(~/.config/gw/config.toml, or GW_CONFIG), or GW_PROJECT=PROJECT",
            )
            raise SpecError([hint if i.path == "account" else i for i in exc.issues], "gw sbatch") from exc
    except SpecError as exc:
        if each:  # one of several scripts: say which
            exc = SpecError(exc.issues, f"{script_path} (gw sbatch --each)", exc.location, exc.what)
        common.spec_error(exc)


def _default_project() -> str | None:
    """``GW_PROJECT``, else the config file's ``project``; a config file that does not load is
    reported by the request that needs it, not here."""
    from gateway.client.settings import ClientSettings, ClientSettingsError

    try:
        return ClientSettings.load().project
    except ClientSettingsError:
        return os.environ.get("GW_PROJECT") or None


def _my_projects() -> list[str]:
    client: GatewayClient = common.client()
    try:
        return sorted(p["name"] for p in client.projects())
    except ApiError as exc:
        common.fail(exc)


def _fail(exc: ApiError, request: SbatchRequest) -> None:
    """The API's refusal, with each field named by the option and #SBATCH line that set it."""
    if isinstance(exc.detail, list):
        for issue in exc.detail:
            path = ".".join(str(p) for p in issue.get("loc", [])[1:])
            if path:
                issue["loc"] = [issue["loc"][0], request.where(path)]
    common.fail(exc)
