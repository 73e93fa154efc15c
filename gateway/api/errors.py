"""The one table from gateway errors to HTTP statuses, and the handlers that use it.

Every error body has the same shape (``ErrorPublic``): ``error`` (a short
kind), ``detail`` (a message, or a list of field issues with ``loc``, ``msg``
and the offending ``input``, cut to a readable length).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from gateway.core.spec_errors import unknown_field_message
from gateway.errors import (
    Conflict,
    Forbidden,
    GatewayError,
    NotFound,
    QuotaExceeded,
    SlurmError,
    SlurmUnavailable,
    SpecError,
    StoreError,
    StoreUnavailable,
    SubmitRejected,
    TemplateError,
    Unauthorized,
)

log = logging.getLogger(__name__)

# Most specific first: the first class an error is an instance of decides.
STATUS_TABLE: list[tuple[type[GatewayError], int, str]] = [
    (SpecError, 422, "invalid_request"),
    (SubmitRejected, 422, "submit_rejected"),
    (Unauthorized, 401, "unauthorized"),
    (Forbidden, 403, "forbidden"),
    (QuotaExceeded, 422, "quota_exceeded"),
    (NotFound, 404, "not_found"),
    (Conflict, 409, "conflict"),
    (StoreUnavailable, 503, "database_unavailable"),
    (SlurmUnavailable, 503, "slurm_unavailable"),
    (SlurmError, 502, "slurm_error"),
    (StoreError, 500, "database_error"),
    (TemplateError, 500, "template_error"),
    (GatewayError, 500, "gateway_error"),
]

MAX_INPUT_CHARS = 200


def status_for(exc: GatewayError) -> tuple[int, str]:
    for cls, status, kind in STATUS_TABLE:
        if isinstance(exc, cls):
            return status, kind
    return 500, "gateway_error"


def _short(value: object) -> object:
    if isinstance(value, str | bytes) and len(value) > MAX_INPUT_CHARS:
        return value[:MAX_INPUT_CHARS] + f"... ({len(value)} characters)"
    if isinstance(value, dict | list) and len(repr(value)) > MAX_INPUT_CHARS:
        return repr(value)[:MAX_INPUT_CHARS] + "..."
    return value


def gateway_error_body(exc: GatewayError) -> tuple[int, dict]:
    status, kind = status_for(exc)
    if isinstance(exc, SpecError):
        detail: object = [
            {
                "loc": [exc.location, *[p for p in issue.path.split(".") if p]],
                "msg": issue.message,
                "input": _short(issue.value),
            }
            for issue in exc.issues
        ]
    else:
        detail = str(exc)
    body = {"error": kind, "detail": detail}
    run_id = getattr(exc, "run_id", None)
    if run_id:
        body["run_id"] = run_id
    return status, body


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(GatewayError)
    async def _gateway_error(_request: Request, exc: GatewayError) -> JSONResponse:
        status, body = gateway_error_body(exc)
        if status >= 500:
            log.error("request failed: %s", exc, exc_info=status == 500)
        headers = {"Retry-After": "5"} if status == 503 else None
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
                message = unknown_field_message(tuple(loc[1:-1]), body_model)
            issues.append({"loc": loc, "msg": message, "input": _short(err.get("input"))})
        return JSONResponse({"error": "invalid_request", "detail": issues}, status_code=422)
