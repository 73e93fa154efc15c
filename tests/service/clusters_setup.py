"""The two real local clusters for the multi-cluster tests (docs/clusters.md): gwlocal2's check, and a
gateway of its own on them (``multi``), shared by ``test_clusters.py`` and ``test_clusters_ops.py``.

gwlocal (reached with ``-M gwlocal``) and gwlocal2 (reached with its ``SLURM_CONF``,
``/etc/slurm-gwlocal2/slurm.conf``: the second cluster of the local set-up, docs/cluster.md) share
one slurmdbd. Each module that uses ``multi`` gets a database and a site of its own (three clusters:
the two, and ``gwdead``, a copy of gwlocal2's configuration whose controller port nothing listens
on), so the shared test site is left as it is. The site apply pushes its project's account to
every cluster with one of its queues (gwlocal2 included); the module's end removes it from gwlocal2
by hand after cancelling its jobs there, then prunes the site.

Where gwlocal2 is not set up (no ``/etc/slurm-gwlocal2/slurm.conf``) its tests are skipped; where it
is set up but its controller does not answer within a bounded few seconds (polled, short timeouts:
a loaded host answers late), they fail saying so (``require_c2``), never a silent skip.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.api.app import create_app
from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.services import Services
from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.conftest import TEARDOWN_SITE, drain_accounts, fresh_database, unique_tag

C2_CONF = Path("/etc/slurm-gwlocal2/slurm.conf")
C2_ENV = {**os.environ, "SLURM_CONF": str(C2_CONF)}
OPERATOR = Principal.operator()
SITE = """
allow_root_mapping: true
clusters:
  - {{name: gwlocal}}
  - {{name: gwlocal2, slurm_conf: {c2}}}
  - {{name: gwdead, slurm_conf: {dead}}}
users: [{{name: tester, os_user: root, admin: true}}]
projects:
  - name: mc
    slurm_account: {account}
    members: [{{user: tester, role: lead}}]
    queues:
      - {{name: one, partition: cpu}}
      - {{name: two, partition: cpu, cluster: gwlocal2}}
      - {{name: dead, partition: cpu, cluster: gwdead}}
      - {{name: gpu2, partition: gpu, cluster: gwlocal2, gpu_types: [fake]}}
"""


# gwlocal2's site-run slurmrestd (rest_auth/jwt) and its JWT key, as ansible/cluster.yml sets them up
C2_RESTD_URL = "http://127.0.0.1:6830"
C2_RESTD_SOCKET = Path("/run/slurmrestd-gwlocal2/slurmrestd.sock")
C2_JWT_KEY = Path("/var/lib/slurm-gwlocal2/jwt_hs256.key")

C2_WITHIN_S = 15.0  # how long gwlocal2's controller may take to answer under load before the module fails
C2_POLL_S = 0.5


@functools.cache
def _c2_silent() -> str | None:
    """``controller_silent`` of gwlocal2, asked once per test process."""
    return controller_silent(C2_ENV, C2_WITHIN_S)


def controller_silent(env: dict[str, str], within_s: float) -> str | None:
    """None when the controller of the cluster ``env``'s SLURM_CONF names answers (``sinfo`` lists
    partitions) within ``within_s``, polled every ``C2_POLL_S`` with short timeouts (a loaded host
    answers late, not never); else what the last try said."""
    deadline = time.monotonic() + within_s
    while True:
        left = max(1.0, deadline - time.monotonic())
        try:
            done = subprocess.run(
                ["sinfo", "-h", "-o", "%P"],
                capture_output=True,
                text=True,
                env=env,
                timeout=min(5.0, left),
            )
            if done.returncode == 0 and done.stdout.strip():
                return None
            said = (done.stderr or done.stdout).strip() or "no partitions listed"
            last = f"sinfo exited {done.returncode}: {said}"
        except subprocess.TimeoutExpired:
            last = f"sinfo did not answer within {min(5.0, left):g} s"
        if time.monotonic() + C2_POLL_S >= deadline:
            return last
        time.sleep(C2_POLL_S)


def require_c2() -> None:
    """Skip where the second local cluster is not set up at all; fail, saying why, where it is set up
    (its slurm.conf is there) but its controller does not answer: that is a broken set-up, not an
    absent one."""
    if not C2_CONF.exists():
        pytest.skip(f"the second local cluster gwlocal2 is not set up here (no {C2_CONF}; make cluster)")
    silent = _c2_silent()
    if silent is not None:
        pytest.fail(
            f"gwlocal2 is set up ({C2_CONF}) but its slurmctld did not answer within {C2_WITHIN_S:g} s: "
            f"{silent}. Start it again (make cluster, docs/cluster.md), or remove gwlocal2 from this host "
            "(slurm_second_cluster: false) to leave these tests out",
            pytrace=False,
        )


def require_site_restd() -> None:
    """Skip where the playbook did not set up gwlocal2's site-run slurmrestd (no JWT key, nothing on its
    port); ``require_c2`` first."""
    require_c2()
    if not C2_JWT_KEY.exists():
        pytest.skip(f"gwlocal2 has no JWT set up here (no {C2_JWT_KEY}; make cluster, docs/cluster.md)")
    try:
        socket.create_connection(("127.0.0.1", 6830), timeout=2).close()
    except OSError as exc:
        pytest.skip(f"gwlocal2's site-run slurmrestd does not listen on {C2_RESTD_URL} ({exc}; make cluster)")


def free_port() -> int:
    """A loopback TCP port nothing listens on (now)."""
    return _free_port()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def dead_copy(directory: Path) -> Path:
    """gwlocal2's configuration directory copied, its controller's port one nothing listens on."""
    for item in C2_CONF.parent.iterdir():
        if item.is_file():
            shutil.copy(item, directory / item.name)
    conf = directory / "slurm.conf"
    lines = [
        f"SlurmctldPort={_free_port()}" if line.startswith("SlurmctldPort=") else line
        for line in conf.read_text().splitlines()
    ]
    conf.write_text("\n".join(lines) + "\n")
    return conf


def _sacctmgr(*args: str) -> None:
    subprocess.run(["sacctmgr", "-i", *args], capture_output=True, text=True, check=False, timeout=60)


@contextmanager
def multi_gateway(backend: str, settings: Settings, tmp_path_factory) -> Iterator[Services]:
    """The gateway on its own database, with the three clusters and project mc (a module's ``multi``
    fixture); skipped or failed first by ``require_c2``."""
    require_c2()
    with ExitStack() as stack:
        url = stack.enter_context(fresh_database(backend, tmp_path_factory.mktemp("clusters-db")))
        own = settings.model_copy(
            update={
                "database_url": url,
                "audit_anchor_path": tmp_path_factory.mktemp("clusters-anchor") / "anchors.jsonl",
                "slurm_query_timeout_s": 20.0,
            }
        )
        built = build_services(own)
        stack.callback(built.close)
        account = f"gwt{uuid.uuid4().hex[:10]}"
        dead = dead_copy(tmp_path_factory.mktemp("gwdead"))
        site = SITE.format(c2=C2_CONF, dead=dead, account=account)
        built.site.apply(OPERATOR, parse_site(site))
        stack.callback(built.site.apply, OPERATOR, parse_site(TEARDOWN_SITE), prune=True)
        stack.callback(drain_accounts, [account])
        # The apply pushed mc's account (and root in it) to gwlocal2 too; it goes (with its user
        # association: one command) once its jobs there are cancelled, even if some still run.
        stack.callback(_sacctmgr, "delete", "account", f"name={account}", "cluster=gwlocal2")
        stack.callback(_cancel_on_c2, account)
        yield built


def _cancel_on_c2(account: str) -> None:
    subprocess.run(["scancel", f"--account={account}"], env=C2_ENV, capture_output=True, check=False)


@contextmanager
def api_client(multi: Services) -> Iterator[TestClient]:
    """An API client of ``multi``, signed in as tester (site admin, lead of mc)."""
    token = multi.auth.issue_token(OPERATOR, "tester", name="pytest")[0]
    with TestClient(create_app(services=multi)) as client:
        client.headers["Authorization"] = f"Bearer {token}"
        yield client


def spec(queue: str, command: str, tag: str | None = None) -> dict:
    return {
        "name": f"mc-{queue}",
        "project": "mc",
        "queue": queue,
        "command": command,
        "workdir": "/tmp",
        "tags": [tag or unique_tag()],
        "resources": {"mem_gb": 0.1, "walltime_min": 5},
    }


def refresh_until(services: Services, run_ids: list[str], timeout_s: float = 120.0) -> dict[str, dict]:
    """Refresh cycles until every run has ended; each run as the store has it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        services.refresher.refresh()
        runs = {r: services.runs.store.get_run(r) for r in run_ids}
        if all(run.state in TERMINAL for run in runs.values()):
            return runs
        time.sleep(1)
    raise AssertionError(f"runs did not end: {[(r, services.runs.store.get_run(r).state) for r in run_ids]}")


def sacct_state(job_id: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-o", "State", "-j", job_id],
        capture_output=True, text=True, env=env, check=True,
    ).stdout.split()  # fmt: skip
    return out[-1] if out else ""


def refresh_until_running(services: Services, run_id: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        services.refresher.refresh()
        if services.runs.store.get_run(run_id).state is RunState.RUNNING:
            return
        time.sleep(1)
    raise AssertionError(f"run {run_id} did not start")
