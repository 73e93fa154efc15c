"""The error answers every operation may give, documented once, in the OpenAPI description.

``document_errors`` runs over the generated description and adds, by one
rule each (docs/api.md, "The description and the server agree"):

- **401** to every operation that takes a token (it has ``security``), with
  **429** (failed sign-ins from this address or for this account: wait
  Retry-After seconds) and **400** (trusted-proxy mode: the user header sent
  more than once);
- **422** with the gateway's error shape (``ErrorPublic``: ``{"error":
  "invalid_request", "detail": [{loc, msg, input}, ...]}``) to every
  operation with parameters or a body, in place of FastAPI's default
  ``HTTPValidationError``, which this gateway never sends;
- **413** to every operation that takes a body (``BodyLimits``);
- **503** to every operation that reads the database (all but
  ``/healthz``, which answers 503 with its own body).

403, 404 and 409 depend on the route and are declared where they can happen.
"""

from __future__ import annotations

from typing import Any

# What a route's ``responses=`` takes: extra answers by status code.
Responses = dict[int | str, dict[str, Any]]

ERROR_SCHEMA = {"$ref": "#/components/schemas/ErrorPublic"}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR_SCHEMA}}}


UNAUTHORIZED = _error(
    "No valid identity: no token, or an unknown, expired or revoked one, or a disabled user "
    "(trusted-proxy mode: not from a trusted proxy, or no such user)"
)
INVALID = "Invalid request: `detail` lists each issue with its field path (`loc`), what is valid (`msg`)"
THROTTLED = {
    **_error(
        "Too many failed token checks lately from this address or for this token's account; the request "
        "was not tried: wait Retry-After seconds (docs/access.md, Sign-in backoff)"
    ),
    "headers": {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}},
}
BAD_REQUEST = _error("Trusted-proxy mode: the user header came more than once (none counts)")
UNAVAILABLE = _error("The database or Slurm does not answer; retry (Retry-After)")
BODY_TOO_LARGE = _error("The request body is larger than the gateway reads (GATEWAY_MAX_BODY_BYTES)")
# FastAPI's own validation-error schemas: no answer of this gateway has that shape.
_FASTAPI_DEFAULTS = ("HTTPValidationError", "ValidationError")


def document_errors(schema: dict[str, Any]) -> dict[str, Any]:
    """Add the shared error answers to every operation of ``schema`` (idempotent); returns it."""
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            responses = operation.setdefault("responses", {})
            takes_input = bool(operation.get("parameters")) or "requestBody" in operation
            if operation.get("security"):
                responses.setdefault("401", UNAUTHORIZED)
                responses.setdefault("429", THROTTLED)
                responses.setdefault("400", BAD_REQUEST)
                responses.setdefault("503", UNAVAILABLE)
            if "requestBody" in operation:
                responses.setdefault("413", BODY_TOO_LARGE)
            if takes_input:
                described = responses.get("422", {}).get("description")
                if not described or described == "Validation Error":  # FastAPI's default
                    described = INVALID
                responses["422"] = _error(described)
            else:
                responses.pop("422", None)
    components = schema.get("components", {}).get("schemas", {})
    if "ErrorPublic" not in components:
        raise RuntimeError("ErrorPublic is not in the OpenAPI components; a route must use it as a model")
    for name in _FASTAPI_DEFAULTS:
        components.pop(name, None)
    return schema
