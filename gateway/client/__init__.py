"""The gateway's Python client: HTTP transport, settings, the API client and its errors, and
``Gateway`` (``from gateway.client import Gateway``: runs as the gateway's own values, batches).

Used by ``gw``, ``gw poc`` and anyone writing Python against the gateway; it imports no server module.
``Gateway`` loads on first use, so that ``gw`` (which needs only ``client.api``) starts without the
run spec's pydantic models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.client.errors import ApiError
    from gateway.client.gateway import Batch, Gateway
    from gateway.client.values import BatchEntry, RunOutputs, RunSummary
    from gateway.client.waiting import WaitProgress, WaitTimeout

__all__ = [
    "ApiError",
    "Batch",
    "BatchEntry",
    "Gateway",
    "RunOutputs",
    "RunSummary",
    "WaitProgress",
    "WaitTimeout",
]


def __getattr__(name: str) -> Any:
    if name in ("Gateway", "Batch"):
        from gateway.client import gateway

        return getattr(gateway, name)
    if name in ("BatchEntry", "RunOutputs", "RunSummary"):
        from gateway.client import values

        return getattr(values, name)
    if name in ("WaitProgress", "WaitTimeout"):
        from gateway.client import waiting

        return getattr(waiting, name)
    if name == "ApiError":
        from gateway.client.errors import ApiError

        return ApiError
    raise AttributeError(f"module 'gateway.client' has no attribute {name!r}")
