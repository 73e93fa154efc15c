"""One gate for request bodies, before any route reads them: a size cap (413), then strict JSON (422).

``BodyLimits`` is a pure ASGI middleware. It reads the body as it arrives
and answers 413 as soon as the body (or its Content-Length) passes the cap:
``max_body_bytes``, or ``max_manifest_body_bytes`` for the one route that
takes a dataset's whole manifest. A body the app would read as JSON (no
Content-Type, ``application/json`` or ``application/*+json``, as FastAPI
decides) must pass ``gateway.core.json_input.load_json``: UTF-8, valid
JSON, nested at most ``MAX_DEPTH`` levels, no NaN or Infinity, no duplicate
keys; else 422 with the field paths. A body that passes goes on, byte for
byte, to the app, which parses it again (the C decoder: milliseconds).

Both answers have the gateway's error shape, ``{"error": kind, "detail": ...}``.
"""

from __future__ import annotations

import email.message
import re
from typing import Any

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.errors import gateway_error_body
from gateway.core.json_input import load_json
from gateway.errors import SpecError
from gateway.settings import Settings

# The route whose body is a dataset's manifest (up to MAX_FILES entries): it has its own cap.
_MANIFEST_ROUTE = re.compile(r"/datasets/[^/]+/[^/]+/versions/?")


def _limit(scope: Scope) -> tuple[int, str]:
    """The cap for this request, and the setting that sets it."""
    services = getattr(getattr(scope.get("app"), "state", None), "services", None)
    settings = getattr(services, "settings", None)
    manifest = scope["method"] == "POST" and _MANIFEST_ROUTE.fullmatch(scope["path"])
    field = "max_manifest_body_bytes" if manifest else "max_body_bytes"
    if settings is None:  # before start-up (or a test app without services): the declared default
        return Settings.model_fields[field].default, field
    return getattr(settings, field), field


def _is_json(content_type: str | None) -> bool:
    """Whether FastAPI reads this body as JSON (``fastapi.routing``: no type, json or +json)."""
    if not content_type:
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    if message.get_content_maintype() != "application":
        return False
    return subtype == "json" or subtype.endswith("+json")


class BodyLimits:
    """The ASGI middleware described in the module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, field = _limit(scope)
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(scope, receive, send, f"the request body is {int(declared)} bytes", limit, field)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away: nobody to answer
            body += message.get("body", b"")
            if len(body) > limit:
                said = f"the request body is more than {limit} bytes"
                await _too_large(scope, receive, send, said, limit, field)
                return
            if not message.get("more_body", False):
                break
        if body and _is_json(headers.get("content-type")):
            try:
                load_json(bytes(body))
            except SpecError as exc:
                status, content = gateway_error_body(exc)
                await JSONResponse(content, status_code=status)(scope, receive, send)
                return
        await self.app(scope, _replay(bytes(body), receive), send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the app the whole body once, then whatever the server sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


async def _too_large(scope: Scope, receive: Receive, send: Send, said: str, limit: int, field: str) -> None:
    detail: Any = f"{said}; at most {limit} are read (the gateway's GATEWAY_{field.upper()})"
    response = JSONResponse({"error": "body_too_large", "detail": detail}, status_code=413)
    await response(scope, receive, send)
