"""How ``gw serve`` runs: one process, or several uvicorn workers built from an app factory.

With ``--workers N`` uvicorn starts N processes; each imports ``serve_app`` below, reads the
``GATEWAY_*`` settings from the environment it inherited, and builds its own services (engine,
access cache, Slurm backend) in its lifespan. What keeps them correct together:

- the database schema is upgraded once, by the parent, before any worker starts;
- every worker runs the periodic scheduler, but only the holder of the ``scheduler`` lease
  (``gateway/store/lease.py``) does the refresh, reconcile and retries;
- each worker's access cache checks the database's access generation on every read, so an
  ``apply`` or a revoke seen by one worker is seen by all;
- the web session key must be the same in every worker: unset, the parent draws one random
  key for this run and hands it to the workers through the environment;
- logging is configured in every worker by uvicorn's ``log_config`` (``log_config`` below): a
  worker is a fresh interpreter, and the gateway's own loggers would otherwise say nothing there;
- SQLite allows one writer at a time and the gateway queues its writers per process only:
  more than one worker on SQLite is refused (PostgreSQL is the multi-process case).
"""

from __future__ import annotations

import copy
import os
import secrets
from typing import Any

WEB_KEY_ENV = "GATEWAY_WEB_SESSION_KEY"


def serve_app() -> Any:  # noqa: ANN401 - an ASGI application (Starlette)
    """The ASGI application of one ``gw serve`` worker (uvicorn calls it with ``factory=True``).

    Reads the settings from the environment; the schema is not upgraded here (the parent did).
    """
    from gateway.api import create_app
    from gateway.settings import Settings
    from gateway.web import mount_web

    return mount_web(create_app(Settings(), run_scheduler=True, upgrade=False))


def workers_problem(database_url: str, workers: int) -> str | None:
    """Why ``workers`` server processes cannot share this database, or None when they can."""
    if workers > 1 and database_url.startswith("sqlite"):
        return (
            f"--workers {workers} needs PostgreSQL: SQLite takes one writer at a time and the gateway "
            "queues its writers within one process only. Use --workers 1 with SQLite, or set "
            "GATEWAY_DATABASE_URL to a postgresql+psycopg:// URL"
        )
    return None


def share_web_key(workers: int, configured: bool) -> None:
    """With several workers and no configured web session key, one random key for all of them.

    Each worker would otherwise draw its own, and a session signed by one would be refused by the
    next. Set in this process's environment, which the workers inherit; a restart still signs
    everyone out, as with one process.
    """
    if workers > 1 and not configured:
        os.environ[WEB_KEY_ENV] = secrets.token_hex(32)


def log_config(log_level: str) -> dict[str, Any]:
    """uvicorn's logging configuration plus the gateway's own loggers (the root) at ``log_level``.

    uvicorn applies it in each worker process as it starts, and in the parent.
    """
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["formatters"]["gateway"] = {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}
    config["handlers"]["gateway"] = {
        "class": "logging.StreamHandler",
        "formatter": "gateway",
        "stream": "ext://sys.stderr",
    }
    config["root"] = {"handlers": ["gateway"], "level": log_level.upper()}
    return config
