"""Sign in with an API token (for a session cookie bound to it), sign out."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from gateway.core.access.web_session import SessionValue, sign_session
from gateway.errors import Throttled, Unauthorized
from gateway.web.deps import PREFIX, SESSION_COOKIE, FormDep, PagesDep, services_of, source_of, web_key

router = APIRouter()


def _safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of ours only (never another site)."""
    if target and target.startswith(PREFIX + "/") and "//" not in target and "\\" not in target:
        return target
    return f"{PREFIX}/runs"


@router.get("")
def home() -> RedirectResponse:
    """The runs list is the home page."""
    return RedirectResponse(f"{PREFIX}/runs", status_code=303)


@router.get("/login")
def login_page(
    request: Request, pages: PagesDep, next: str | None = None, why: str | None = None
) -> Response:
    """The sign-in form (a token field); ``why`` says why the browser was sent here."""
    return pages.render(request, "login.html", None, next=_safe_next(next), why=why, error=None)


@router.post("/login")
def login(request: Request, pages: PagesDep, form: FormDep) -> Response:
    """Exchange the token for a session cookie; the form again, with why, when the token is not valid
    (401) or this address or account must wait after failed tries (429, Retry-After)."""
    services = services_of(request)
    target = _safe_next(str(form.get("next") or ""))
    secret = str(form.get("token") or "").strip()
    try:
        principal, token_id = services.auth.sign_in(secret, source=source_of(request))
    except Unauthorized as exc:
        return pages.render(
            request, "login.html", None, next=target, why=None, error=str(exc), status_code=401
        )
    except Throttled as exc:
        page = pages.render(
            request, "login.html", None, next=target, why=None, error=str(exc), status_code=429
        )
        page.headers["Retry-After"] = str(exc.retry_after_s)
        return page
    ttl_s = services.settings.web_session_ttl_s
    value = SessionValue(token_id=token_id, user=principal.user, expires_at_s=time.time() + ttl_s)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        sign_session(web_key(request), value),
        max_age=int(ttl_s),
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path=PREFIX,
    )
    return response


@router.post("/logout")
def logout(request: Request, form: FormDep) -> RedirectResponse:
    """Drop the session cookie (the token itself stays valid: `gw token revoke` ends every session
    made from it)."""
    response = RedirectResponse(f"{PREFIX}/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=PREFIX)
    return response
