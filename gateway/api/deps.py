"""Typed dependencies for routes: the services, the settings and the calling principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gateway.core import names
from gateway.domain import Principal
from gateway.errors import Unauthorized
from gateway.services import Services
from gateway.settings import Settings

bearer = HTTPBearer(auto_error=False, description="An API token: `gw token issue`, or from an admin")


def get_services(request: Request) -> Services:
    return request.app.state.services


def get_settings(request: Request) -> Settings:
    return request.app.state.services.settings


def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """Who is calling: from the bearer token, or (trusted-proxy mode) from the front end's header."""
    services: Services = request.app.state.services
    source = request.client.host if request.client else None
    if services.settings.auth_mode == "trusted_proxy":
        user = request.headers.get(services.settings.trusted_user_header)
        if not user or not names.NAME.fullmatch(user):
            raise Unauthorized(f"no valid user name in the {services.settings.trusted_user_header} header")
        return services.auth.trusted(user, source=source)
    if credentials is None:
        raise Unauthorized("no token: send `Authorization: Bearer <token>` (gw reads GW_TOKEN or its config)")
    return services.auth.authenticate(credentials.credentials, source=source)


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
