"""Who may do what: one table of actions and the least role each needs.

Roles per project rise viewer < member < lead; a site admin may do anything.
A ``reviewer`` stands beside that ladder: it has a viewer's rank (it reads
what a viewer reads, never submits) plus the grants of ``ROLE_GRANTS``
(recording evaluation reviews and deciding promotion requests, which otherwise need a lead).
Reads of another project's objects answer NotFound, not Forbidden, so nobody
learns what exists outside their projects. Every service call names its
caller: there is no "no caller" that skips the checks (operator commands on
the gateway host pass ``Principal.operator()``, a site admin).
"""

from __future__ import annotations

from gateway.core.access.values import Principal
from gateway.core.projects import ROLES
from gateway.errors import Forbidden, NotFound, Unauthorized

# action -> least project role that allows it; None: site admins only.
ACTIONS: dict[str, str | None] = {
    "run.read": "viewer",  # runs, scripts, logs, timelines
    "run.submit": "member",
    "run.cancel.own": "member",
    "run.cancel.any": "lead",
    # rerun another person's run as its owner (their OS user; the caller recorded as requested_by)
    "run.rerun.any": "lead",
    "dataset.read": "viewer",  # datasets of the project, and those shared with it (read-only)
    "dataset.register": "member",  # register a version of one of the project's datasets
    "dataset.share": "lead",  # let another project read one of the project's datasets
    "env.read": "viewer",  # the project's training environments, their packages and diffs
    "env.register": "member",  # register a version of one of the project's environments (and build it)
    "project.read": "viewer",  # the project, its queues and usage
    "audit.read": "lead",  # the project's audit events
    "eval.read": "viewer",  # eval suites, eval runs and results, gate decisions, reviews
    "eval.suite.register": "member",  # register a version of one of the project's eval suites
    # who may register new versions of a suite, whether self-reviews count for its gates
    "eval.suite.settings": "lead",
    "eval.run": "member",  # run a suite on an artifact (an ordinary run: run.submit is checked too)
    "eval.import": "member",  # import lm-eval results made elsewhere (origin 'imported')
    "eval.gate": "member",  # record a gate decision on one of the project's eval results
    "eval.review": "lead",  # record a human review (and a reviewer: ROLE_GRANTS)
    "release.read": "viewer",  # models, releases, aliases and their history, policies, promotion requests
    "release.create": "member",  # register a model, create a release of one of the project's artifacts
    "release.promote": "member",  # move an alias (its protection policy may ask for more)
    "release.request": "member",  # ask for an alias to be moved (a promotion request)
    "release.approve": "lead",  # approve or reject a promotion request (and a reviewer: ROLE_GRANTS)
    "release.status": "lead",  # mark a release deprecated, withdrawn or active again (with a reason)
    "release.policy": "lead",  # protect an alias: who may move it, approvals, which gate must pass
    "release.override": "lead",  # move an alias past a failed or missing gate, with a reason (audited)
    "evidence.export": "viewer",  # export an evidence bundle (audit entries only where audit.read holds)
    "report.read": "viewer",
    "retention.read": "viewer",  # the project's holds, run-directory sizes, what expired and why
    # put a hold on a run, a model or the project (nothing under it is deleted), or lift one
    "retention.hold": "lead",  # usage, cost and efficiency reports over the project's accounting records
    "site.admin": None,  # apply/export the site file, sync Slurm, the queue view, all audit, tokens of others
}


# A role's place on the ladder; a reviewer ranks as a viewer.
RANKS = {"viewer": 1, "reviewer": 1, "member": 2, "lead": 3}
# Actions a role may do beyond its rank.
ROLE_GRANTS: dict[str, frozenset[str]] = {"reviewer": frozenset({"eval.review", "release.approve"})}
assert set(RANKS) == set(ROLES), "every role has a rank"


def rank(role: str | None) -> int:
    """How much ``role`` may do: its place on the ladder (:data:`RANKS`); 0 for no role or an unknown one."""
    return RANKS.get(role or "", 0)


def role_allows(role: str | None, action: str) -> bool:
    """Whether a project ``role`` (None: no role) may do ``action`` in its project."""
    least = ACTIONS[action]
    if least is None or role is None:
        return False
    return rank(role) >= rank(least) or action in ROLE_GRANTS.get(role, frozenset())


def allowed(principal: Principal, action: str, project: str | None = None) -> bool:
    """Whether ``principal`` may do ``action`` in ``project``: a site admin may do anything, others need
    at least the role :data:`ACTIONS` names there. False without a principal. KeyError for an unknown
    action (a programming error).
    """
    if action not in ACTIONS:
        raise KeyError(f"unknown action {action!r}")
    if not isinstance(principal, Principal):
        return False  # no caller named: nothing is allowed
    if principal.is_admin:
        return True
    if project is None:
        return False
    return role_allows(principal.role(project), action)


def require(principal: Principal, action: str, project: str | None = None, *, hide: bool = False) -> None:
    """Raise unless ``principal`` may do ``action`` in ``project``.

    ``hide``: answer NotFound when the caller has no role at all in the
    project (reads of objects they may not know about).
    """
    if allowed(principal, action, project):
        return
    if not isinstance(principal, Principal):
        raise Unauthorized(
            f"{action} was called without a caller; every call names one "
            "(operator commands pass Principal.operator())"
        )
    if hide and project is not None and principal.role(project) is None:
        raise NotFound("not found")
    least = ACTIONS[action]
    need = "a site admin" if least is None else f"at least {least} in project {project}"
    granted = sorted(role for role, actions in ROLE_GRANTS.items() if action in actions)
    if least is not None and granted:
        need += f" (or the {' or '.join(granted)} role)"
    have = principal.role(project) if project else None
    raise Forbidden(f"{principal.user} may not {action}: it needs {need} (their role: {have or 'none'})")


def visible_projects(principal: Principal) -> list[str] | None:
    """Projects whose runs ``principal`` may read; None means all (a site admin)."""
    if principal.is_admin:
        return None
    return sorted(p for p, role in principal.roles.items() if rank(role) >= rank("viewer"))
