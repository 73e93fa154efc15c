"""Projects as their members see them: which ones a caller may read, and one project's details."""

from __future__ import annotations

from gateway.core.access.policy import allowed, require
from gateway.core.access.values import Principal
from gateway.core.projects import Project
from gateway.store.access.access import AccessStore


class ProjectService:
    def __init__(self, access: AccessStore) -> None:
        self.access = access

    def visible(self, principal: Principal) -> list[Project]:
        """The projects ``principal`` has a role in (every project for a site admin), by name."""
        return [p for p in self.access.projects() if allowed(principal, "project.read", p.name)]

    def get(self, principal: Principal, name: str) -> Project:
        """One project with its caps, members and queues; NotFound unless the caller has a role in it."""
        require(principal, "project.read", name, hide=True)
        return self.access.project(name)
