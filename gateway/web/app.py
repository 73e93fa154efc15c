"""Mounting the web pages on the API's app: routes under /ui, static files, headers, error pages.

``gw serve`` builds the API (``gateway.api.create_app``) and calls
``mount_web`` on it, so pages and API share one process and one ``Services``.
Behind a TLS proxy the pages' cookies are Secure (``gateway.web.forwarded``).
Every /ui answer carries a Content-Security-Policy that allows scripts and
styles from this origin only (no inline script anywhere), and frames none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import quote

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.core.access.values import Principal
from gateway.core.access.web_session import new_nonce
from gateway.error_status import HTTP_KINDS, allowed_methods, status_for
from gateway.errors import GatewayError
from gateway.web import (
    routes_auth,
    routes_compare,
    routes_envs,
    routes_pages,
    routes_records,
    routes_releases,
    routes_reports,
    routes_run_list,
    routes_run_page,
    routes_submit,
    routes_tasks,
)
from gateway.web.deps import CSRF_COOKIE, HERE, PREFIX, Pages, SignInNeeded, current_principal
from gateway.web.forwarded import ForwardedScheme

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
STATIC = "/ui-static"


def mount_web(app: FastAPI) -> FastAPI:
    """Add the web pages to ``app`` (before it starts); returns it."""
    app.state.web_pages = Pages()
    app.mount(STATIC, StaticFiles(directory=HERE / "static"), name="ui-static")
    # Browsers ask for /favicon.ico on their own (a page's own link names the SVG): answer it, not 404.
    app.add_api_route("/favicon.ico", _favicon, methods=["GET"], include_in_schema=False)
    for module in (
        routes_auth,
        routes_run_list,
        routes_run_page,
        routes_submit,
        routes_pages,
        routes_records,
        routes_releases,
        routes_envs,
        routes_reports,
        routes_compare,
        routes_tasks,
    ):
        app.include_router(module.router, prefix=PREFIX, include_in_schema=False)
    app.add_middleware(WebPathsOnly)
    # Outermost (added last): every cookie the pages set sees the public scheme (a TLS proxy's word).
    app.add_middleware(ForwardedScheme)
    _error_pages(app)
    return app


def _favicon() -> FileResponse:
    """The pages' icon (an SVG, which every current browser takes under any name)."""
    return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")


def _web_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/") or path.startswith(STATIC + "/")


class WebPathsOnly:
    """``_web_headers`` on /ui and /ui-static requests; every other request (the API) passes straight on.

    Starlette's ``BaseHTTPMiddleware`` (what ``app.middleware("http")`` builds) runs the rest of the app
    in a task of its own with memory streams between: on the API's hot path that cost more than the
    gateway's own validation and response building, for headers the API never gets.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.web = BaseHTTPMiddleware(app, dispatch=_web_headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Dispatch by path: web requests through ``_web_headers``, the rest to the app itself."""
        if scope["type"] == "http" and _web_path(scope["path"]):
            await self.web(scope, receive, send)
        else:
            await self.app(scope, receive, send)


async def _web_headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """The CSRF nonce cookie and the security headers, on /ui answers only (the API's own are
    untouched: its /docs page loads Swagger's scripts)."""
    path = request.url.path
    if not _web_path(path):
        return await call_next(request)
    nonce = request.cookies.get(CSRF_COOKIE)
    # Static files get no nonce: the cookie's path (/ui) does not cover /ui-static, so a nonce set there
    # would replace the pages' own.
    fresh = not path.startswith(STATIC + "/") and (not nonce or len(nonce) > 128)
    request.state.csrf_nonce = new_nonce() if fresh else nonce
    response = await call_next(request)
    if fresh:
        response.set_cookie(
            CSRF_COOKIE,
            request.state.csrf_nonce,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path=PREFIX,
        )
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    response.headers["X-Frame-Options"] = "DENY"
    response.headers.setdefault("Cache-Control", "no-store")
    return response


def _is_web(request: Request) -> bool:
    return request.url.path == PREFIX or request.url.path.startswith(PREFIX + "/")


def _signed_in(request: Request) -> Principal | None:
    """Who is signed in, for an error page's header (nobody when there is no valid session)."""
    try:
        return current_principal(request)
    except GatewayError:
        return None


def _error_pages(app: FastAPI) -> None:
    """Errors on /ui pages become pages (the API's JSON answers stay as they are elsewhere)."""
    api_gateway_error = app.exception_handlers.get(GatewayError)
    api_validation_error = app.exception_handlers.get(RequestValidationError)
    api_http_error = app.exception_handlers.get(StarletteHTTPException)

    async def gateway_error(request: Request, exc: Exception) -> Response:
        if not _is_web(request):
            assert api_gateway_error is not None
            return await api_gateway_error(request, exc)  # type: ignore[misc]  # the API's handlers are coroutines
        if isinstance(exc, SignInNeeded):
            target = f"{PREFIX}/login?next={quote(request.url.path)}&why={quote(str(exc)[:300])}"
            if request.headers.get("HX-Request"):
                return Response(status_code=200, headers={"HX-Redirect": target})
            return RedirectResponse(target, status_code=303)
        status, kind = status_for(exc)  # type: ignore[arg-type]  # registered for GatewayError only
        return request.app.state.web_pages.render(
            request, "error.html", _signed_in(request), status_code=status, kind=kind, message=str(exc)[:2000]
        )

    async def validation_error(request: Request, exc: Exception) -> Response:
        if not _is_web(request):
            assert api_validation_error is not None
            return await api_validation_error(request, exc)  # type: ignore[misc]  # the API's handlers are coroutines
        issues = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}"
            for e in exc.errors()  # type: ignore[attr-defined]  # registered for RequestValidationError only
        )
        return request.app.state.web_pages.render(
            request,
            "error.html",
            _signed_in(request),
            status_code=422,
            kind="invalid_request",
            message=issues,
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        # Starlette's own answers (no such page, a method the page does not take) as pages too
        if not _is_web(request):
            assert api_http_error is not None
            return await api_http_error(request, exc)  # type: ignore[misc]  # the API's handlers are coroutines
        assert isinstance(exc, StarletteHTTPException)  # the handler is registered for it only
        status = exc.status_code
        headers = dict(exc.headers or {})
        message = f"there is no page {request.url.path[:300]}" if status == 404 else str(exc.detail)
        if status == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
            message = f"{request.method} is not possible at {request.url.path}"
        response = request.app.state.web_pages.render(
            request,
            "error.html",
            _signed_in(request),
            status_code=status,
            kind=HTTP_KINDS.get(status, "http_error"),
            message=message,
        )
        response.headers.update(headers)
        return response

    app.add_exception_handler(GatewayError, gateway_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
