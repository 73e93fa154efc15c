"""Projects as the site file and the services know them: members and their roles, queues, quotas.

Shared by the site file (``gateway.core.site``) and who may do what (``gateway.core.access``); plain
frozen dataclasses, ORM rows never leave the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Per project: viewer < member < lead in power (site admins are above all); a reviewer reads as a
# viewer does and may also record evaluation reviews (gateway/core/access/policy.py).
ROLES = ("viewer", "reviewer", "member", "lead")


@dataclass(frozen=True)
class Quota:
    """Caps; None means no cap."""

    gpus: int | None = None  # GPUs in use at once
    gpu_hours_per_month: int | None = None  # per calendar month (UTC)
    jobs_in_queue: int | None = None  # queued + running


@dataclass(frozen=True)
class Member:
    user: str
    role: str
    quota: Quota


@dataclass(frozen=True)
class Queue:
    name: str
    partition: str
    qos: str | None
    gpu_types: list[str]
    max_walltime_min: int | None
    retry: dict[str, Any] | None = None  # the queue's retry policy (classes, max_attempts, backoff_s)
    whole_node_mem: bool = False  # --mem=0 (all of each node's memory) is allowed on this queue
    cluster: str | None = None  # the cluster whose partition it is (None: the site's first cluster)


@dataclass(frozen=True)
class Project:
    name: str
    description: str
    slurm_account: str
    quota: Quota
    members: list[Member]
    queues: list[Queue]

    def queue(self, name: str) -> Queue | None:
        """The project's queue called ``name``; None when it has none by that name."""
        return next((q for q in self.queues if q.name == name), None)

    def role_of(self, user: str) -> str | None:
        """``user``'s role in the project (one of :data:`ROLES`); None when not a member."""
        return next((m.role for m in self.members if m.user == user), None)
