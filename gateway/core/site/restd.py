"""A cluster's site-run slurmrestd in the site file (``clusters[].restd``, docs/clusters.md).

The site runs the daemon (rest_auth/jwt) and the gateway reaches it at ``url``: ``http://HOST:PORT``
(plain HTTP: keep it on loopback or a trusted network) or ``unix:///PATH``; it signs each user's
token with the HS256 key in ``jwt_key`` (the file slurmctld's ``AuthAltParameters=jwt_key=`` names).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.core.described import anchored, documented
from gateway.core.site.clusters import ClusterRestd

_HTTP = re.compile(
    r"http://(?P<host>[A-Za-z0-9][A-Za-z0-9.-]{0,252}|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})/?"
)
_UNIX = re.compile(r"unix://(?P<path>/[^\x00-\x1f\s]{1,4095})")
URL_HELP = (
    "http://HOST:PORT (e.g. http://127.0.0.1:6830, no path, no user@; https is not supported: keep the "
    "daemon on loopback or a trusted network) or unix:///PATH (e.g. unix:///run/slurmrestd/slurmrestd.sock)"
)
# the two forms for the JSON schema (no named groups there); the port's range is the validator's alone
_URL_PATTERN = anchored(re.sub(r"\?P<\w+>", "", f"{_HTTP.pattern}|{_UNIX.pattern}"))
_KEY = re.compile(r"/[^\x00-\x1f]{1,4095}")
_KEY_HELP = "the absolute path of the HS256 key file on the gateway's host (the jwt_key slurm.conf names)"


def parse_url(url: str) -> tuple[str, int] | str:
    """(host, port) of an ``http://`` url, or the socket path of a ``unix://`` one; ValueError saying
    what is valid otherwise."""
    http = _HTTP.fullmatch(url)
    if http is not None:
        port = int(http["port"])
        if not 1 <= port <= 65535:
            raise ValueError(f"port {port} of {_shown(url)} is not 1-65535")
        return http["host"].strip("[]"), port
    unix = _UNIX.fullmatch(url)
    if unix is not None:
        return unix["path"]
    raise ValueError(f"{_shown(url)} is not a slurmrestd address; use {URL_HELP}")


def _shown(url: str) -> str:
    """``url`` quoted for a message, at most 80 characters of it."""
    return repr(url) if len(url) <= 80 else f"{url[:80]!r}..."


class RestdSpec(BaseModel):
    """The site-run slurmrestd of one cluster, and how the gateway authenticates to it."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    url: Annotated[str, Field(max_length=4200), documented(pattern=_URL_PATTERN)]
    jwt_key: Annotated[str, Field(max_length=4096), documented(pattern=anchored(_KEY))]
    # each token's life; a fresh one is signed when half of it is gone (Slurm checks exp, not iat)
    token_lifespan_s: Annotated[int, Field(ge=30, le=86400)] = 300

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parse_url(value)
        return value

    @field_validator("jwt_key")
    @classmethod
    def _key(cls, value: str) -> str:
        if not _KEY.fullmatch(value):
            raise ValueError(f"not an absolute file path; give {_KEY_HELP}")
        return value

    def domain(self) -> ClusterRestd:
        """This daemon as the domain's ``ClusterRestd``."""
        return ClusterRestd(self.url, self.jwt_key, self.token_lifespan_s)
