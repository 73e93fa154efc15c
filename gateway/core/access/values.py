"""Who calls: users, their API tokens, and the principal of an operation (a user or the operator).

Plain frozen dataclasses; ORM rows never leave the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class User:
    name: str
    os_user: str | None
    is_admin: bool
    disabled: bool


@dataclass(frozen=True)
class Token:
    id: int
    user: str
    name: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    scope: str = "api"  # TOKEN_SCOPES: "api" (the API and web UI) or "metrics" (GET /metrics only)


TOKEN_SCOPES = ("api", "metrics")


OPERATOR = "operator"  # the audit actor of operator commands; reserved, never a user's name
OPERATOR_SOURCE = "gateway host"


@dataclass(frozen=True)
class Principal:
    """The caller of an operation: a user, with their site-wide and per-project roles."""

    user: str
    is_admin: bool
    roles: dict[str, str]  # project -> role
    os_user: str | None = None
    source: str | None = None  # where the request came from (client address)

    def role(self, project: str) -> str | None:
        """The caller's role in ``project``; None when not a member (site admin or not)."""
        return self.roles.get(project)

    @classmethod
    def operator(cls) -> Principal:
        """The operator on the gateway host (``gw admin ...``): a site admin who is no gateway user.

        Services check permissions for every caller; operator commands pass
        this principal explicitly. Audit events name it ``operator``, from
        ``gateway host`` (no site file may add a user by that name).
        """
        return cls(user=OPERATOR, is_admin=True, roles={}, os_user=None, source=OPERATOR_SOURCE)
