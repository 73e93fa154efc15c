"""Typed dependencies for routes: the services, the settings and the calling user."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from gateway.core import names
from gateway.errors import SpecError, SpecIssue
from gateway.services import Services
from gateway.settings import Settings


def get_services(request: Request) -> Services:
    return request.app.state.services


def get_settings(request: Request) -> Settings:
    return request.app.state.services.settings


def get_user(
    x_gateway_user: Annotated[
        str | None,
        Header(description="Who is calling (until token auth lands): a user name. Default: anonymous."),
    ] = None,
) -> str:
    user = x_gateway_user or "anonymous"
    if not names.TAG.fullmatch(user):
        raise SpecError(
            [SpecIssue("X-Gateway-User", f"not a valid user name; use {names.TAG_HELP}", user)],
            location="header",
        )
    return user


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
UserDep = Annotated[str, Depends(get_user)]
