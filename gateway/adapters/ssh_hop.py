"""The hop to a remote submit host, as services see it: describe it, time it, test a login.

``gateway.adapters.runner_ssh.SshRunner`` implements it; with no submit host
(the gateway on the login node) there is no hop and services get None.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gateway.core.site.clusters import Cluster


@dataclass(frozen=True)
class LoginCheck:
    """Whether the gateway can act as one OS user on the submit host."""

    user: str
    ok: bool
    latency_ms: float | None  # None when it failed
    detail: str  # what the host said: the user it ran as, or why it could not


class SubmitHop(Protocol):
    @property
    def service_user(self) -> str:
        """The account the gateway logs in as for its own commands on the submit host."""
        ...

    def describe(self) -> str:
        """Where the hop goes and how it logs in, e.g. ``ssh://svc@login1:22 (per_user_key)``."""
        ...

    def probe(self) -> None:
        """Run one trivial command as the service login; CommandError / CommandTimeout if it fails."""
        ...

    def check_login(self, user: str) -> LoginCheck:
        """Run ``id -un`` as ``user`` on the submit host, the way jobs of ``user`` are submitted."""
        ...


HopOf = Callable[
    [Cluster], "SubmitHop | None"
]  # a listed cluster's hop: its own submit host, the server's, or none
