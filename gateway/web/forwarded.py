"""The scheme a request came in with, from a TLS proxy in front: ``X-Forwarded-Proto``, trusted only
from ``Settings.forwarded_allow_ips`` (like uvicorn's forwarded-allow-ips), or ``Settings.public_https``.

``gw serve`` speaks plain HTTP; behind a TLS proxy every request it sees is
``http`` unless this says otherwise, and cookies set on an ``http`` request
(the web session, the CSRF nonce) would not be marked ``Secure``. Only the
scheme is taken from the proxy: the client address stays the TCP peer's, so
that trusted-proxy sign-in and the sign-in backoff never read a header a
client can write. A header from any other peer, or sent more than once, or
with another value than ``http``/``https``, is ignored.
"""

from __future__ import annotations

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def peer_in(networks: tuple[Network, ...] | list[Network], host: str | None) -> bool:
    """True when ``host`` (a TCP peer's address) is in one of ``networks``; a unix socket peer is not."""
    try:
        address = ipaddress.ip_address(host or "")
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # an IPv4 peer on a dual-stack socket
    return any(address in network for network in networks)


class ForwardedScheme:
    """Sets the ASGI scope's ``scheme`` to ``https`` when the public side of this request was TLS."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Rewrite the scheme (see the module docstring), then pass the request on."""
        if scope["type"] == "http" and scope.get("scheme") == "http":
            settings = scope["app"].state.services.settings
            if settings.public_https:
                scope["scheme"] = "https"
            elif settings.forwarded_allow_ips:
                protos = [v for k, v in scope["headers"] if k == b"x-forwarded-proto"]
                client = scope.get("client")
                if (
                    len(protos) == 1
                    and protos[0].strip().lower() in (b"http", b"https")
                    and peer_in(settings.forwarded_allow_ips, client[0] if client else None)
                ):
                    scope["scheme"] = protos[0].strip().lower().decode()
        await self.app(scope, receive, send)
