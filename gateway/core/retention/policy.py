"""A retention policy: how long a project's run files are kept, its space limit, who owns what is left.

The site file's ``retention`` section is the site default and each project's
``retention`` overrides it field by field (``effective``). A day count left
out (None) keeps those files forever: a site that writes no policy deletes
nothing. What a release needs is never deleted, whatever a policy says
(``core/retention/plan.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

OnLeave = Literal["keep", "lead", "expire"]
ON_LEAVE_HELP = (
    "keep (the files stay under the project, the ordinary rules apply), lead (the project's lead "
    "answers for them from then on), expire (the run directories go left_member_days after leaving)"
)
GIB = 1024**3

# The rules a deletion names (the audit event, the run's note, a dry run's list).
RULES = {
    "logs": "stdout/stderr of an ended run, logs_days after it ended",
    "outputs": "outputs no release uses, unreleased_outputs_days after the run ended",
    "failed-runs": "the run directory of a failed or cancelled run, failed_run_days after it ended",
    "member-left": "the run directory of a run whose submitter left the project (on_member_leave: expire)",
}


class RetentionSpec(BaseModel):
    """One retention policy (the site default, or a project's overrides of it)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    logs_days: Annotated[int, Field(ge=0, le=36_500)] | None = None
    unreleased_outputs_days: Annotated[int, Field(ge=0, le=36_500)] | None = None
    failed_run_days: Annotated[int, Field(ge=0, le=36_500)] | None = None
    space_limit_gb: Annotated[float, Field(gt=0, le=10_000_000)] | None = None
    space_warn_percent: Annotated[int, Field(ge=1, le=100)] = 80
    on_member_leave: OnLeave = "keep"
    left_member_days: Annotated[int, Field(ge=0, le=36_500)] = 30

    def overrides(self) -> dict[str, Any]:
        """The fields this spec sets (what a project's section says over the site default)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def deletes(self) -> bool:
        """Whether this policy lets a sweep delete anything at all."""
        days = (self.logs_days, self.unreleased_outputs_days, self.failed_run_days)
        return any(d is not None for d in days) or self.on_member_leave == "expire"

    @property
    def space_limit_bytes(self) -> int | None:
        """The space limit in bytes (None: no limit)."""
        return None if self.space_limit_gb is None else int(self.space_limit_gb * GIB)

    @property
    def space_warn_bytes(self) -> int | None:
        """Where the warning starts, in bytes (None: no limit)."""
        limit = self.space_limit_bytes
        return None if limit is None else limit * self.space_warn_percent // 100


def stored(default: RetentionSpec | None, projects: dict[str, RetentionSpec]) -> dict[str, Any]:
    """The policies as the site option ``retention`` keeps them (JSON-ready)."""
    return {
        "default": default.overrides() if default else {},
        "projects": {name: spec.overrides() for name, spec in sorted(projects.items()) if spec.overrides()},
    }


def effective(option: dict[str, Any] | None, project: str) -> RetentionSpec:
    """The policy that holds for ``project``: its overrides over the site default over the built-ins."""
    option = option or {}
    merged = {**(option.get("default") or {}), **((option.get("projects") or {}).get(project) or {})}
    return RetentionSpec.model_validate(merged)


def project_overrides(option: dict[str, Any] | None, project: str) -> RetentionSpec | None:
    """What ``project``'s own section says (None: nothing of its own)."""
    mine = ((option or {}).get("projects") or {}).get(project)
    return RetentionSpec.model_validate(mine) if mine else None


def site_default(option: dict[str, Any] | None) -> RetentionSpec | None:
    """The site default section (None: none written)."""
    mine = (option or {}).get("default")
    return RetentionSpec.model_validate(mine) if mine else None
