"""Shared fixtures.

Tests under ``tests/slurm`` submit real jobs to the local cluster that
``make cluster`` provisions; ``make test`` starts it first when it does not
answer. Nothing here fakes Slurm.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.sbatch.templates import build_template_env
from gateway.core.slurm.records import AccountingRecord
from gateway.core.slurm.states import TERMINAL

SESSION_START = datetime.now(UTC) - timedelta(seconds=5)

# The server's settings file (/etc/gateway/gateway.env, which `make up` writes) must not leak into the
# tests' servers and services: they name every setting they need. A test that wants a file names it.
os.environ.setdefault("GATEWAY_SETTINGS_FILE", "")

# Job output must land where slurmd (same host, root) can write and we can read.
JOB_ROOT = Path(os.environ.get("GW_TEST_JOB_ROOT", "/tmp/gw-test-jobs"))

# The modules that hold a worker longest, with their seconds on a 2-core machine (`make test`'s
# --durations, sums of a module's setup, calls and teardown; round numbers, for the order only).
# Under `--dist loadfile` a module runs on one worker, and xdist hands modules out by their number
# of tests, most first: these few-test modules came last and ran on after the other workers had
# finished. Handed out first instead (the longest first, then xdist's own order), they run beside
# the rest. A module missing here is only scheduled later; a module that became long belongs here.
# Only modules on a database and servers of their own: handed out first, the API fuzzers
# (test_api_conformance, test_api_input) and test_site_eval_environment wrote, on the worker's
# session database, reviews, rate tables and build jobs that the files after them did not expect
# (test_evals, test_admin_security and test_reports failed in the clean-clone run of 2026-12-04),
# so they keep xdist's order, late in the run, as in every run that passed.
LONG_MODULES_S = {
    "tests/service/test_poc.py": 250,
    "tests/service/test_deploy_playbook.py": 160,
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the workers of ``--dist loadfile``: modules in the order they are best started, the long
    ones first, then most tests first.

    This is xdist's own order (``pytest_xdist_make_scheduler`` below keeps it from sorting again)
    with LONG_MODULES_S in front; a module's own tests keep their order. Runs without xdist (the
    exclusive part among them) keep pytest's order.
    """
    if not hasattr(config, "workerinput") or config.getoption("dist", None) != "loadfile":
        return
    counts = Counter(item.nodeid.split("::", 1)[0] for item in items)

    def key(item: pytest.Item) -> tuple[int, int]:
        module = item.nodeid.split("::", 1)[0]
        return (-LONG_MODULES_S.get(module, 0), -counts[module])

    items.sort(key=key)  # stable: a module's tests, and modules alike, keep their relative order


@pytest.hookimpl(optionalhook=True)  # an xdist hook: no error where xdist is not loaded
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` in the collection's order (above), not re-sorted by number of tests."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False
    return LoadFileScheduling(config, log)


@pytest.fixture(scope="session")
def template_env():
    return build_template_env()


@pytest.fixture(scope="session")
def slurm() -> SlurmCLI:
    if shutil.which("sbatch") is None:
        pytest.fail("Slurm is not installed here: run `make cluster` (make test does it for you)")
    cli = SlurmCLI(LocalRunner())
    try:
        cli.partitions()
    except Exception as exc:  # noqa: BLE001 - any failure means: no cluster
        pytest.fail(f"the local Slurm cluster does not answer ({exc}); run `make cluster`")
    return cli


@pytest.fixture
def run_dir() -> Callable[[str], str]:
    """Make a fresh run directory for a job and return its path."""

    def make(prefix: str = "r") -> str:
        path = JOB_ROOT / f"{prefix}-{uuid.uuid4().hex[:10]}"
        path.mkdir(parents=True, mode=0o777)
        path.chmod(0o777)
        return str(path)

    return make


def unique_tag(prefix: str = "gwtest") -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def wait_for_accounting(
    cli: SlurmCLI, job_id: str, *, timeout_s: float = 90.0, count: int = 1, tag: str | None = None
) -> list[AccountingRecord]:
    """Poll sacct until ``count`` records of ``job_id`` are all in a terminal state.

    Only records submitted in this test session count: a machine whose Slurm
    state was wiped once reuses job ids, and sacct remembers the old jobs.
    """
    deadline = time.monotonic() + timeout_s
    records: list[AccountingRecord] = []
    while time.monotonic() < deadline:
        records = [
            r
            for r in cli.accounting([job_id])
            if (tag is None or r.comment in (tag, None))
            and (r.submit_time is None or r.submit_time >= SESSION_START)
        ]
        # A finished record without a time limit is slurmdbd's placeholder of the first half second.
        settled = all(r.state in TERMINAL and r.timelimit_min is not None for r in records)
        if len(records) >= count and settled:
            return records
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not end within {timeout_s} s; last sacct: {records}")


def wait_for(predicate: Callable[[], object], *, timeout_s: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
