"""Who may do what: one table of actions and the least role each needs.

Roles per project rise viewer < member < lead; a site admin may do anything.
Reads of another project's objects answer NotFound, not Forbidden, so nobody
learns what exists outside their projects.
"""

from __future__ import annotations

from gateway.domain import ROLES, Principal
from gateway.errors import Forbidden, NotFound

# action -> least project role that allows it; None: site admins only.
ACTIONS: dict[str, str | None] = {
    "run.read": "viewer",  # runs, scripts, logs, timelines
    "run.submit": "member",
    "run.cancel.own": "member",
    "run.cancel.any": "lead",
    "dataset.read": "viewer",  # datasets of the project, and those shared with it (read-only)
    "dataset.register": "member",  # register a version of one of the project's datasets
    "dataset.share": "lead",  # let another project read one of the project's datasets
    "project.read": "viewer",  # the project, its queues and usage
    "audit.read": "lead",  # the project's audit events
    "site.admin": None,  # apply/export the site file, sync Slurm, the queue view, all audit, tokens of others
}


def rank(role: str | None) -> int:
    return ROLES.index(role) + 1 if role in ROLES else 0


def allowed(principal: Principal, action: str, project: str | None = None) -> bool:
    if action not in ACTIONS:
        raise KeyError(f"unknown action {action!r}")
    if principal.is_admin:
        return True
    least = ACTIONS[action]
    if least is None or project is None:
        return False
    return rank(principal.role(project)) >= rank(least)


def require(principal: Principal, action: str, project: str | None = None, *, hide: bool = False) -> None:
    """Raise unless ``principal`` may do ``action`` in ``project``.

    ``hide``: answer NotFound when the caller has no role at all in the
    project (reads of objects they may not know about).
    """
    if allowed(principal, action, project):
        return
    if hide and project is not None and principal.role(project) is None:
        raise NotFound("not found")
    least = ACTIONS[action]
    need = "a site admin" if least is None else f"at least {least} in project {project}"
    have = principal.role(project) if project else None
    raise Forbidden(f"{principal.user} may not {action}: it needs {need} (their role: {have or 'none'})")


def visible_projects(principal: Principal) -> list[str] | None:
    """Projects whose runs ``principal`` may read; None means all (a site admin)."""
    if principal.is_admin:
        return None
    return sorted(p for p, role in principal.roles.items() if rank(role) >= rank("viewer"))
