"""The retention policies as the site file set them (the site option ``retention``)."""

from __future__ import annotations

from typing import Any

from gateway.core.retention.policy import RetentionSpec, effective
from gateway.store.access.access import AccessStore

OPTION = "retention"


class Policies:
    """Each project's effective retention policy, read from the site option the site apply writes."""

    def __init__(self, access: AccessStore) -> None:
        self.access = access

    def option(self) -> dict[str, Any]:
        """The stored policies (the site default and each project's overrides)."""
        return dict(self.access.option(OPTION, {}) or {})

    def of(self, project: str) -> RetentionSpec:
        """``project``'s policy: its own section over the site default (nothing set: keep everything)."""
        return effective(self.option(), project)

    def all(self, projects: list[str]) -> dict[str, RetentionSpec]:
        """Each of ``projects``' policy, the option read once."""
        option = self.option()
        return {p: effective(option, p) for p in projects}
