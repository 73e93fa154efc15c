"""What the ``gw`` CLI reads to reach the API: ``GW_*`` variables over ``~/.config/gw/config.toml``.

Kept apart from the server's ``gateway.settings``: the CLI starts without the server's fields.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

CLIENT_CONFIG_FILE = Path.home() / ".config" / "gw" / "config.toml"


class ClientSettings(BaseSettings):
    """What the ``gw`` CLI needs to reach the API.

    Read from ``GW_URL`` and ``GW_TOKEN`` (environment wins), else from
    ``~/.config/gw/config.toml`` (``GW_CONFIG`` names another file) with keys
    ``url``, ``token``, ``timeout_s`` and ``project``.
    """

    model_config = SettingsConfigDict(env_prefix="GW_", extra="ignore")

    url: str = Field(default="http://127.0.0.1:8000", description="Base URL of the gateway API.")
    token: str | None = Field(default=None, description="API token (sent as a Bearer token).")
    timeout_s: float = Field(default=30.0, gt=0, description="HTTP timeout of one request.")
    project: str | None = Field(
        default=None, description="Default project of gw sbatch when neither -A nor #SBATCH -A gives one."
    )

    @classmethod
    def load(cls) -> ClientSettings:
        """The CLI's settings: the config file (``GW_CONFIG``, default ``~/.config/gw/config.toml``)
        where it exists, each ``GW_*`` variable set in the environment over it. ValidationError for a
        bad value.
        """
        import os
        import tomllib

        path = Path(os.environ.get("GW_CONFIG", CLIENT_CONFIG_FILE))
        values = {}
        if path.is_file():
            with path.open("rb") as handle:
                values = {k: v for k, v in tomllib.load(handle).items() if k in cls.model_fields}
        env = cls()  # environment (and defaults)
        explicit = {k for k in cls.model_fields if f"GW_{k.upper()}" in os.environ}
        merged = {**values, **{k: getattr(env, k) for k in explicit}}
        settings = cls.model_validate({**env.model_dump(), **merged})
        return settings
