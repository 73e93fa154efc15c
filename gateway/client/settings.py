"""What the ``gw`` CLI reads to reach the API: ``GW_*`` variables over ``~/.config/gw/config.toml``.

Kept apart from the server's ``gateway.settings``: the CLI starts without the
server's fields, and without pydantic. Four values, each checked here with an
error that names where it came from; pydantic and pydantic-settings cost
about 150 ms of every ``gw`` command's start (``python -X importtime``,
docs/performance.md), more than the request itself.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

CLIENT_CONFIG_FILE = Path.home() / ".config" / "gw" / "config.toml"


class ClientSettingsError(ValueError):
    """A setting of the client that cannot be used: which one, where it came from, what is valid."""


@dataclass(frozen=True)
class ClientSettings:
    """What the ``gw`` CLI needs to reach the API.

    Read from ``GW_URL``, ``GW_TOKEN``, ``GW_TIMEOUT_S`` and ``GW_PROJECT``
    (environment wins), else from ``~/.config/gw/config.toml`` (``GW_CONFIG``
    names another file) with keys ``url``, ``token``, ``timeout_s`` and
    ``project``; other keys in the file are ignored.
    """

    url: str = "http://127.0.0.1:8000"  # base URL of the gateway API
    token: str | None = None  # API token (sent as a Bearer token)
    timeout_s: float = 30.0  # HTTP timeout of one request, > 0
    project: str | None = None  # gw sbatch's project when neither -A nor #SBATCH -A gives one

    def __post_init__(self) -> None:
        _check_timeout(self.timeout_s, "ClientSettings")
        _check_url(self.url, "ClientSettings")

    def with_timeout(self, timeout_s: float) -> ClientSettings:
        """These settings with another request time-out."""
        return replace(self, timeout_s=timeout_s)

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> ClientSettings:
        """The CLI's settings: the config file (``GW_CONFIG``, default ``~/.config/gw/config.toml``)
        where it exists, each ``GW_*`` variable set in the environment over it.

        ClientSettingsError for a value that cannot be used, or a config file that is not TOML.
        """
        environ = os.environ if environ is None else environ
        path = Path(environ.get("GW_CONFIG", CLIENT_CONFIG_FILE))
        names = [f.name for f in fields(cls)]
        values: dict[str, Any] = {}
        where: dict[str, str] = {}
        if path.is_file():
            import tomllib

            try:
                with path.open("rb") as handle:
                    loaded = tomllib.load(handle)
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ClientSettingsError(f"{path}: not a readable TOML file ({exc})") from exc
            for name in names:
                if name in loaded:
                    values[name], where[name] = _typed(name, loaded[name], f"{path}: {name}"), str(path)
        for name in names:
            variable = f"GW_{name.upper()}"
            if variable in environ:
                values[name], where[name] = _from_environment(name, variable, environ[variable]), variable
        _check_timeout(values.get("timeout_s", cls.timeout_s), where.get("timeout_s", "the default"))
        _check_url(values.get("url", cls.url), where.get("url", "the default"))
        return cls(**values)


def token_origin(environ: Mapping[str, str] | None = None) -> str:
    """Where ``gw`` took its token from, or why it has none, in words (for a refused request).

    ``GW_TOKEN``; else the config file's ``token``; a ``GW_CONFIG`` that names a missing file is
    named as such, since the token it was meant to hold then never reaches the request.
    """
    environ = os.environ if environ is None else environ
    if environ.get("GW_TOKEN"):
        return "the token came from GW_TOKEN"
    named = "GW_CONFIG" in environ
    path = Path(environ.get("GW_CONFIG", CLIENT_CONFIG_FILE))
    if not path.exists():
        if named:
            return f"no token was sent: GW_CONFIG names {path}, which does not exist (and GW_TOKEN is unset)"
        return f"no token was sent: GW_TOKEN is unset and there is no {path}"
    try:
        import tomllib

        with path.open("rb") as handle:
            has_token = bool(tomllib.load(handle).get("token"))
    except (OSError, ValueError):
        has_token = False
    if has_token:
        return f"the token came from {path}"
    return f"no token was sent: {path} holds no token (and GW_TOKEN is unset)"


def _from_environment(name: str, variable: str, raw: str) -> Any:
    if name == "timeout_s":
        try:
            return float(raw)
        except ValueError:
            raise ClientSettingsError(
                f"{variable}={raw!r}: the request time-out must be a number of seconds above 0"
            ) from None
    return raw


def _typed(name: str, value: Any, source: str) -> Any:
    """A config file's value when it has its setting's type (a number for timeout_s, else a string)."""
    if name == "timeout_s":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ClientSettingsError(
                f"{source} = {value!r}: the request time-out must be a number of seconds"
            )
    elif not isinstance(value, str):
        raise ClientSettingsError(f"{source} = {value!r}: {name} must be a string")
    return value


def _check_timeout(timeout_s: Any, source: str) -> None:
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
        raise ClientSettingsError(f"{source}: timeout_s {timeout_s!r} is not a number of seconds")
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ClientSettingsError(
            f"{source}: timeout_s {timeout_s!r}: the request time-out must be a number of seconds above 0"
        )


def _check_url(url: Any, source: str) -> None:
    if not isinstance(url, str) or not url.strip():
        raise ClientSettingsError(
            f"{source}: url {url!r}: the gateway URL must be set, e.g. http://HOST:8000"
        )
