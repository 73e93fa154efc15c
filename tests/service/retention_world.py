"""A gateway of its own for the retention tests: a fresh database, a runs directory, one project with a
retention policy and its own Slurm account (so a sweep with a jumped clock touches no other test's runs).

Also the subprocess the kill -9 test runs (``python -m tests.service.retention_world URL RUNS_DIR
DAYS WHEN``): a real sweep with the clock DAYS ahead, killed (SIGKILL) ``before`` or ``after`` the run
host's first deletion.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from datetime import timedelta
from pathlib import Path

from gateway.adapters.runhost import Removal
from gateway.core.access.values import Principal
from gateway.core.clock import utcnow
from gateway.core.site.schema import parse_site
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services

PROJECT = "ret"
SITE = """
allow_root_mapping: true
users:
  - {{name: admin, os_user: root, admin: true}}
  - {{name: lead, os_user: root}}
  - {{name: mia, os_user: root}}
  - {{name: walt, os_user: root}}
retention:
  logs_days: 30
  unreleased_outputs_days: 60
  failed_run_days: 7
projects:
  - name: ret
    slurm_account: {account}
    members:
      - {{user: lead, role: lead}}
      - {{user: mia, role: member}}
      - {{user: walt, role: viewer}}
    queues: [{{name: cpu, partition: cpu}}]
    retention:
      space_limit_gb: {limit_gb}
      space_warn_percent: 50
      on_member_leave: {on_leave}
      left_member_days: 3
"""


def site(account: str, *, limit_gb: float = 1.0e-6, on_leave: str = "expire", drop: tuple[str, ...] = ()):
    """The test site; ``drop``: members left out of project ret (they leave it)."""
    text = SITE.format(account=account, limit_gb=limit_gb, on_leave=on_leave)
    lines = [line for line in text.splitlines() if not any(f"{{user: {u}," in line for u in drop)]
    return parse_site("\n".join(lines) + "\n")


def build(database_url: str, runs_dir: Path, **kwargs) -> Services:
    return build_services(Settings(database_url=database_url, runs_dir=runs_dir, **kwargs))


class KillingHost:
    """The real run host, with the process killing itself at its first deletion: ``before`` it
    (the intent is committed, nothing deleted) or ``after`` it (deleted, not yet recorded done)."""

    def __init__(self, host, when: str) -> None:
        self.host = host
        self.when = when

    def __getattr__(self, name):
        return getattr(self.host, name)

    def remove_path(self, run_dir: str, rel: str, *, kind: str, as_user: str) -> Removal:
        if self.when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        removal = self.host.remove_path(run_dir, rel, kind=kind, as_user=as_user)
        os.kill(os.getpid(), signal.SIGKILL)
        return removal


def main() -> None:
    database_url, runs_dir, days, when = sys.argv[1:5]
    services = build(database_url, Path(runs_dir))
    sweeper = services.retention
    sweeper.host = KillingHost(sweeper.host, when)
    sweeper.clock = lambda: utcnow() + timedelta(days=float(days))
    sweeper.sweep(Principal.operator(), project=PROJECT)
    print("not killed", file=sys.stderr)
    sys.exit(3)


def new_account() -> str:
    return f"gwr{uuid.uuid4().hex[:10]}"


if __name__ == "__main__":
    main()
