"""The hand-off's settings as the services use them: plain values, built once by ``gateway.wiring``."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Endpoint:
    """A webhook receiver: its name, URL, shared secret, the event types and projects it wants."""

    name: str
    url: str
    secret: str
    events: tuple[str, ...]
    projects: tuple[str, ...] | None = None  # None: every project

    def wants(self, event_type: str, project: str) -> bool:
        """Whether this endpoint gets ``event_type`` events of ``project``."""
        return event_type in self.events and (self.projects is None or project in self.projects)


@dataclass(frozen=True)
class HandoffConfig:
    public_url: str = ""
    artifacts: str = "upload"  # upload | reference
    reference_uri: str = ""
    track_runs_since: datetime | None = None
    endpoints: tuple[Endpoint, ...] = ()
    webhook_timeout_s: float = 10.0
    max_attempts: int = 12
    backoff_s: float = 5.0
    backoff_cap_s: float = 3600.0
    batch: int = 50  # items worked per pass
    protected_only: bool = True  # mirror moves of aliases with a policy (protected) only

    def endpoint(self, name: str) -> Endpoint | None:
        """The endpoint of that name, if it is still configured."""
        return next((e for e in self.endpoints if e.name == name), None)
