"""What every page needs: the services, the signed-in principal, the CSRF check, the templates.

Signing in exchanges an API token for a session cookie (``gw_session``:
HTTP-only, SameSite=Lax, path /ui, expiring after ``web_session_ttl_s``)
that names the token's id; every page checks that token again, so revoking
it signs the browser out. In trusted-proxy mode the front end's header
names the user on every request instead, as for the API. Every POST carries
a CSRF token matching the browser's ``gw_csrf`` nonce cookie.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from starlette.datastructures import FormData

from gateway.core.access.values import Principal
from gateway.core.access.web_session import csrf_ok, csrf_token, read_session
from gateway.errors import Forbidden, GatewayError, Unauthorized
from gateway.services import Services

SESSION_COOKIE = "gw_session"
CSRF_COOKIE = "gw_csrf"
CSRF_FIELD = "csrf"
PREFIX = "/ui"
HERE = Path(__file__).parent


class SignInNeeded(GatewayError):
    """No valid session: the page sends the browser to the sign-in page (with why)."""


def build_templates() -> jinja2.Environment:
    """The pages' Jinja2 environment: autoescaping on for every template (user and job text is
    escaped unless a value is ``Markup`` built by ``gateway.web.svg``)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = lambda d: f"{d:%Y-%m-%d %H:%M:%S}" if d else "-"
    # JSON for people (autoescape escapes it as text; tojson's \u003c escapes are for <script> blocks)
    env.filters["num"] = number
    env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
    return env


def number(value: object, digits: int = 4) -> str:
    """A number with ``digits`` decimals for a table ("-" for None, never "-0.0000"); text as it is."""
    if value is None:
        return "-"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def services_of(request: Request) -> Services:
    """The services the API built (``app.state.services``)."""
    return request.app.state.services


def web_key(request: Request) -> bytes:
    """The signing key: ``web_session_key``, or one random key for this process."""
    state = request.app.state
    if getattr(state, "web_key", None) is None:
        configured = services_of(request).settings.web_session_key
        state.web_key = configured.get_secret_value().encode() if configured else secrets.token_bytes(32)
    return state.web_key


def source_of(request: Request) -> str | None:
    """The TCP peer's address (never X-Forwarded-For)."""
    return request.client.host if request.client else None


def current_principal(request: Request) -> Principal:
    """The signed-in principal; SignInNeeded when there is no valid session (Unauthorized in
    trusted-proxy mode, where there is no sign-in page to go to)."""
    services = services_of(request)
    source = source_of(request)
    if services.settings.auth_mode == "trusted_proxy":
        return services.auth.trusted(
            request.headers.getlist(services.settings.trusted_user_header), source=source
        )
    value = read_session(web_key(request), request.cookies.get(SESSION_COOKIE), now_s=time.time())
    if value is None:
        raise SignInNeeded("sign in with an API token")
    try:
        return services.auth.session(value.token_id, source=source)
    except Unauthorized as exc:
        raise SignInNeeded(str(exc)) from exc


def csrf_for(request: Request) -> str:
    """The CSRF token this browser's forms carry (its nonce is set by the web middleware)."""
    return csrf_token(web_key(request), request.state.csrf_nonce)


async def checked_form(request: Request) -> FormData:
    """The POSTed form, once its CSRF token matched the browser's nonce; Forbidden otherwise."""
    form = await request.form(max_files=2, max_fields=400)
    token = form.get(CSRF_FIELD)
    if not csrf_ok(
        web_key(request), request.cookies.get(CSRF_COOKIE), token if isinstance(token, str) else None
    ):
        raise Forbidden("this form's CSRF token is missing or does not match; reload the page and try again")
    return form


PrincipalDep = Annotated[Principal, Depends(current_principal)]
FormDep = Annotated[FormData, Depends(checked_form)]


class Pages:
    """Renders templates with what every page shows (who is signed in, the CSRF token)."""

    def __init__(self) -> None:
        self.env = build_templates()

    def render(
        self,
        request: Request,
        name: str,
        principal: Principal | None = None,
        *,
        status_code: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        """``name`` rendered as a full page or fragment (templates starting with ``_``)."""
        services = services_of(request)
        html = self.env.get_template(name).render(
            principal=principal,
            csrf=csrf_for(request),
            csrf_field=CSRF_FIELD,
            trusted_mode=services.settings.auth_mode == "trusted_proxy",
            prefix=PREFIX,
            status_code=status_code,
            **context,
        )
        return HTMLResponse(html, status_code=status_code)


def pages_of(request: Request) -> Pages:
    """The one ``Pages`` of the app."""
    return request.app.state.web_pages


PagesDep = Annotated[Pages, Depends(pages_of)]
