"""gw model ... and gw release ...: models, releases, aliases, protection policies, promotions, history.

A model is ``PROJECT/NAME``, a release ``PROJECT/NAME@VERSION``. ``gw release
create`` takes the artifact as a sha256 or a local file (hashed here). A
refused move (exit 5) lists what its policy still misses.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from typing import Annotated, Any

import typer

from gateway.cli import release_view
from gateway.cli.common import SHA256_HEX, JsonOpt, call, usage
from gateway.cli.output import console, print_json
from gateway.core import names
from gateway.core.releases.domain import (
    ADVISORY_SEVERITIES,
    ALIAS,
    ALIAS_HELP,
    ReleaseRef,
    parse_at,
    parse_release_ref,
)

model_app = typer.Typer(no_args_is_help=True, help="Registered models of a project.")
release_app = typer.Typer(no_args_is_help=True, help="Releases, aliases, policies, promotions and history.")
REQUEST_ID = re.compile(r"pr-[0-9a-f]{16}")
AliasOpt = Annotated[str, typer.Option("--alias", help=f"The alias ({ALIAS_HELP}).")]
Reason = Annotated[str, typer.Option("--reason", help="Why (recorded with the event).")]


def register(app: typer.Typer) -> None:
    """Add ``gw model`` and ``gw release`` to ``app``."""
    app.add_typer(model_app, name="model")
    app.add_typer(release_app, name="release")
    from gateway.cli import handoff_cmds  # gw release mirror-status (docs/handoff.md)

    handoff_cmds.add_release_commands(release_app)


def _ref(text: str, *, version: bool | None) -> ReleaseRef:
    try:
        return parse_release_ref(text, version=version)
    except ValueError as exc:
        usage(str(exc))


def _model_path(text: str) -> str:
    ref = _ref(text, version=False)
    return f"/models/{ref.project}/{ref.name}"


def _release(text: str) -> tuple[str, int]:
    ref = _ref(text, version=True)
    if ref.version is None:
        usage(f"{text!r}: name a release number (e.g. {ref.project}/{ref.name}@3), not latest")
    return f"/models/{ref.project}/{ref.name}", ref.version


def _alias(alias: str) -> str:
    if not ALIAS.fullmatch(alias):
        usage(f"alias {alias!r} is not valid: {ALIAS_HELP}")
    return alias


def _show(found: Any, as_json: bool, lines: Callable[[Any], Iterable[str]]) -> None:
    if as_json:
        print_json(found)
        return
    for line in lines(found):
        console.print(line)


# -- models -------------------------------------------------------------------------------------


@model_app.command("create")
def model_create(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    description: Annotated[str, typer.Option(help="What the model is.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Register a model in a project."""
    ref = _ref(model, version=False)
    body = {"project": ref.project, "name": ref.name, "description": description}
    _show(
        call("registry", "POST", "/models", body),
        as_json,
        lambda m: [f"registered model {m['ref']} ({m['id']})"],
    )


@model_app.command("list")
def model_list(
    project: Annotated[str | None, typer.Option(help="Only this project's models.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Models of your projects."""
    if project is not None and not names.NAME.fullmatch(project):
        usage(f"project {project!r} is not valid; use {names.NAME_HELP}")
    found = call("registry", "GET", "/models", params={"project": project})
    _show(found, as_json, lambda ms: [f"{m['ref']}  {m['description']}" for m in ms] or ["no models"])


@model_app.command("show")
def model_show(model: Annotated[str, typer.Argument(help="PROJECT/NAME")], as_json: JsonOpt = False) -> None:
    """A model: its releases, where its aliases point, its policies."""
    path = _model_path(model)
    found = {
        "model": call("registry", "GET", path),
        "releases": call("registry", "GET", f"{path}/releases"),
        "aliases": call("registry", "GET", f"{path}/aliases"),
        "policies": call("registry", "GET", f"{path}/policies"),
    }
    if as_json:
        print_json(found)
        return
    console.print(f"[bold]{found['model']['ref']}[/bold]  {found['model']['description']}")
    console.print(release_view.releases_table(found["releases"]))
    for a in found["aliases"]:
        console.print(f"{a['alias']} -> v{a['version'] or '-'} since {a['since']}")
    for p in found["policies"]:
        console.print(f"policy {p['alias']} ({p['scope']}): {policy_text(p)}", markup=False)


# -- releases -----------------------------------------------------------------------------------


@release_app.command("create")
def release_create(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    artifact: Annotated[str, typer.Option("--artifact", help="The artifact: its sha256, or a file here.")],
    run: Annotated[str | None, typer.Option(help="The run that wrote it (when several did).")] = None,
    notes: Annotated[str, typer.Option(help="Why this release.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Create the model's next release of an artifact of a succeeded run."""
    path = _model_path(model)
    if os.path.isfile(artifact):
        from gateway.adapters.files import sha256_file

        sha = sha256_file(artifact)[0]
    elif SHA256_HEX.fullmatch(artifact):
        sha = artifact.lower()
    else:
        usage(f"--artifact {artifact!r} is neither a file here nor a sha256 (64 hex digits)")
    body = {"artifact_sha256": sha, "run_id": run, "notes": notes}
    _show(
        call("registry", "POST", f"{path}/releases", body), as_json, lambda r: [f"created release {r['ref']}"]
    )


@release_app.command("list")
def release_list(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")], as_json: JsonOpt = False
) -> None:
    """Every release of a model."""
    found = call("registry", "GET", f"{_model_path(model)}/releases")
    if as_json:
        print_json(found)
    else:
        console.print(release_view.releases_table(found))


@release_app.command("show")
def release_show(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")], as_json: JsonOpt = False
) -> None:
    """One release: artifact, run, status events, alias moves (with --json also its evidence snapshot)."""
    path, version = _release(release)
    _show(call("registry", "GET", f"{path}/releases/{version}"), as_json, release_view.release_lines)


def _status(release: str, status: str, reason: str, as_json: bool) -> None:
    path, version = _release(release)
    if not reason.strip():
        usage("--reason is required: say why")
    found = call(
        "registry", "POST", f"{path}/releases/{version}/status", {"status": status, "reason": reason}
    )
    _show(found, as_json, lambda r: [f"{r['ref']} is {r['status']}"])


@release_app.command("deprecate")
def release_deprecate(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    reason: Reason = "",
    as_json: JsonOpt = False,
) -> None:
    """Mark a release deprecated (an event with a reason; leads)."""
    _status(release, "deprecated", reason, as_json)


@release_app.command("withdraw")
def release_withdraw(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    reason: Reason = "",
    as_json: JsonOpt = False,
) -> None:
    """Withdraw a release: it can no longer be promoted (an event with a reason; leads)."""
    _status(release, "withdrawn", reason, as_json)


@release_app.command("reactivate")
def release_reactivate(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    reason: Reason = "",
    as_json: JsonOpt = False,
) -> None:
    """Mark a deprecated or withdrawn release active again (an event with a reason; leads)."""
    _status(release, "active", reason, as_json)


# -- aliases, policies, promotions --------------------------------------------------------------


@release_app.command("promote")
def promote(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    alias: AliasOpt,
    reason: Reason = "",
    override: Annotated[
        bool, typer.Option(help="Stand in for a failed or missing gate (leads; --reason).")
    ] = False,
    request: Annotated[str | None, typer.Option(help="The promotion request whose approvals count.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Point an alias at a release, if its protection policy is met (exit 5 lists what is missing)."""
    path, version = _release(release)
    if override and not reason.strip():
        usage("--override needs --reason: say why the gate is overridden (it is recorded and audited)")
    if request is not None and not REQUEST_ID.fullmatch(request):
        usage(f"--request {request!r} is not a promotion request id (pr-...)")
    body = {"version": version, "reason": reason, "override": override, "request_id": request}
    found = call("registry", "POST", f"{path}/aliases/{_alias(alias)}", body)
    _show(found, as_json, lambda m: [release_view.move_line(m)])


@release_app.command("check")
def check(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    alias: AliasOpt,
    as_json: JsonOpt = False,
) -> None:
    """What moving an alias to a release would need, before it is moved: the policy in force, the
    gateway's gate, the approvals that count, every missing piece (exit 0 either way; nothing moves)."""
    ref = _ref(release, version=True)
    if ref.version is None:
        usage(f"{release!r}: name a release number (e.g. {ref.project}/{ref.name}@3), not latest")
    found = call("check_move", ref.project, ref.name, ref.version, _alias(alias))
    _show(found, as_json, release_view.check_lines)


@release_app.command("request-promotion")
def request_promotion(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    alias: AliasOpt,
    reason: Reason = "",
    as_json: JsonOpt = False,
) -> None:
    """Ask for an alias to point at a release; leads or reviewers approve or reject it."""
    path, version = _release(release)
    body = {"alias": _alias(alias), "version": version, "reason": reason}
    _show(call("registry", "POST", f"{path}/promotions", body), as_json, release_view.request_lines)


def _decide(request_id: str, decision: str, note: str, as_json: bool) -> None:
    if not REQUEST_ID.fullmatch(request_id):
        usage(
            f"{request_id!r} is not a promotion request id (pr-...); `gw release requests MODEL` lists them"
        )
    found = call("registry", "POST", f"/promotions/{request_id}/{decision}", {"note": note})
    _show(found, as_json, release_view.request_lines)


@release_app.command("approve")
def approve(
    request_id: Annotated[str, typer.Argument(help="pr-...")],
    note: Annotated[str, typer.Option(help="What you checked.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Approve a promotion request (not your own)."""
    _decide(request_id, "approve", note, as_json)


@release_app.command("reject")
def reject(
    request_id: Annotated[str, typer.Argument(help="pr-...")],
    note: Annotated[str, typer.Option(help="Why not.")] = "",
    as_json: JsonOpt = False,
) -> None:
    """Reject a promotion request (not your own)."""
    _decide(request_id, "reject", note, as_json)


@release_app.command("requests")
def requests(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    state: Annotated[str | None, typer.Option(help="open, approved, rejected, promoted")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A model's promotion requests and their decisions, newest first."""
    found = call("registry", "GET", f"{_model_path(model)}/promotions", params={"state": state})
    _show(
        found,
        as_json,
        lambda qs: [line for q in qs for line in release_view.request_lines(q)] or ["no requests"],
    )


@release_app.command("policy")
def policy(
    target: Annotated[str, typer.Argument(help="PROJECT/NAME (one model) or PROJECT (its default)")],
    alias: AliasOpt,
    roles: Annotated[
        list[str] | None, typer.Option("--role", help="Least role that may move it (repeat).")
    ] = None,
    approvals: Annotated[int, typer.Option(help="Approvers needed besides the requester.")] = 0,
    gate_suite: Annotated[
        str | None,
        typer.Option(
            help="PROJECT/NAME of a suite whose gate, decided by the gateway at the move, must pass."
        ),
    ] = None,
    gate_version: Annotated[
        str | None,
        typer.Option(
            help="The suite version the gate is decided on: a number, or latest. Default: the newest now."
        ),
    ] = None,
    gate_baseline: Annotated[
        str | None,
        typer.Option(help="The alias whose release is the gate's baseline. Default: --alias itself."),
    ] = None,
    allow_imported_results: Annotated[
        bool,
        typer.Option(
            "--allow-imported-results",
            help="Let the gate count eval results imported with gw eval import (default: it does not).",
        ),
    ] = False,
    advisory_rule: Annotated[
        bool,
        typer.Option(
            "--no-critical-advisories",
            help="Refuse a move while the release's training environment has a known CRITICAL "
            "advisory in the site's OSV directory (see --advisory-severity for another least severity).",
        ),
    ] = False,
    advisory_severity: Annotated[
        str | None,
        typer.Option(
            help="The advisory rule's least severity that refuses a move: LOW, MODERATE, HIGH or CRITICAL "
            "(sets the rule).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Protect an alias: who may move it, how many approvals, which gate must pass, whether a known
    advisory in the training environment refuses it (leads)."""
    if "/" in target:
        path = f"{_model_path(target)}/policies/{_alias(alias)}"
    elif names.NAME.fullmatch(target):
        path = f"/projects/{target}/alias-policies/{_alias(alias)}"
    else:
        usage(f"{target!r}: give PROJECT/NAME for a model or PROJECT for the project's default")
    body: dict[str, Any] = {"roles": roles or ["member"], "approvals": approvals, "gate_suite": gate_suite}
    if gate_version is not None:
        if gate_version != "latest" and not re.fullmatch(r"v?[1-9][0-9]{0,8}", gate_version):
            usage(f"--gate-version {gate_version!r}: a version number (3 or v3) or latest")
        body["gate_version"] = gate_version if gate_version == "latest" else int(gate_version.lstrip("v"))
    if gate_baseline is not None:
        body["gate_baseline"] = _alias(gate_baseline)
    if allow_imported_results:
        body["allow_imported_results"] = True
    if advisory_severity is not None:
        severity = advisory_severity.upper()
        if severity not in ADVISORY_SEVERITIES:
            usage(f"--advisory-severity {advisory_severity!r}: one of {', '.join(ADVISORY_SEVERITIES)}")
        body["advisory_severity"] = severity
    elif advisory_rule:
        body["advisory_severity"] = "CRITICAL"
    found = call("registry", "PUT", path, body)
    _show(found, as_json, lambda p: [f"{p['alias']} protected ({p['scope']}): {policy_text(p)}"])


def policy_text(p: dict[str, Any]) -> str:
    """A policy in words: roles, approvals, and the gate with its version and baseline."""
    gate = "no gate"
    if p.get("gate_suite"):
        version = p.get("gate_version")
        at = f"@{version}" if isinstance(version, int) else "@latest"
        gate = f"gate {p['gate_suite']}{at} against {p.get('gate_baseline') or p['alias']}'s release"
        if p.get("allow_imported_results"):
            gate += " (imported results count)"
    advisory = (
        f", no known {p['advisory_severity']}-or-worse advisory in the training environment"
        if p.get("advisory_severity")
        else ""
    )
    return f"roles {', '.join(p['roles'])}, {p['approvals']} approval(s), {gate}{advisory}"


@release_app.command("history")
def history(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    alias: Annotated[str | None, typer.Option("--alias", help="Only this alias.")] = None,
    at: Annotated[
        str | None, typer.Option(help="Also where aliases stood then (ISO 8601, UTC by default).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Every alias move of a model; with --at, which release each alias pointed at then."""
    if alias is not None:
        _alias(alias)
    if at is not None:
        try:
            at = parse_at(at).isoformat()
        except ValueError as exc:
            usage(str(exc))
    found = call("registry", "GET", f"{_model_path(model)}/history", params={"alias": alias, "at": at})
    _show(found, as_json, release_view.history_lines)
