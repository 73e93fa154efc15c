"""The API's error handlers: every error as an ``ErrorPublic`` body, its status from the one table.

The table from gateway errors to HTTP statuses is ``gateway/error_status.py``
(beside ``gateway/errors.py``), shared with the web pages and ``gw admin``'s
exit codes.

Every error body has the same shape (``ErrorPublic``): ``error`` (a short
kind), ``detail`` (a message, or a list of field issues with ``loc``, ``msg``
and the offending ``input``, cut to a readable length).
"""

from __future__ import annotations

import logging
import math
import reprlib

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway.core.spec.errors import unknown_field_message
from gateway.core.spec.fields import secret_input
from gateway.error_status import HTTP_KINDS, allowed_methods, status_for
from gateway.errors import BatchRejected, GatewayError, SpecError, Throttled

log = logging.getLogger(__name__)

MAX_INPUT_CHARS = 200  # an echoed input (or a key in a loc) is cut to this
MAX_MESSAGE_CHARS = 2000  # a message is cut to this (ours quote values)
_ECHO_ITEMS = 20  # a list or mapping is echoed as it is up to this many values in all, 3 levels deep
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 3, 60, 60


def safe_text(text: str, limit: int = MAX_INPUT_CHARS) -> str:
    """``text`` cut to ``limit`` (saying its length), with lone surrogates spelled out so it encodes."""
    length = len(text)
    text = text[: limit + 1].encode("utf-8", "backslashreplace").decode("utf-8")
    return text[:limit] + f"... ({length} characters)" if len(text) > limit else text


def safe_input(value: object) -> object:
    """A short, JSON-safe stand-in for an input echoed in an error; it never raises.

    Strings are cut (``safe_text``); NaN and the infinities become the
    strings "NaN", "Infinity", "-Infinity"; bytes say their length; an
    integer longer than 18 digits says its length; a list or mapping stays as
    it is when small and shallow, else becomes a cut text of its start.
    """
    # An echo must never turn a 4xx into a 500: whatever fails here, a short text goes back.
    try:
        return _plain(value, [_ECHO_ITEMS], 0)
    except _TooBig:
        pass
    except Exception:  # noqa: BLE001
        return f"(a {type(value).__name__} that cannot be shown)"
    try:
        return safe_text(_REPR.repr(value))
    except Exception:  # noqa: BLE001
        return f"(a {type(value).__name__} that cannot be shown)"


class _TooBig(Exception):
    pass


def _plain(value: object, budget: list[int], depth: int) -> object:
    budget[0] -= 1
    if budget[0] < 0 or depth > 3:
        raise _TooBig
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -(10**18) < value < 10**18:
            return value
        return f"(an integer of about {value.bit_length() * 3 // 10} digits)"
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bytes | bytearray):
        return f"({len(value)} bytes)"
    if isinstance(value, dict):
        return {safe_text(str(k)): _plain(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, budget, depth + 1) for v in value]
    raise _TooBig  # anything else (a set, a date ...): its repr, cut


def gateway_error_body(exc: GatewayError) -> tuple[int, dict]:
    status, kind = status_for(exc)
    if isinstance(exc, SpecError):
        detail: object = [
            {
                "loc": [exc.location, *[safe_text(p) for p in issue.path.split(".") if p]],
                "msg": safe_text(issue.message, MAX_MESSAGE_CHARS),
                "input": safe_input(issue.value),
            }
            for issue in exc.issues
        ]
    else:
        detail = safe_text(str(exc), MAX_MESSAGE_CHARS)
    body: dict = {"error": kind, "detail": detail}
    run_id = getattr(exc, "run_id", None)
    if run_id:
        body["run_id"] = run_id
    if isinstance(exc, BatchRejected):  # every refused item, with its index and its own error body
        body["items"] = [
            {"index": index, "status": item_status, "error": item_body}
            for index, (item_status, item_body) in ((i, item_error_body(e)) for i, e in exc.items)
        ]
    return status, body


def item_error_body(exc: GatewayError) -> tuple[int, dict]:
    """A batch item's error as an error body, the item's index in ``loc`` a number:
    ``["body", "items", 3, "spec", "resources", "mem_gb"]``."""
    status, body = gateway_error_body(exc)
    if isinstance(body["detail"], list):
        for issue in body["detail"]:
            loc = issue["loc"]
            issue["loc"] = [
                int(p) if isinstance(p, str) and p.isdigit() and i > 0 and loc[i - 1] == "items" else p
                for i, p in enumerate(loc)
            ]
    return status, body


def install_error_handlers(app: FastAPI) -> None:
    """The handlers that give every error the gateway's shape (``ErrorPublic``)."""

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Starlette's own answers (no such path, a method the path does not take) in our shape. Its 405
        # names only the methods of the first route matching the path; ours names those of all of them.
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request.app, request.scope))
        kind = HTTP_KINDS.get(exc.status_code, "http_error")
        body = {"error": kind, "detail": safe_text(str(exc.detail), MAX_MESSAGE_CHARS)}
        return JSONResponse(body, status_code=exc.status_code, headers=headers)

    @app.exception_handler(GatewayError)
    async def _gateway_error(_request: Request, exc: GatewayError) -> JSONResponse:
        status, body = gateway_error_body(exc)
        if status >= 500:
            log.error("request failed: %s", exc, exc_info=status == 500)
        headers = {"Retry-After": "5"} if status == 503 else None
        if isinstance(exc, Throttled):
            headers = {"Retry-After": str(exc.retry_after_s)}
        return JSONResponse(body, status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        issues = []
        route = request.scope.get("route")
        body_field = getattr(route, "body_field", None)
        body_model = body_field.field_info.annotation if body_field is not None else None
        for err in exc.errors():
            loc = list(err.get("loc", ()))
            message = str(err.get("msg", "")).removeprefix("Value error, ")
            if err.get("type") == "extra_forbidden" and loc[:1] == ["body"]:
                message = unknown_field_message(tuple(loc[1:-1]), body_model, given=str(loc[-1]))
            issues.append(
                {
                    "loc": [safe_text(p) if isinstance(p, str) else p for p in loc],
                    "msg": safe_text(message, MAX_MESSAGE_CHARS),
                    # a secret-looking param's refusal never echoes the would-be secret
                    "input": None if secret_input(message) else safe_input(err.get("input")),
                }
            )
        return JSONResponse({"error": "invalid_request", "detail": issues}, status_code=422)
