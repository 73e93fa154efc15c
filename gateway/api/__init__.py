"""The REST API (FastAPI): thin routes over the services."""

from gateway.api.app import create_app

__all__ = ["create_app"]
