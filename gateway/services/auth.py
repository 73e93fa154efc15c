"""API tokens and identities.

A token is shown once (``gwt_`` + 43 random characters); the database keeps
its sha256 and a short prefix for people to recognise it. Tokens expire and
can be revoked. In trusted-proxy mode a front end that already authenticated
the user passes the name in a header instead.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from gateway.core import names
from gateway.domain import Principal, Token
from gateway.errors import NotFound, SpecError, SpecIssue, Unauthorized
from gateway.services.policy import require
from gateway.store.access import AccessStore
from gateway.store.audit import AuditEntry

TOKEN_PREFIX = "gwt_"
TOUCH_EVERY = timedelta(minutes=1)  # how fresh a token's last_used_at is kept


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class AuthService:
    def __init__(self, access: AccessStore) -> None:
        self.access = access

    def issue_token(
        self,
        actor: Principal | None,
        user: str,
        *,
        name: str = "default",
        expires_in_days: float | None = 90,
    ) -> tuple[str, Token]:
        """Make a token for ``user``; returns the secret (shown once) and its record.

        ``actor`` None means the operator on the gateway host (``gw admin token issue``).
        Users issue their own tokens; admins issue anyone's.
        """
        if actor is not None and actor.user != user:
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
                actor=actor.user if actor else "operator",
                action="token.issue",
                target_type="user",
                target_id=user,
                source=actor.source if actor else "gateway host",
                after={
                    "name": name,
                    "prefix": secret[:12],
                    "expires_at": expires.isoformat() if expires else None,
                },
            ),
        )
        return secret, token

    def revoke(self, actor: Principal, token_id: int) -> Token:
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
        if user is not None and user != actor.user:
            require(actor, "site.admin")
        return self.access.tokens(user or actor.user)

    def authenticate(self, secret: str, *, source: str | None = None) -> Principal:
        """The principal a bearer token stands for; Unauthorized when it is not valid now."""
        found = self.access.token_owner(digest(secret)) if secret.startswith(TOKEN_PREFIX) else None
        if found is None:
            raise Unauthorized("unknown token; get one with `gw token issue` or from your admin")
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

    def trusted(self, user: str, *, source: str | None = None) -> Principal:
        """The principal for a user name a trusted front end vouches for."""
        try:
            principal = self.access.principal(user, source=source)
        except NotFound as exc:
            raise Unauthorized(
                f"user {user!r} is not known to the gateway; ask an admin to add them"
            ) from exc
        if self.access.user(user).disabled:
            raise Unauthorized(f"user {user} is disabled")
        return principal
