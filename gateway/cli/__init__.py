"""The ``gw`` command: an HTTP client of the gateway API (plus ``gw serve`` and admin commands)."""
