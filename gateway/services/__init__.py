"""Services: what the API, the web pages, the CLI and the scheduler jobs all call.

``build_services(settings)`` wires the database, the Slurm backend and the
template environment once; interfaces hold on to the returned ``Services``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmBackend, SlurmCLI
from gateway.adapters.slurm.accounts import SlurmAccounts
from gateway.core.render import build_template_env
from gateway.services.auth import AuthService
from gateway.services.datasets import DatasetService
from gateway.services.lineage import LineageService
from gateway.services.outputs import OutputHarvester
from gateway.services.refresh import Refresher
from gateway.services.retry import RetryService
from gateway.services.runs import RunService
from gateway.services.site import SiteService
from gateway.services.slurm_sync import SlurmSync
from gateway.services.usage import UsageService
from gateway.services.waiting import WaitingService
from gateway.settings import Settings
from gateway.store import Database, RunStore
from gateway.store.access import AccessStore
from gateway.store.audit import AuditStore
from gateway.store.datasets import DatasetStore
from gateway.store.lineage import LineageStore


@dataclass
class Services:
    settings: Settings
    db: Database
    slurm: SlurmBackend
    templates: jinja2.Environment
    access: AccessStore
    audit: AuditStore
    auth: AuthService
    site: SiteService
    slurm_sync: SlurmSync
    usage: UsageService
    waiting: WaitingService
    runs: RunService
    refresher: Refresher
    retries: RetryService
    datasets: DatasetService
    lineage: LineageService
    harvester: OutputHarvester

    def close(self) -> None:
        self.db.dispose()


def build_services(
    settings: Settings, *, slurm: SlurmBackend | None = None, upgrade: bool = True
) -> Services:
    """Build every service once; upgrades the database schema first unless told not to."""
    db = Database(settings.database_url, sqlite_synchronous=settings.sqlite_synchronous)
    if upgrade:
        db.upgrade()
    store = RunStore(db)
    access = AccessStore(db)
    backend = slurm or _slurm_cli(settings)
    usage = UsageService(access, backend)
    retries = RetryService(store, access, backend)
    templates = build_template_env(settings.template_dir)
    datasets = DatasetService(DatasetStore(db), access, store)
    lineage_store = LineageStore(db)
    return Services(
        settings=settings,
        db=db,
        slurm=backend,
        templates=templates,
        access=access,
        audit=AuditStore(db),
        auth=AuthService(access),
        site=SiteService(access),
        slurm_sync=SlurmSync(access, SlurmAccounts(LocalRunner(), timeout_s=settings.slurm_query_timeout_s)),
        usage=usage,
        waiting=WaitingService(access, usage, backend),
        runs=RunService(store, access, backend, templates, settings, datasets),
        refresher=Refresher(store, backend, settings, retries),
        retries=retries,
        datasets=datasets,
        lineage=LineageService(lineage_store, datasets, store),
        harvester=OutputHarvester(lineage_store),
    )


def _slurm_cli(settings: Settings) -> SlurmCLI:
    return SlurmCLI(
        LocalRunner(),
        query_timeout_s=settings.slurm_query_timeout_s,
        submit_timeout_s=settings.slurm_submit_timeout_s,
    )
