"""GET /metrics: the Prometheus exposition, for scrapers (the metrics token, from the allowed addresses)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from gateway.api.deps import ServicesDep
from gateway.api.schemas import ErrorPublic

router = APIRouter(tags=["metrics"])


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "The Prometheus text exposition format (docs/metrics.md lists every metric)",
        },
        403: {
            "model": ErrorPublic,
            "description": "No metrics token (or none configured), or not from GATEWAY_METRICS_ALLOW",
        },
    },
    summary="Prometheus metrics (for scrapers, not users)",
)
def metrics(request: Request, services: ServicesDep) -> Response:
    """The gateway's metrics; 403 unless with GATEWAY_METRICS_TOKEN (from GATEWAY_METRICS_ALLOW, if set).

    The token is read from the header here, not through the API's bearer scheme: this route takes
    no user token, so its description declares no security (and no 401).
    """
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    body, content_type = services.metrics.scrape(
        source=request.client.host if request.client else None,
        token=token.strip() if scheme.lower() == "bearer" and token.strip() else None,
    )
    return Response(content=body, media_type=content_type)
