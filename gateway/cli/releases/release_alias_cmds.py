"""gw release promote, check, request-promotion, approve, reject, requests, policy and history: an
alias, its protection policy and the promotions that move it (``release_cmds`` adds them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any

import typer

from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.releases import release_view
from gateway.cli.releases.release_args import (
    REQUEST_ID,
    AliasOpt,
    Reason,
    alias_arg,
    model_path,
    release_path,
    release_ref,
    show,
)
from gateway.core import names
from gateway.core.releases.domain import ADVISORY_SEVERITIES, parse_at


def add_release_commands(release_app: typer.Typer) -> None:
    """Add the alias, policy, promotion and history commands to ``gw release``."""
    release_app.command("promote")(promote)
    release_app.command("check")(check)
    release_app.command("request-promotion")(request_promotion)
    release_app.command("approve")(approve)
    release_app.command("reject")(reject)
    release_app.command("requests")(requests)
    release_app.command("policy")(policy)
    release_app.command("history")(history)


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
    path, version = release_path(release)
    if override and not reason.strip():
        usage("--override needs --reason: say why the gate is overridden (it is recorded and audited)")
    if request is not None and not REQUEST_ID.fullmatch(request):
        usage(f"--request {request!r} is not a promotion request id (pr-...)")
    body = {"version": version, "reason": reason, "override": override, "request_id": request}
    found = call("registry", "POST", f"{path}/aliases/{alias_arg(alias)}", body)
    show(found, as_json, lambda m: [release_view.move_line(m)])


def check(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    alias: AliasOpt,
    as_json: JsonOpt = False,
) -> None:
    """What moving an alias to a release would need, before it is moved: the policy in force, the
    gateway's gate, the approvals that count, every missing piece (exit 0 either way; nothing moves)."""
    ref = release_ref(release, version=True)
    if ref.version is None:
        usage(f"{release!r}: name a release number (e.g. {ref.project}/{ref.name}@3), not latest")
    found = call("check_move", ref.project, ref.name, ref.version, alias_arg(alias))
    show(found, as_json, release_view.check_lines)


def request_promotion(
    release: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION")],
    alias: AliasOpt,
    reason: Reason = "",
    as_json: JsonOpt = False,
) -> None:
    """Ask for an alias to point at a release; leads or reviewers approve or reject it."""
    path, version = release_path(release)
    body = {"alias": alias_arg(alias), "version": version, "reason": reason}
    show(call("registry", "POST", f"{path}/promotions", body), as_json, release_view.request_lines)


def _decide(request_id: str, decision: str, note: str, as_json: bool) -> None:
    if not REQUEST_ID.fullmatch(request_id):
        usage(
            f"{request_id!r} is not a promotion request id (pr-...); `gw release requests MODEL` lists them"
        )
    found = call("registry", "POST", f"/promotions/{request_id}/{decision}", {"note": note})
    show(found, as_json, release_view.request_lines)


RequestArg = Annotated[str, typer.Argument(help="pr-...")]


def _decision(decision: str, note_help: str, doc: str) -> Callable[..., None]:
    """The command that records ``decision`` (approve or reject) on a promotion request, with a note."""

    def command(
        request_id: RequestArg,
        note: str = typer.Option("", help=note_help),  # a default, not Annotated: its help is the caller's
        as_json: JsonOpt = False,
    ) -> None:
        _decide(request_id, decision, note, as_json)

    command.__doc__ = doc
    return command


approve = _decision("approve", "What you checked.", "Approve a promotion request (not your own).")
reject = _decision("reject", "Why not.", "Reject a promotion request (not your own).")


def requests(
    model: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    state: Annotated[str | None, typer.Option(help="open, approved, rejected, promoted")] = None,
    as_json: JsonOpt = False,
) -> None:
    """A model's promotion requests and their decisions, newest first."""
    found = call("registry", "GET", f"{model_path(model)}/promotions", params={"state": state})
    show(
        found,
        as_json,
        lambda qs: [line for q in qs for line in release_view.request_lines(q)] or ["no requests"],
    )


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
        path = f"{model_path(target)}/policies/{alias_arg(alias)}"
    elif names.NAME.fullmatch(target):
        path = f"/projects/{target}/alias-policies/{alias_arg(alias)}"
    else:
        usage(f"{target!r}: give PROJECT/NAME for a model or PROJECT for the project's default")
    body: dict[str, Any] = {"roles": roles or ["member"], "approvals": approvals, "gate_suite": gate_suite}
    if gate_version is not None:
        if gate_version != "latest" and not re.fullmatch(r"v?[1-9][0-9]{0,8}", gate_version):
            usage(f"--gate-version {gate_version!r}: a version number (3 or v3) or latest")
        body["gate_version"] = gate_version if gate_version == "latest" else int(gate_version.lstrip("v"))
    if gate_baseline is not None:
        body["gate_baseline"] = alias_arg(gate_baseline)
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
    show(found, as_json, lambda p: [f"{p['alias']} protected ({p['scope']}): {policy_text(p)}"])


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
        alias_arg(alias)
    if at is not None:
        try:
            at = parse_at(at).isoformat()
        except ValueError as exc:
            usage(str(exc))
    found = call("registry", "GET", f"{model_path(model)}/history", params={"alias": alias, "at": at})
    show(found, as_json, release_view.history_lines)
