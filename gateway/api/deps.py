"""Typed dependencies for routes: the services, the settings and the calling principal."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from gateway.api.blocking import FileReads
from gateway.core.access.values import Principal
from gateway.errors import Unauthorized
from gateway.services import Services
from gateway.settings import Settings

bearer = HTTPBearer(
    auto_error=False,
    description="An API token: from an admin (`gw admin token USER` on the gateway host), "
    "or `gw token issue`",
)


# The dependencies that do no I/O are ``async def``: FastAPI runs a plain ``def`` dependency in its
# thread pool, and that hop (an anyio worker thread, a capacity limiter, two queue hand-overs) cost
# more than the lookup itself on every request (docs/performance.md). ``get_principal`` reads the
# database, so it stays a ``def``: in a thread, never on the event loop.


async def get_services(request: Request) -> Services:
    return request.app.state.services


async def get_settings(request: Request) -> Settings:
    return request.app.state.services.settings


def get_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """Who is calling: from the bearer token, or (trusted-proxy mode) from the front end's header.

    ``source`` is the TCP peer's address (``gw serve`` does not rewrite it
    from X-Forwarded-For), so a trusted-proxy header counts only when that
    peer is one of the trusted proxies.
    """
    services: Services = request.app.state.services
    source = request.client.host if request.client else None
    if services.settings.auth_mode == "trusted_proxy":
        return services.auth.trusted(
            request.headers.getlist(services.settings.trusted_user_header), source=source
        )
    if credentials is None:
        raise Unauthorized("no token: send `Authorization: Bearer <token>` (gw reads GW_TOKEN or its config)")
    return services.auth.authenticate(credentials.credentials, source=source)


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def get_file_reads(request: Request) -> FileReads:
    return request.app.state.file_reads


FileReadsDep = Annotated[FileReads, Depends(get_file_reads)]
