"""API tokens and identities.

A token is shown once (``gwt_`` + 43 random characters); the database keeps
its sha256 and a short prefix for people to recognise it. Tokens expire and
can be revoked. In trusted-proxy mode a front end that already authenticated
the user passes the name in a header instead; only requests that come from one
of the trusted proxies' addresses may do that, and with one such header only.

Failed token checks are throttled (``gateway.core.access.backoff``): by the
caller's address, and by the account a failure names (the user of a known but
revoked or expired token, or of a token whose prefix the guess carries).
While an address or account is locked its token checks answer Throttled
(429, with Retry-After) without being tried (docs/access.md).
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from gateway.core import names
from gateway.core.access.backoff import Backoff
from gateway.core.access.policy import require
from gateway.core.access.values import TOKEN_SCOPES, Principal, Token, User
from gateway.core.audit.entry import AuditEntry
from gateway.errors import BadRequest, NotFound, SpecError, SpecIssue, Throttled, Unauthorized
from gateway.store.access.access import AccessStore

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
    ``backoff``: the failed sign-ins of this process by address and account;
    ``clock``: seconds, monotonic (for tests that must not sleep).
    """

    def __init__(
        self,
        access: AccessStore,
        *,
        trusted_proxies: Sequence[Network] = (),
        trusted_user_header: str = "X-Remote-User",
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.access = access
        self.trusted_proxies = tuple(trusted_proxies)
        self.trusted_user_header = trusted_user_header
        self.backoff = backoff or Backoff()
        self.clock = clock

    def issue_token(
        self,
        actor: Principal,
        user: str,
        *,
        name: str = "default",
        expires_in_days: float | None = 90,
        scope: str = "api",
    ) -> tuple[str, Token]:
        """Make a token for ``user``; returns the secret (shown once) and its record.

        Users issue their own tokens; admins (and the operator, ``gw admin
        token``) issue anyone's: Forbidden otherwise. ``scope`` "metrics"
        makes a scraper's token: it reads GET /metrics (every project's
        series) and nothing else, so only an admin issues one.
        """
        if scope not in TOKEN_SCOPES:
            valid = ", ".join(TOKEN_SCOPES)
            raise SpecError([SpecIssue("scope", f"not a token scope; valid: {valid}", scope)])
        own = isinstance(actor, Principal) and actor.user == user
        if not own or scope != "api":
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
            scope=scope,
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
                    "scope": scope,
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
        revoking the token ends the session); Unauthorized when the token is not valid now,
        Throttled while ``source`` or the token's account is locked after failed tries."""
        now_s = self.clock()
        address = f"address:{source or '-'}"
        self._refuse_while_locked(address, now_s, f"from {source or 'this client'}")
        found = self.access.token_owner(digest(secret)) if secret.startswith(TOKEN_PREFIX) else None
        try:
            if found is None:
                raise Unauthorized(
                    "unknown token: an admin issues one on the gateway host (`gw admin token USER`)"
                )
            principal = self._valid(found, source)
        except Unauthorized:
            self.backoff.failed(address, now_s)
            account = found[1].name if found is not None else self._prefix_owner(secret)
            if account is not None:
                self.backoff.failed(f"account:{account}", now_s)
            raise
        self._refuse_while_locked(f"account:{principal.user}", now_s, f"for user {principal.user}")
        self.backoff.succeeded(address)
        return principal, found[0].id

    def _refuse_while_locked(self, key: str, now_s: float, who: str) -> None:
        wait_s = self.backoff.wait_s(key, now_s)
        if wait_s:
            raise Throttled(
                f"too many failed sign-ins {who} lately: try again in {wait_s} s (each further failure "
                f"doubles the wait, up to {self.backoff.max_s:g} s)",
                retry_after_s=wait_s,
            )

    def _prefix_owner(self, secret: str) -> str | None:
        """The user of the token whose recorded prefix ``secret`` starts with (a guess aimed at one
        account), if any: read on a failure only."""
        if not secret.startswith(TOKEN_PREFIX) or len(secret) < 12:
            return None
        return next((t.user for t in self.access.tokens() if t.prefix == secret[:12]), None)

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
        if token.scope != "api":
            raise Unauthorized(
                f"token {token.prefix}... is a {token.scope} token: it reads GET /metrics and nothing else "
                "(use a user token: `gw admin token USER` on the gateway host, or `gw token issue`)"
            )
        # last_used_at is coarse on purpose: a write on every request would double its cost.
        if token.last_used_at is None or now - token.last_used_at >= TOUCH_EVERY:
            self.access.touch_token(token.id)
        return Principal(
            user=user.name, is_admin=user.is_admin, roles=roles, os_user=user.os_user, source=source
        )

    def trusted(self, values: Sequence[str], *, source: str | None) -> Principal:
        """The principal for the user name a trusted front end sent (trusted-proxy mode).

        ``values``: every ``trusted_user_header`` the request carries. Unauthorized
        unless the request came from one of ``trusted_proxies`` (``source``: the
        peer's address), the name is valid, and the user is known and enabled;
        BadRequest when the header came more than once (which one would count is
        up to each front end and parser: none does).
        """
        if not self._from_trusted_proxy(source):
            raise Unauthorized(
                f"this gateway takes user names only from its trusted proxies, and {source or 'this client'} "
                f"is not one of them: go through the front end (or ask an admin for an API token)"
            )
        if len(values) > 1:
            raise BadRequest(
                f"the {self.trusted_user_header} header came {len(values)} times; a request names one user "
                "in one such header (the front end must replace the client's own, not add to it)"
            )
        user = values[0] if values else None
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
