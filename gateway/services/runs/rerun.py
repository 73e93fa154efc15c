"""Who a rerun runs as (issue 26): the owner by default, the caller only when asked for ("as me").

``rerun_identity`` decides it for a caller, a parent run and the changes
(``gateway.core.runs.rerun`` holds the rule); ``RunService.rerun_keyed``
then submits the derived run under that identity. Refusals say what would
be allowed instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.runs.rerun import OWNER_RERUN_FIELDS, command_text, fields_not_for_owner
from gateway.core.runs.values import Run
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import Forbidden, NotFound
from gateway.store.access.access import AccessStore


@dataclass(frozen=True)
class RerunIdentity:
    """Whose run a rerun is and who asked for it.

    ``runs_as``: the principal the run is admitted and recorded under (its OS user, quotas,
    ``submitter``); ``requested_by``: the caller when that is someone else (None: the owner's own
    rerun, or an "as me" rerun, whose run is the caller's); ``as_me``: the caller asked to run another
    person's run under their own identity; ``command``: what that runs (for its audit event)."""

    runs_as: Principal
    owner: str  # the parent run's submitter
    requested_by: str | None = None
    as_me: bool = False
    command: str | None = None

    def audit(self) -> dict[str, Any]:
        """What the rerun's audit event adds: on whose behalf it ran, or that it ran "as me" and what."""
        if self.requested_by is not None:
            return {"runs_as": self.runs_as.user, "requested_by": self.requested_by}
        if self.as_me:
            return {"as_me": True, "owner": self.owner, "runs_as": self.runs_as.user, "command": self.command}
        return {}


def rerun_identity(
    parent: Run,
    new_spec: RunSpec,
    changes: Sequence[dict[str, Any]],
    *,
    principal: Principal,
    access: AccessStore,
    as_me: bool = False,
) -> RerunIdentity:
    """The identity the rerun of ``parent`` by ``principal`` runs under.

    The owner's own rerun: the owner. Someone else's, by default: the owner, which needs
    ``run.rerun.any`` (a lead) and changes to :data:`OWNER_RERUN_FIELDS` only, and an owner who may
    still submit in the project. ``as_me``: the caller, under their own OS user (admission checks
    their right to submit). Raises Forbidden saying what would be allowed.
    """
    if principal.user == parent.submitter:
        return RerunIdentity(principal, principal.user)
    owner = parent.submitter
    if as_me:
        return RerunIdentity(principal, owner, as_me=True, command=command_text(new_spec))
    as_me_hint = (
        f"to run it under your own OS user instead, rerun it 'as me' (gw rerun --as-me, API as_me: true), "
        f"which runs {owner}'s command as you"
    )
    if not allowed(principal, "run.rerun.any", parent.project):
        raise Forbidden(
            f"run {parent.id} is {owner}'s: a rerun by someone else runs as {owner} ({parent.os_user}), "
            f"which needs lead in project {parent.project} (your role: "
            f"{principal.role(parent.project) or 'none'}); {as_me_hint}"
        )
    code = fields_not_for_owner(changes)
    if code:
        raise Forbidden(
            f"a rerun as {owner} (the run's owner) may change only "
            f"{', '.join(sorted(OWNER_RERUN_FIELDS))}; changing {', '.join(code)} would run code of your "
            f"choosing as {owner}; {as_me_hint}"
        )
    try:
        runs_as = access.principal(owner, source=principal.source)
        disabled = access.user(owner).disabled
    except NotFound:
        raise Forbidden(f"run {parent.id}'s owner {owner} no longer exists; {as_me_hint}") from None
    if disabled:
        raise Forbidden(f"run {parent.id}'s owner {owner} is disabled; {as_me_hint}")
    try:
        require(runs_as, "run.submit", new_spec.project)
    except (Forbidden, NotFound):
        raise Forbidden(
            f"run {parent.id}'s owner {owner} may no longer submit in project {new_spec.project}; "
            f"{as_me_hint}"
        ) from None
    return RerunIdentity(runs_as, owner, requested_by=principal.user)
