"""Fixtures for service, API and CLI tests: real Slurm, real SQLite and PostgreSQL.

Every test here runs once per database backend. PostgreSQL comes from
``GW_TEST_POSTGRES_URL`` (default: the local server on 127.0.0.1:5432, which
``.ci/run`` starts); each test session gets its own fresh database.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.access.values import Principal
from gateway.core.runs.values import Run
from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import TERMINAL
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.conftest import JOB_ROOT
from tests.sshd import SshServer, ensure_home

POSTGRES_ADMIN_URL = os.environ.get(
    "GW_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
T = TypeVar("T")
BACKENDS = [b for b in os.environ.get("GW_TEST_DATABASES", "sqlite,postgresql").split(",") if b]


class CountingRunner(LocalRunner):
    """The real local runner, counting the Slurm commands it runs."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv, **kwargs):
        self.calls.append(tuple(argv))
        return super().run(argv, **kwargs)

    def start(self, argv, **kwargs):
        self.calls.append(tuple(argv))
        return super().start(argv, **kwargs)


@contextmanager
def fresh_database(backend: str, directory: Path) -> Iterator[str]:
    """The URL of a new, empty database: a SQLite file in ``directory``, or a PostgreSQL database
    made for the caller and dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{directory}/gateway.db"
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
    try:
        yield POSTGRES_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class Kept:
    """What a test process makes once per backend and keeps to its end: the database, the settings,
    the services with their Slurm accounts, the trained eval models.

    pytest tears a parametrized session fixture down whenever the next test wants the other
    parameter, and under xdist's ``--dist loadfile`` every module switches from SQLite to
    PostgreSQL and back: each module paid for two databases, two site applies with their Slurm
    accounts, two prunes (and two eval worlds) of its own. The fixtures below fetch from here,
    so each is made once a process and closed, in reverse order, when the session ends.
    """

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], Any] = {}
        self._stack = ExitStack()

    def get(self, kind: str, backend: str, make: Callable[[ExitStack], T]) -> T:
        """The ``kind`` value of ``backend``, made the first time by ``make`` (it registers its cleanup)."""
        key = (kind, backend)
        if key not in self._values:
            self._values[key] = make(self._stack)
        return self._values[key]

    def close(self) -> None:
        self._stack.close()


@pytest.fixture(scope="session")
def kept() -> Iterator[Kept]:
    values = Kept()
    yield values
    values.close()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def database_url(backend, kept, tmp_path_factory) -> str:
    def make(stack: ExitStack) -> str:
        return stack.enter_context(fresh_database(backend, tmp_path_factory.mktemp("db")))

    return kept.get("database", backend, make)


@pytest.fixture(scope="session")
def settings(backend, database_url, kept, tmp_path_factory) -> Settings:
    def make(_stack: ExitStack) -> Settings:
        runs_dir = JOB_ROOT / f"runs-{uuid.uuid4().hex[:8]}"
        runs_dir.mkdir(parents=True, exist_ok=True)
        return Settings(
            database_url=database_url,
            runs_dir=runs_dir,
            # this session's database has its own anchor file (the default is shared by all PostgreSQL ones)
            audit_anchor_path=tmp_path_factory.mktemp("anchor") / "audit-anchors.jsonl",
            refresh_interval_s=1,
            submit_grace_s=5,
            slurm_submit_timeout_s=4,
            eval_python=sys.executable,  # eval jobs run lm-eval from the tests' own venv (jobs run as root)
            env_pip_find_links=JOB_ROOT / "wheelhouse",  # locked environments install the tests' wheels
            envs_dir=runs_dir.parent / f"envs-{runs_dir.name}",
            advisory_dir=Path(__file__).resolve().parents[1] / "data" / "osv",  # the tests' small OSV set
        )

    return kept.get("settings", backend, make)


PROJECT = "test"  # the project every service test submits to; tests tell their runs apart by tag

# Users map to root (the tests run as root) except alice and bob, who get OS users of their own;
# fuzzer, a lead like tester, is the API conformance test's own (whatever it sends is told apart by it);
# capper is only in project batchcap, whose jobs-in-queue cap test_batch.py fills.
SITE = """
allow_root_mapping: true
users:
  - {{name: tester, os_user: root}}
  - {{name: fuzzer, os_user: root}}
  - {{name: admin, os_user: root, admin: true}}
  - {{name: watcher, os_user: root}}
  - {{name: mia, os_user: root}}
  - {{name: rita, os_user: root}}
  - {{name: outsider, os_user: root}}
  - {{name: capper, os_user: root}}
  - {{name: nomap}}
  - {{name: alice, os_user: gwtalice}}
  - {{name: bob, os_user: gwtbob}}
projects:
  - name: test
    slurm_account: {account}
    members:
      - {{user: tester, role: lead}}
      - {{user: fuzzer, role: lead}}
      - {{user: mia, role: member}}
      - {{user: watcher, role: viewer}}
      - {{user: rita, role: reviewer}}
      - {{user: nomap, role: member}}
    queues:
      - {{name: cpu, partition: cpu, retry: {{backoff_s: 1}}}}
      - {{name: gpu, partition: gpu, gpu_types: [fake], whole_node_mem: true}}
  - name: capped
    slurm_account: {account}c
    quota: {{gpus: 2}}
    members: [{{user: tester, role: member}}]
    queues: [{{name: gpu, partition: gpu, gpu_types: [fake]}}]
  - name: batchcap
    slurm_account: {account}q
    quota: {{jobs_in_queue: 3}}
    members: [{{user: capper, role: member}}]
    queues: [{{name: cpu, partition: cpu}}]
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
# What a test site is pruned to at the end: no projects (so no Slurm accounts); the admin stays,
# since no apply removes the last admin.
TEARDOWN_SITE = "allow_root_mapping: true\nusers: [{name: admin, os_user: root, admin: true}]\nprojects: []\n"
OPERATOR = Principal.operator()


def ensure_os_users() -> None:
    """The two OS users the access tests submit as (created once; tests run as root).

    Two test workers may both find a user missing: useradd's exit 9 (the name is taken) means the
    other one made it first.
    """
    for user in OS_USERS:
        if subprocess.run(["id", "-u", user], capture_output=True, check=False).returncode != 0:
            made = subprocess.run(
                ["useradd", "--no-create-home", "--shell", "/bin/bash", user], capture_output=True, text=True
            )
            if made.returncode not in (0, 9):
                raise RuntimeError(f"useradd {user} failed: {made.stderr.strip()}")


@pytest.fixture(scope="session")
def ssh_server(tmp_path_factory) -> Iterator[SshServer]:
    """A real sshd on a free loopback port: the submit host of the SSH tests, with a key for root,
    gwtalice and gwtbob (tests/sshd.py). Tests that kill it start their own."""
    ensure_os_users()
    for user in OS_USERS:
        ensure_home(user)
    server = SshServer(JOB_ROOT / f"sshd-{uuid.uuid4().hex[:8]}", ["root", *OS_USERS])
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def services(backend, settings, slurm, kept) -> Services:
    """The gateway's services on this backend, with project ``test`` (its own Slurm account) set up."""

    def make(stack: ExitStack) -> Services:
        ensure_os_users()
        built = build_services(settings)
        stack.callback(_take_down, built)
        account = f"gwt{uuid.uuid4().hex[:10]}"
        built.site.apply(OPERATOR, parse_site(SITE.format(account=account)))
        return built

    return kept.get("services", backend, make)


def _take_down(built: Services) -> None:
    """Cancel the test site's jobs, remove its Slurm accounts (a prune to an empty site), close."""
    try:
        drain_accounts([p.slurm_account for p in built.access.projects()])
        built.site.apply(OPERATOR, parse_site(TEARDOWN_SITE), prune=True)
    finally:
        built.close()


def drain_accounts(accounts: list[str], timeout_s: float = 60) -> None:
    """Cancel every job left in these Slurm accounts (the tests' own) and wait until the queue holds none.

    By job id: ``scancel --account`` takes one account, so a comma-separated list cancelled nothing.
    """
    if not accounts:
        return
    listed = subprocess.run(
        ["squeue", "-h", f"--account={','.join(accounts)}", "-o", "%i"], capture_output=True, text=True
    ).stdout.split()
    if listed:
        subprocess.run(["scancel", *listed], check=False, capture_output=True)
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
    return services.auth.issue_token(OPERATOR, "tester", name="pytest")[0]


@pytest.fixture(scope="session")
def tokens(services) -> dict[str, str]:
    """A token for every user of the test site that is not disabled (test_release_approvals disables some)."""
    return {
        u.name: services.auth.issue_token(OPERATOR, u.name, name="pytest")[0]
        for u in services.access.users()
        if not u.disabled
    }


@pytest.fixture(scope="session")
def eval_world(backend, services, principal, kept):
    """Two trained tiny_lm models, their eval runs and results (``tests/service/eval_world.py``)."""
    from tests.service.eval_world import build_world

    return kept.get("eval_world", backend, lambda _stack: build_world(services, principal))


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


# -- several clusters (tests/service/clusters_setup.py) ---------------------------------------------


@pytest.fixture(scope="module")
def multi(backend, settings, tmp_path_factory) -> Iterator[Services]:
    """The gateway of ``clusters_setup`` on a database of the asking module's own (gwlocal2 answering)."""
    from tests.service.clusters_setup import multi_gateway

    with multi_gateway(backend, settings, tmp_path_factory) as built:
        yield built


@pytest.fixture(scope="module")
def api(multi) -> Iterator[TestClient]:
    """An API client of ``multi`` (modules with an ``api`` of their own keep theirs)."""
    from tests.service.clusters_setup import api_client

    with api_client(multi) as client:
        yield client


@pytest.fixture(scope="module")
def principal_mc(multi) -> Principal:
    """tester on ``multi`` (site admin, lead of mc)."""
    return multi.access.principal("tester", source="pytest")


# -- who may do what (tests/service/test_access*.py, helpers in access_setup.py) --------------------


@pytest.fixture(scope="module")
def app(services) -> Iterator[TestClient]:
    """An API client of the session's services (modules with an ``app`` of their own keep theirs)."""
    from gateway.api import create_app

    with TestClient(create_app(services=services)) as client:
        yield client


@pytest.fixture(scope="module")
def ended_run(services, principal) -> str:
    """A finished run of project ``test``, submitted by its lead (tester); its id (each module its own)."""
    from gateway.core.spec.run_spec import build_spec

    spec = build_spec(
        {
            "name": "matrix",
            "project": PROJECT,
            "queue": "cpu",
            "command": "echo hi",
            "workdir": "/tmp",
            "tags": [unique_tag()],
            "resources": {"mem_gb": 0.1},
        }
    )
    run = services.runs.submit(spec, principal=principal)
    return refresh_until(services, run.id).id
