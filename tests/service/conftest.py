"""Fixtures for service, API and CLI tests: real Slurm, real SQLite and PostgreSQL.

Every test here runs once per database backend. PostgreSQL comes from
``GW_TEST_POSTGRES_URL`` (default: the local server on 127.0.0.1:5432, which
``.ci/run`` starts); each test session gets its own fresh database.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.states import TERMINAL
from gateway.domain import Principal, Run
from gateway.services import Services, build_services
from gateway.services.site import parse_site
from gateway.settings import Settings
from tests.conftest import JOB_ROOT

POSTGRES_ADMIN_URL = os.environ.get(
    "GW_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = [b for b in os.environ.get("GW_TEST_DATABASES", "sqlite,postgresql").split(",") if b]


class CountingRunner(LocalRunner):
    """The real local runner, counting the Slurm commands it runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv, **kwargs):
        self.calls.append(tuple(argv))
        return super().run(argv, **kwargs)


@pytest.fixture(scope="session", params=BACKENDS)
def database_url(request, tmp_path_factory) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path_factory.mktemp('db')}/gateway.db"
        return
    name = f"gwtest_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:  # noqa: BLE001 - any failure: no PostgreSQL
        pytest.fail(
            f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL} ({exc}); start it (scripts/postgres-ready) "
            "or set GW_TEST_DATABASES=sqlite"
        )
    yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def settings(database_url) -> Settings:
    runs_dir = JOB_ROOT / f"runs-{uuid.uuid4().hex[:8]}"
    runs_dir.mkdir(parents=True, exist_ok=True)
    return Settings(
        database_url=database_url,
        runs_dir=runs_dir,
        refresh_interval_s=1,
        submit_grace_s=5,
        slurm_submit_timeout_s=4,
    )


PROJECT = "test"  # the project every service test submits to; tests tell their runs apart by tag

# Users map to root (the tests run as root) except alice and bob, who get OS users of their own.
SITE = """
allow_root_mapping: true
users:
  - {{name: tester, os_user: root}}
  - {{name: admin, os_user: root, admin: true}}
  - {{name: watcher, os_user: root}}
  - {{name: mia, os_user: root}}
  - {{name: outsider, os_user: root}}
  - {{name: nomap}}
  - {{name: alice, os_user: gwtalice}}
  - {{name: bob, os_user: gwtbob}}
projects:
  - name: test
    slurm_account: {account}
    members:
      - {{user: tester, role: lead}}
      - {{user: mia, role: member}}
      - {{user: watcher, role: viewer}}
      - {{user: nomap, role: member}}
    queues:
      - {{name: cpu, partition: cpu, retry: {{backoff_s: 1}}}}
      - {{name: gpu, partition: gpu, gpu_types: [fake]}}
  - name: capped
    slurm_account: {account}c
    quota: {{gpus: 2}}
    members: [{{user: tester, role: member}}]
    queues: [{{name: gpu, partition: gpu, gpu_types: [fake]}}]
  - name: other
    slurm_account: {account}o
    members: [{{user: outsider, role: lead}}]
    queues: [{{name: cpu, partition: cpu}}]
  - name: pa
    slurm_account: {account}a
    members: [{{user: alice, role: member}}]
    queues: [{{name: cpu, partition: cpu}}]
  - name: pb
    slurm_account: {account}b
    members: [{{user: bob, role: member}}]
    queues: [{{name: cpu, partition: cpu}}]
"""
OS_USERS = ("gwtalice", "gwtbob")


def ensure_os_users() -> None:
    """The two OS users the access tests submit as (created once; tests run as root)."""
    for user in OS_USERS:
        if subprocess.run(["id", "-u", user], capture_output=True, check=False).returncode != 0:
            subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", user], check=True)


@pytest.fixture(scope="session")
def services(settings, slurm) -> Iterator[Services]:
    """The gateway's services on this backend, with project ``test`` (its own Slurm account) set up."""
    ensure_os_users()
    built = build_services(settings)
    account = f"gwt{uuid.uuid4().hex[:10]}"
    built.site.apply(None, parse_site(SITE.format(account=account)))
    built.slurm_sync.sync(None)
    yield built
    accounts = [p.slurm_account for p in built.access.projects()]
    drain_accounts(accounts)
    built.site.apply(None, parse_site("allow_root_mapping: true\nusers: []\nprojects: []\n"))
    built.slurm_sync.sync(None)
    built.close()


def drain_accounts(accounts: list[str], timeout_s: float = 60) -> None:
    """Cancel every job left in these Slurm accounts and wait until the queue holds none."""
    if not accounts:
        return
    subprocess.run(["scancel", f"--account={','.join(accounts)}"], check=False, capture_output=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = subprocess.run(
            ["squeue", "-h", f"--account={','.join(accounts)}", "-o", "%i"], capture_output=True, text=True
        ).stdout.strip()
        if not left:
            return
        time.sleep(0.5)


@pytest.fixture(scope="session")
def principal(services) -> Principal:
    """The lead of project ``test``, mapped to root (the tests run as root)."""
    return services.access.principal("tester", source="pytest")


@pytest.fixture(scope="session")
def tester_token(services) -> str:
    return services.auth.issue_token(None, "tester", name="pytest")[0]


@pytest.fixture(scope="session")
def tokens(services) -> dict[str, str]:
    """A token for every user of the test site."""
    return {
        u.name: services.auth.issue_token(None, u.name, name="pytest")[0] for u in services.access.users()
    }


@pytest.fixture
def counting_services(settings, services) -> Iterator[tuple[Services, CountingRunner]]:
    runner = CountingRunner()
    built = build_services(settings, slurm=SlurmCLI(runner), upgrade=False)
    yield built, runner
    built.close()


def unique_tag() -> str:
    return f"t{uuid.uuid4().hex[:12]}"


def refresh_until(services: Services, run_id: str, *, states=TERMINAL, timeout_s: float = 90.0) -> Run:
    """Run refresh cycles (as `gw serve` would) until the run reaches one of ``states``."""
    deadline = time.monotonic() + timeout_s
    run = services.runs.store.get_run(run_id)
    while time.monotonic() < deadline:
        services.refresher.refresh()
        run = services.runs.store.get_run(run_id)
        if run.state in states:
            return run
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} stayed {run.state} for {timeout_s} s: {run.latest}")
