"""Who may call the gateway, and from where (``GATEWAY_AUTH_MODE``, ``GATEWAY_TRUSTED_*``,
``GATEWAY_FORWARDED_ALLOW_IPS``, ``GATEWAY_PUBLIC_HTTPS``, ``GATEWAY_METRICS_*``, ``GATEWAY_WEB_SESSION_*``):
one group of fields that ``gateway.settings.Settings`` inherits, so that every variable is still declared
once and read through the one ``Settings`` class (docs/access.md, docs/configuration.md).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any, Literal, Self

from pydantic import Field, IPvAnyNetwork, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict


class AccessSettings(BaseSettings):
    """Sign-in (tokens or a trusted front end), TLS proxies, the metrics scrape and web sessions."""

    model_config = SettingsConfigDict(env_prefix="GATEWAY_", extra="ignore")

    auth_mode: Literal["token", "trusted_proxy"] = Field(
        default="token",
        description=(
            "token: every request carries `Authorization: Bearer <token>`. trusted_proxy: a front end "
            "that authenticated the user sends their name in `trusted_user_header`, and only requests "
            "from `trusted_proxies` may; bind the gateway where only that front end can reach it too."
        ),
    )
    trusted_user_header: str = Field(
        default="X-Remote-User", description="The header a trusted front end puts the user name in."
    )
    trusted_proxies: Annotated[list[IPvAnyNetwork], NoDecode] = Field(
        default_factory=list,
        description=(
            "trusted_proxy mode: the front ends' addresses or networks, comma-separated "
            "(10.0.0.5,10.0.1.0/24,::1). A request from anywhere else gets 401, whatever header it "
            "sends. Required in that mode; `gw serve` refuses to start without it."
        ),
    )
    forwarded_allow_ips: Annotated[list[IPvAnyNetwork], NoDecode] = Field(
        default_factory=list,
        description=(
            "The TLS proxies in front of `gw serve` whose X-Forwarded-Proto counts (addresses or networks, "
            "comma-separated, like uvicorn's forwarded-allow-ips); empty: nobody's. A request they mark "
            "https gets Secure cookies. Only the scheme is taken, never X-Forwarded-For."
        ),
    )
    public_https: bool = Field(
        default=False,
        description=(
            "The gateway's public URL is https (a TLS proxy in front): every request counts as https, so the "
            "web session and CSRF cookies are always Secure, whoever forwarded it."
        ),
    )
    metrics_allow: Annotated[list[IPvAnyNetwork], NoDecode] = Field(
        default_factory=list,
        description=(
            "Where the metrics token may be used from: addresses or networks, comma-separated "
            "(10.0.0.7,10.0.2.0/24); empty: any address. An address alone never opens GET /metrics (on a "
            "host where jobs run, any job can connect from 127.0.0.1). The TCP peer counts, never "
            "X-Forwarded-For."
        ),
    )
    metrics_token: SecretStr | None = Field(
        default=None,
        description=(
            "The token a scraper sends as `Authorization: Bearer <token>` to read GET /metrics (at least 16 "
            "characters); unset: nobody reads it. Not a user token: user tokens do not open /metrics."
        ),
    )
    web_session_key: SecretStr | None = Field(
        default=None,
        description=(
            "The key web session cookies and CSRF tokens are signed with (at least 32 characters, e.g. "
            "`openssl rand -hex 32`). Unset: a random key per `gw serve` process (a restart signs "
            "everyone out)."
        ),
    )
    web_session_ttl_s: float = Field(
        default=8 * 3600, gt=0, le=30 * 86400, description="How long a web sign-in lasts, in seconds."
    )

    @field_validator("trusted_proxies", "metrics_allow", "forwarded_allow_ips", mode="before")
    @classmethod
    def _networks(cls, value: Any) -> Any:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            return value
        networks = []
        for item in items:
            if isinstance(item, str):
                text = item.strip()
                if not text:
                    continue
                try:
                    item = ipaddress.ip_network(text)
                except ValueError as exc:
                    raise ValueError(
                        f"{text!r} is not an IP address or network ({exc}); give addresses or "
                        "networks separated by commas, e.g. 10.0.0.5,10.0.1.0/24,::1"
                    ) from exc
            networks.append(item)
        return networks

    @field_validator("metrics_token")
    @classmethod
    def _long_metrics_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError(
                f"the metrics token has {len(value.get_secret_value())} characters; give at least 16 "
                "(e.g. `openssl rand -hex 24`), or leave it unset to close GET /metrics"
            )
        return value

    @field_validator("web_session_key")
    @classmethod
    def _long_web_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 32:
            raise ValueError("the web session key needs at least 32 characters (`openssl rand -hex 32`)")
        return value

    @model_validator(mode="after")
    def _proxies_for_trusted_mode(self) -> Self:
        if self.auth_mode == "trusted_proxy" and not self.trusted_proxies:
            raise ValueError(
                "auth_mode trusted_proxy needs trusted_proxies (GATEWAY_TRUSTED_PROXIES): the addresses "
                f"of the front ends allowed to send {self.trusted_user_header}, e.g. 10.0.0.5 or "
                "10.0.1.0/24; without them anyone who can reach the port could claim to be any user"
            )
        return self
