"""The one table from gateway errors to HTTP statuses (and error kinds), beside ``gateway/errors.py``.

The interfaces map errors to statuses through it and nothing else: the API's
handlers (``gateway/api/errors.py``), the web pages (``gateway/web/app.py``)
and ``gw admin``'s exit codes (``gateway/cli/server/admin_cmds.py``), so none
of them imports another.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Match
from starlette.types import Scope

from gateway.errors import (
    BadRequest,
    BatchRejected,
    Conflict,
    Forbidden,
    GatewayError,
    HandoffError,
    NotFound,
    QuotaExceeded,
    RunHostError,
    RunHostUnavailable,
    SlurmError,
    SlurmUnavailable,
    SpecError,
    StoreError,
    StoreUnavailable,
    SubmitRejected,
    TemplateError,
    Throttled,
    Unauthorized,
)

# Most specific first: the first class an error is an instance of decides.
STATUS_TABLE: list[tuple[type[GatewayError], int, str]] = [
    (SpecError, 422, "invalid_request"),
    (SubmitRejected, 422, "submit_rejected"),
    (BatchRejected, 422, "batch_rejected"),
    (BadRequest, 400, "bad_request"),
    (Unauthorized, 401, "unauthorized"),
    (Throttled, 429, "too_many_attempts"),
    (Forbidden, 403, "forbidden"),
    (QuotaExceeded, 422, "quota_exceeded"),
    (NotFound, 404, "not_found"),
    (Conflict, 409, "conflict"),
    (StoreUnavailable, 503, "database_unavailable"),
    (SlurmUnavailable, 503, "slurm_unavailable"),
    (SlurmError, 502, "slurm_error"),
    (RunHostUnavailable, 503, "run_host_unavailable"),
    (RunHostError, 502, "run_host_error"),
    (HandoffError, 502, "handoff_error"),
    (StoreError, 500, "database_error"),
    (TemplateError, 500, "template_error"),
    (GatewayError, 500, "gateway_error"),
]


def status_for(exc: GatewayError) -> tuple[int, str]:
    """The HTTP status and error kind of ``exc``: the first row of ``STATUS_TABLE`` it is an instance of."""
    for cls, status, kind in STATUS_TABLE:
        if isinstance(exc, cls):
            return status, kind
    return 500, "gateway_error"


HTTP_KINDS = {404: "not_found", 405: "method_not_allowed"}


def allowed_methods(app: Starlette, scope: Scope) -> list[str]:
    """Every method some route of ``app`` answers at this request's path (for a 405's ``Allow``)."""
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)
