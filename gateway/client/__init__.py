"""The gateway's Python client: HTTP transport, settings, the API client and its errors.

Used by ``gw``, ``gw poc`` and anyone writing Python against the gateway; it imports no server module."""
