"""API tokens and identities.

A token is shown once (``gwt_`` + 43 random characters); the database keeps
its sha256 and a short prefix for people to recognise it. Tokens expire and
can be revoked. In trusted-proxy mode a front end that already authenticated
the user passes the name in a header instead; only requests that come from one
of the trusted proxies' addresses may do that.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from gateway.core import names
from gateway.core.access.policy import require
from gateway.core.audit.entry import AuditEntry
from gateway.core.domain import Principal, Token, User
from gateway.errors import NotFound, SpecError, SpecIssue, Unauthorized
from gateway.store.access import AccessStore

TOKEN_PREFIX = "gwt_"
TOUCH_EVERY = timedelta(minutes=1)  # how fresh a token's last_used_at is kept


def digest(token: str) -> str:
    """The hex sha256 of a token's secret: what the database keeps instead of the secret."""
    return hashlib.sha256(token.encode()).hexdigest()


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class AuthService:
    """Tokens (issue, list, revoke, authenticate) and the trusted front end's user names.

    ``trusted_proxies``: the addresses or networks a trusted-proxy request
    must come from (``Settings.trusted_proxies``); none trusts no one.
    """

    def __init__(
        self,
        access: AccessStore,
        *,
        trusted_proxies: Sequence[Network] = (),
        trusted_user_header: str = "X-Remote-User",
    ) -> None:
        self.access = access
        self.trusted_proxies = tuple(trusted_proxies)
        self.trusted_user_header = trusted_user_header

    def issue_token(
        self,
        actor: Principal,
        user: str,
        *,
        name: str = "default",
        expires_in_days: float | None = 90,
    ) -> tuple[str, Token]:
        """Make a token for ``user``; returns the secret (shown once) and its record.

        Users issue their own tokens; admins (and the operator, ``gw admin
        token``) issue anyone's: Forbidden otherwise.
        """
        own = isinstance(actor, Principal) and actor.user == user
        if not own:
            require(actor, "site.admin")
        if not names.NAME.fullmatch(name):
            raise SpecError([SpecIssue("name", f"not a valid token name; use {names.NAME_HELP}", name)])
        if expires_in_days is not None and not 0 < expires_in_days <= 3650:
            raise SpecError(
                [SpecIssue("expires_in_days", "must be between 0 and 3650 days", expires_in_days)]
            )
        if self.access.user(user).disabled:
            raise SpecError([SpecIssue("user", "is disabled", user)])
        secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
        expires = datetime.now(UTC) + timedelta(days=expires_in_days) if expires_in_days else None
        token = self.access.add_token(
            user=user,
            name=name,
            prefix=secret[:12],
            token_sha256=digest(secret),
            expires_at=expires,
            audit=AuditEntry(
                actor=actor.user,
                action="token.issue",
                target_type="user",
                target_id=user,
                source=actor.source,
                after={
                    "name": name,
                    "prefix": secret[:12],
                    "expires_at": expires.isoformat() if expires else None,
                },
            ),
        )
        return secret, token

    def revoke(self, actor: Principal, token_id: int) -> Token:
        """Revoke token ``token_id`` (audited; revoking twice is not an error); the token.

        NotFound when there is no such token or it is another user's and ``actor`` is no admin.
        """
        token = next((t for t in self.access.tokens() if t.id == token_id), None)
        if token is None or (token.user != actor.user and not actor.is_admin):
            raise NotFound(f"no token {token_id}")
        return self.access.revoke_token(
            token_id,
            audit=AuditEntry(
                actor=actor.user,
                action="token.revoke",
                target_type="user",
                target_id=token.user,
                source=actor.source,
                before={"token": token.prefix},
            ),
        )

    def tokens(self, actor: Principal, user: str | None = None) -> list[Token]:
        """``user``'s tokens (default: the caller's), oldest first; another user's only for a site
        admin (Forbidden otherwise).
        """
        if user is not None and user != actor.user:
            require(actor, "site.admin")
        return self.access.tokens(user or actor.user)

    def authenticate(self, secret: str, *, source: str | None = None) -> Principal:
        """The principal a bearer token stands for; Unauthorized when it is not valid now."""
        return self.sign_in(secret, source=source)[0]

    def sign_in(self, secret: str, *, source: str | None = None) -> tuple[Principal, int]:
        """``authenticate``, also returning the token's id (a web session is bound to it, so that
        revoking the token ends the session); Unauthorized when the token is not valid now."""
        found = self.access.token_owner(digest(secret)) if secret.startswith(TOKEN_PREFIX) else None
        if found is None:
            raise Unauthorized("unknown token; get one with `gw token issue` or from your admin")
        return self._valid(found, source), found[0].id

    def session(self, token_id: int, *, source: str | None = None) -> Principal:
        """The principal of a web session made from token ``token_id``: Unauthorized when that token
        is unknown, revoked or expired now, or its user disabled (one read, every page)."""
        found = self.access.token_by_id(token_id)
        if found is None:
            raise Unauthorized("the token this session was made from no longer exists; sign in again")
        return self._valid(found, source)

    def _valid(self, found: tuple[Token, User, dict[str, str]], source: str | None) -> Principal:
        token, user, roles = found
        now = datetime.now(UTC)
        if token.revoked_at is not None:
            raise Unauthorized(
                f"token {token.prefix}... was revoked at {token.revoked_at:%Y-%m-%d %H:%M} UTC"
            )
        if token.expires_at is not None and token.expires_at <= now:
            raise Unauthorized(f"token {token.prefix}... expired at {token.expires_at:%Y-%m-%d %H:%M} UTC")
        if user.disabled:
            raise Unauthorized(f"user {user.name} is disabled")
        # last_used_at is coarse on purpose: a write on every request would double its cost.
        if token.last_used_at is None or now - token.last_used_at >= TOUCH_EVERY:
            self.access.touch_token(token.id)
        return Principal(
            user=user.name, is_admin=user.is_admin, roles=roles, os_user=user.os_user, source=source
        )

    def trusted(self, user: str | None, *, source: str | None) -> Principal:
        """The principal for the user name a trusted front end sent (trusted-proxy mode).

        Unauthorized unless the request came from one of ``trusted_proxies``
        (``source``: the peer's address), the name is valid, and the user is
        known and enabled.
        """
        if not self._from_trusted_proxy(source):
            raise Unauthorized(
                f"this gateway takes user names only from its trusted proxies, and {source or 'this client'} "
                f"is not one of them: go through the front end (or ask an admin for an API token)"
            )
        if not user or not names.NAME.fullmatch(user):
            raise Unauthorized(f"no valid user name in the {self.trusted_user_header} header")
        try:
            principal = self.access.principal(user, source=source)
        except NotFound as exc:
            raise Unauthorized(
                f"user {user!r} is not known to the gateway; ask an admin to add them"
            ) from exc
        if self.access.user(user).disabled:
            raise Unauthorized(f"user {user} is disabled")
        return principal

    def _from_trusted_proxy(self, source: str | None) -> bool:
        try:
            address = ipaddress.ip_address(source or "")
        except ValueError:
            return False  # no address (a unix socket, a test client): not a known proxy
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # an IPv4 peer on a dual-stack socket
        return any(address in network for network in self.trusted_proxies)
