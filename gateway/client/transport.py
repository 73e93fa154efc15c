"""HTTP from ``gw`` to the gateway: the standard library's ``http.client``, one kept-alive connection.

``gw`` sends a handful of small JSON requests per command and exits, so what
its HTTP costs is mostly the start: importing httpx took about 160 ms of every
``gw`` that talks to the server (``python -X importtime``), ``http.client``
about 20 ms; and a request to ``gw serve`` costs 0.45 ms of the client's CPU
against httpx's 1.40 (``GET /healthz``, 300 alternating, on 2026-12-02;
``docs/dependencies.md``). What ``gw`` needs of HTTP is here:

- ``http://`` and ``https://`` URLs with a path prefix (a gateway behind a
  reverse proxy at ``https://host/gw``); TLS verified against the system's
  certificate store (``ssl.create_default_context``);
- the ``HTTP(S)_PROXY``/``ALL_PROXY``/``NO_PROXY`` environment variables, as
  httpx and curl read them (a ``user:password@`` in the proxy URL is sent as
  proxy basic authentication);
- one connection kept alive across a command's requests (``gw wait`` polls,
  ``gw show`` makes three); one the server closed while idle (uvicorn does
  after 5 s) is noticed before reuse and replaced, so no request is sent on
  it;
- every failure to get an answer is a ``TransportError`` with what went
  wrong: the client turns it into status 0, "cannot reach the gateway".
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

from gateway.adapters.kept_alive import closed_by_peer


class TransportError(Exception):
    """No answer: the server takes no connection, TLS fails, the connection drops, or time ran out."""


class UnusableUrl(TransportError):
    """The gateway URL (or a proxy's) cannot be used: nothing was sent, and trying again cannot help."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        """The body as JSON (ValueError when it is not)."""
        return json.loads(self.body)

    @property
    def text(self) -> str:
        """The body as text (UTF-8, bad bytes replaced)."""
        return self.body.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class _Proxy:
    host: str
    port: int
    authorization: str | None  # the Proxy-Authorization header's value


def _query_value(value: Any) -> str:
    """A query value as httpx writes it: booleans lower-case, None empty (a list: the key repeated)."""
    if value is True or value is False:
        return "true" if value else "false"
    return "" if value is None else str(value)


def _proxy_for(scheme: str, host: str, environ: Mapping[str, str]) -> _Proxy | None:
    """The proxy the environment names for ``scheme://host``, or None (none set, or NO_PROXY).

    As urllib (and curl) read them: ``<scheme>_proxy`` or ``all_proxy``, the lower-case name first.
    """
    proxies: dict[str, str] = {}
    for name in sorted(environ, key=lambda n: n.islower()):  # lower-case names last: they win
        if name.lower().endswith("_proxy") and environ[name]:
            proxies[name.lower().removesuffix("_proxy")] = environ[name]
    url = proxies.get(scheme) or proxies.get("all")
    if not url:
        return None
    import urllib.request  # only when a proxy is set: it costs start-up time

    # undocumented, so not in the stubs; the no_proxy rule that urllib itself applies
    if urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]  # not in typeshed
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme != "http" or not parts.hostname:
        raise UnusableUrl(f"the {scheme} proxy {url!r} is not an http:// proxy URL (the only kind gw uses)")
    authorization = None
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode()
    return _Proxy(parts.hostname, parts.port or 80, authorization)


class Transport:
    """Requests to the API at ``url`` with ``headers`` on each; ``timeout_s`` for connecting and each read.

    Not thread-safe: one ``gw`` command, one thread.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        timeout_s: float,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.headers = dict(headers)
        self.timeout_s = timeout_s
        self._conn: http.client.HTTPConnection | None = None
        self._problem: str | None = None
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            self._problem = f"the gateway URL {url!r} is not a URL ({exc})"
            return
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self._problem = f"the gateway URL {url!r} is not an http:// or https:// URL"
            return
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = port or (443 if parts.scheme == "https" else 80)
        self.prefix = parts.path.rstrip("/")
        try:
            self.proxy = _proxy_for(self.scheme, self.host, os.environ if environ is None else environ)
        except UnusableUrl as exc:
            self._problem = str(exc)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Answer:
        """One request; its answer, whatever the status. Raises TransportError when none comes."""
        if self._problem is not None:
            raise UnusableUrl(self._problem)
        target = self.prefix + path
        if params:
            query = {
                k: [_query_value(x) for x in v] if isinstance(v, list | tuple) else _query_value(v)
                for k, v in params.items()
            }
            target += "?" + urlencode(query, doseq=True)
        sent = {**self.headers, **(headers or {})}
        if self.proxy is not None and self.scheme == "http":  # a plain-HTTP proxy takes the absolute URL
            target = f"http://{self._authority()}{target}"
            if self.proxy.authorization:
                sent["Proxy-Authorization"] = self.proxy.authorization
        body = None
        if json_body is not None:
            body = json.dumps(json_body).encode()
            sent["Content-Type"] = "application/json"
        conn = self._connection()
        try:
            conn.request(method, target, body=body, headers=sent)
            response = conn.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:  # refused, reset, TLS, time-out (OSError)
            self.close()
            raise TransportError(f"{exc.__class__.__name__}: {exc}") from exc
        if response.will_close:
            self.close()
        return Answer(response.status, data)

    def close(self) -> None:
        """Close the kept-alive connection (the next request opens another)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"

    def _connection(self) -> http.client.HTTPConnection:
        """The kept-alive connection when the server still holds it open, else a new one."""
        if self._conn is not None and closed_by_peer(self._conn):
            self.close()
        if self._conn is None:
            self._conn = self._new_connection()
        return self._conn

    def _new_connection(self) -> http.client.HTTPConnection:
        host, port = (self.proxy.host, self.proxy.port) if self.proxy else (self.host, self.port)
        if self.scheme == "http":
            return http.client.HTTPConnection(host, port, timeout=self.timeout_s)
        conn = http.client.HTTPSConnection(
            host, port, timeout=self.timeout_s, context=ssl.create_default_context()
        )
        if self.proxy is not None:
            tunnel_headers = (
                {"Proxy-Authorization": self.proxy.authorization} if self.proxy.authorization else {}
            )
            conn.set_tunnel(self.host, self.port, headers=tunnel_headers)
        return conn
