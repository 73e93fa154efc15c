"""A slurmrestd the site runs (rest_auth/jwt), reached at a URL, each request as its user by a token.

Where ``RestDaemons`` starts one rest_auth/local daemon per OS user, a site-run daemon serves every
user: each request carries ``X-SLURM-USER-NAME`` and ``X-SLURM-USER-TOKEN``, a JSON Web Token
(HS256, RFC 7519) whose ``sun`` claim is that user, signed here with the cluster's key (the file
slurm.conf's ``AuthAltParameters=jwt_key=`` names) and living ``token_lifespan_s``. slurmctld and
slurmdbd verify it and act as that user, so a job is its mapped user's and a query or cancel is the
query user's, as with the gateway's own daemons.

Tokens are made with the standard library (``hmac``, ``hashlib``, ``base64``: docs/dependencies.md),
kept per user until half their life is gone, and never appear in an error, a log or a record. A
key file that cannot be read, a daemon that takes no connection or refuses the token: the cluster
is unavailable (``SlurmUnavailable``), its jobs' states unknown, never failed.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from pathlib import Path
from typing import Any

from gateway.adapters.slurm.rest_http import RestConnection
from gateway.core import names
from gateway.core.site.clusters import ClusterRestd
from gateway.core.site.restd import parse_url
from gateway.errors import SlurmUnavailable, SubmitRejected


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def sign_token(key: bytes, user: str, *, now_s: int, lifespan_s: int) -> str:
    """An HS256 JWT for ``user`` (claims ``sun``, ``iat``, ``exp``), as ``scontrol token`` makes."""
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"iat": now_s, "exp": now_s + lifespan_s, "sun": user}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signature = hmac.new(key, f"{header}.{payload}".encode("ascii"), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(signature)}"


class JwtTokens:
    """Short-lived tokens per user, signed with the key in ``key_path`` (read at each signing: a key
    rotated on disk is used from the next token on)."""

    def __init__(self, key_path: Path, *, lifespan_s: int = 300, cluster: str = "") -> None:
        self.key_path = key_path
        self.lifespan_s = lifespan_s
        self.cluster = cluster
        self._tokens: dict[str, tuple[str, float]] = {}  # user: (token, when to sign a fresh one)
        self._lock = threading.Lock()

    def token(self, user: str) -> str:
        """``user``'s token, signed now when none is held or half its life is gone.

        SlurmUnavailable naming the key file (never its content) when it cannot be read or is empty.
        """
        now = time.time()
        with self._lock:
            held = self._tokens.get(user)
            if held is not None and now < held[1]:
                return held[0]
        token = sign_token(self._key(), user, now_s=int(now), lifespan_s=self.lifespan_s)
        with self._lock:
            self._tokens[user] = (token, now + self.lifespan_s / 2)
        return token

    def forget(self) -> None:
        """Drop the tokens held (the daemon refused one: the key may have changed)."""
        with self._lock:
            self._tokens.clear()

    def _key(self) -> bytes:
        where = f"cluster {self.cluster}: " if self.cluster else ""
        try:
            key = self.key_path.read_bytes()
        except OSError as exc:
            raise SlurmUnavailable(
                f"{where}cannot read the JWT key file {self.key_path} (restd.jwt_key): {exc.strerror}; it "
                "must be readable by the gateway's user and be the key slurm.conf's AuthAltParameters names",
                command="slurmrestd",
            ) from exc
        if not key.strip():
            raise SlurmUnavailable(f"{where}the JWT key file {self.key_path} is empty", command="slurmrestd")
        return key


class _AsUser:
    """The site daemon's connection, each request carrying ``user``'s name and token."""

    def __init__(self, site: SiteRestd, user: str) -> None:
        self.site = site
        self.user = user

    def request(
        self, method: str, path: str, *, timeout_s: float, body: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        """``RestConnection.request`` as ``user``; an HTTP 401/403 (the token refused) drops the tokens
        held, so the next request signs fresh ones."""
        headers = {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self.site.tokens.token(self.user)}
        status, answer = self.site.http.request(method, path, timeout_s=timeout_s, body=body, headers=headers)
        if status in (401, 403):
            self.site.tokens.forget()
        return status, answer


class SiteRestd:
    """The site-run slurmrestd of one cluster, in the place of ``RestDaemons`` for ``SlurmRest``: the
    same ``connection``/``restart``/``close``, none of them starting or stopping a process."""

    def __init__(self, restd: ClusterRestd, *, cluster: str, connect_timeout_s: float = 2.0) -> None:
        self.url = restd.url
        address = parse_url(restd.url)
        if isinstance(address, str):
            self.http = RestConnection(Path(address), connect_timeout_s=connect_timeout_s)
        else:
            self.http = RestConnection(tcp=address, connect_timeout_s=connect_timeout_s)
        self.tokens = JwtTokens(Path(restd.jwt_key), lifespan_s=restd.token_lifespan_s, cluster=cluster)

    def connection(self, user: str) -> _AsUser:
        """Requests as ``user``; SubmitRejected for a name that is no OS user name or for root (a root
        token would act as root on the cluster: map the user to their own account)."""
        if not names.NAME.fullmatch(user):
            raise SubmitRejected(f"{user!r} is not an OS user name", command="slurmrestd")
        if user == "root":
            raise SubmitRejected(
                f"the gateway does not act as root through slurmrestd at {self.url}: map the user to their "
                "own OS account",
                command="slurmrestd",
            )
        return _AsUser(self, user)

    def restart(self, user: str) -> _AsUser:
        """The site runs the daemon: nothing to restart; the same requests once more."""
        return self.connection(user)

    def close(self) -> None:
        """Close the kept-alive connections (the site's daemon keeps running)."""
        self.http.close()
