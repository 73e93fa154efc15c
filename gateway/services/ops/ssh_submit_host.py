"""The remote submit host: can the gateway act as each mapped OS user there (``gw admin ssh-check``)."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.adapters.ssh_hop import LoginCheck, SubmitHop
from gateway.core.domain import Principal
from gateway.errors import Conflict, Forbidden
from gateway.store.access import AccessStore


@dataclass(frozen=True)
class LoginReport:
    hop: str  # where the hop goes and how it logs in
    service: LoginCheck  # the gateway's own login (Slurm queries, account look-ups)
    users: list[LoginCheck]  # one per OS user some gateway user maps to, by name

    @property
    def ok(self) -> bool:
        """True when the service login and every mapped user's login work."""
        return self.service.ok and all(check.ok for check in self.users)


class SubmitHostService:
    def __init__(self, access: AccessStore, hop: SubmitHop | None) -> None:
        self.access = access
        self.hop = hop  # None: no submit host, jobs are submitted on this machine

    def check_logins(self, principal: Principal) -> LoginReport:
        """Log in (``id -un``) as the service user and as every mapped OS user, the way their jobs are
        submitted, and report which work and why not. Site admins only (Forbidden); Conflict when no
        submit host is configured."""
        if not principal.is_admin:
            raise Forbidden("only a site admin may test the submit host's logins")
        if self.hop is None:
            raise Conflict(
                "no submit host is configured (GATEWAY_SUBMIT_HOST is unset): jobs are submitted on this "
                "machine, so there is no SSH login to test"
            )
        mapped = sorted({user.os_user for user in self.access.users() if user.os_user})
        service = self.hop.check_login(self.hop.service_user)
        return LoginReport(self.hop.describe(), service, [self.hop.check_login(user) for user in mapped])
