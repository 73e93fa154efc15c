"""API tokens: issue (shown once), list, revoke."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from gateway.api.deps import PrincipalDep, ServicesDep
from gateway.api.schemas import ErrorPublic
from gateway.api.schemas_admin import TokenCreate, TokenIssued, TokenPublic
from gateway.core import names

router = APIRouter(prefix="/tokens", tags=["tokens"])


@router.get(
    "",
    response_model=list[TokenPublic],
    responses={403: {"model": ErrorPublic, "description": "Only admins list other users' tokens"}},
    summary="List tokens",
)
def list_tokens(
    services: ServicesDep,
    principal: PrincipalDep,
    user: Annotated[str | None, Query(pattern=f"^{names.NAME.pattern}$", description="admins only")] = None,
) -> list[TokenPublic]:
    """The caller's tokens (an admin may name another user). Secrets are never shown again."""
    return [TokenPublic.of(t) for t in services.auth.tokens(principal, user)]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenIssued,
    responses={403: {"model": ErrorPublic, "description": "Only admins issue tokens for others"}},
    summary="Issue a token",
)
def issue_token(body: TokenCreate, services: ServicesDep, principal: PrincipalDep) -> TokenIssued:
    """A new token for the caller (or, for an admin, another user). The secret is in the answer, once."""
    secret, token = services.auth.issue_token(
        principal, body.user or principal.user, name=body.name, expires_in_days=body.expires_in_days
    )
    return TokenIssued(**TokenPublic.of(token).model_dump(), token=secret)


@router.delete(
    "/{token_id}",
    response_model=TokenPublic,
    responses={404: {"model": ErrorPublic, "description": "No such token (or not yours)"}},
    summary="Revoke a token",
)
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=2**31 - 1)], services: ServicesDep, principal: PrincipalDep
) -> TokenPublic:
    """Revoke one of the caller's tokens (admins: anyone's). It stops working at once."""
    return TokenPublic.of(services.auth.revoke(principal, token_id))
