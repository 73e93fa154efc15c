"""The ``gw`` command: an HTTP client of the gateway API (``gateway.client``), importing no server
module; ``gw serve`` and ``gw admin``, which run on the gateway host, live apart in ``cli/server/``.
"""
