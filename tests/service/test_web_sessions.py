"""Web sessions at the service: a session names its token by id, and that token is checked again on every
page (revoked, expired, disabled user, deleted token: signed out), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gateway.errors import Unauthorized
from gateway.services.site.auth import digest
from tests.service.conftest import OPERATOR


def test_a_session_lives_as_long_as_its_token(services):
    secret, token = services.auth.issue_token(OPERATOR, "mia", name="web")
    principal, token_id = services.auth.sign_in(secret, source="127.0.0.1")
    assert token_id == token.id and principal.user == "mia" and principal.source == "127.0.0.1"
    assert services.auth.session(token_id, source="127.0.0.1").roles == principal.roles
    services.auth.revoke(services.access.principal("mia"), token_id)
    with pytest.raises(Unauthorized, match="revoked"):
        services.auth.session(token_id)
    with pytest.raises(Unauthorized, match="no longer exists"):
        services.auth.session(2**31 - 1)


def test_an_expired_token_ends_its_session(services):
    old = "gwt_" + "y" * 43
    expired = services.access.add_token(
        user="mia",
        name="web-old",
        prefix=old[:12],
        token_sha256=digest(old),
        expires_at=datetime.now(UTC) - timedelta(seconds=1),
    )
    with pytest.raises(Unauthorized, match="expired"):
        services.auth.session(expired.id)
    with pytest.raises(Unauthorized, match="expired"):
        services.auth.sign_in(old)
