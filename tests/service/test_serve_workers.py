"""`gw serve --workers 2` on PostgreSQL: several processes serve one gateway, exactly once, one leader.

Real `gw serve` (two uvicorn workers), real PostgreSQL, real held Slurm jobs;
and the refusal of more than one worker on SQLite.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import wait_for
from tests.service.conftest import fresh_database
from tests.service.gw_serve import GW, Serve, gw_serve

pytestmark = pytest.mark.slurm

SUBMISSIONS = 24  # from CLIENTS threads at once
CLIENTS = 6
SPEC = {
    "name": "workers",
    "project": "test",
    "queue": "cpu",
    "command": "true",
    "resources": {"mem_gb": 0.1, "walltime_min": 1},
    "hold": True,  # none starts: the test's jobs only wait, and are cancelled at the end
}


@pytest.fixture(scope="module")
def served(tmp_path_factory, slurm) -> Iterator[tuple[Serve, str]]:
    state = tmp_path_factory.mktemp("workers")
    with (
        fresh_database("postgresql", state) as url,
        gw_serve(state, prefix="wk", database_url=url, serve_args=["--workers", "2"]) as serve,
    ):
        yield serve, url


def worker_pids(serve: Serve) -> set[int]:
    """The uvicorn worker processes of this `gw serve` (its children started by multiprocessing)."""
    assert serve.process is not None and serve.process.proc is not None
    parent = serve.process.proc.pid
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return {
        int(pid)
        for pid in children
        if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()  # not multiprocessing's tracker
    }


def test_concurrent_submissions_through_two_workers_are_one_slurm_job_each(served):
    serve, _url = served
    assert len(worker_pids(serve)) == 2
    answers: list[httpx.Response] = []
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(
            base_url=serve.url, headers={"Authorization": f"Bearer {serve.tokens['tester']}"}, timeout=60
        ) as http:
            for _ in range(SUBMISSIONS // CLIENTS):
                answer = http.post("/runs", json=SPEC)
                with lock:
                    answers.append(answer)

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    made = [a.json()["job_id"] for a in answers if a.status_code == 201 and a.json().get("job_id")]
    try:
        check_once(serve, answers)
    finally:
        subprocess.run(["scancel", *made], check=False, capture_output=True)


def check_once(serve: Serve, answers: list[httpx.Response]) -> None:
    """Every answer a 201 with its own run and job; Slurm holds exactly one job per run's tag."""
    refused = [a.text for a in answers if a.status_code != 201]
    assert len(answers) == SUBMISSIONS and not refused, refused
    runs = [a.json() for a in answers]
    assert len({r["id"] for r in runs}) == SUBMISSIONS
    assert all(r["job_id"] for r in runs)
    # Slurm itself: exactly one job per run, found by the attempt's tag.
    listed = subprocess.run(
        ["squeue", "-h", f"--account={serve.account}", "--states=all", "-o", "%i %k"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    tags = Counter(line.split(" ", 1)[1] for line in listed if " " in line)
    by_run = {r["id"]: r for r in runs}
    for run_id, run in by_run.items():
        tag = run["attempts"][0]["tag"]
        assert tags[tag] == 1, (run_id, tag, tags[tag])
    assert len({r["job_id"] for r in runs}) == SUBMISSIONS


def test_one_worker_leads_the_refresh_and_it_runs(served):
    serve, url = served
    workers = worker_pids(serve)
    engine = create_engine(url)

    def read_holders() -> list[str]:
        with engine.connect() as conn:
            return conn.execute(text("SELECT holder FROM leases WHERE name = 'scheduler'")).scalars().all()

    try:  # the first cycle comes one refresh interval (1 s) after start-up
        holders = wait_for(read_holders, timeout_s=30, what="a scheduler lease")
        wait_for(lambda: "took the scheduler lease" in serve.log.read_text(), timeout_s=10, what="the log")
    finally:
        engine.dispose()
    assert len(holders) == 1
    leader_pid = int(holders[0].split(":")[1])
    assert leader_pid in workers
    # The leader's refresh runs: a job cancelled around the gateway shows as cancelled.
    with httpx.Client(
        base_url=serve.url, headers={"Authorization": f"Bearer {serve.tokens['tester']}"}, timeout=30
    ) as http:
        run = http.post("/runs", json=SPEC).json()
        subprocess.run(["scancel", run["job_id"]], check=True)
        wait_for(lambda: http.get(f"/runs/{run['id']}").json()["state"] == "cancelled", timeout_s=60)
    # Several cycles later, the other worker has tried every second and never taken the lease.
    took = set(re.findall(r"took the scheduler lease \(([^)]+)\)", serve.log.read_text()))
    assert took == {holders[0]}


def test_the_web_headers_reach_ui_pages_only(served):
    serve, _url = served
    page = httpx.get(f"{serve.url}/ui/login", timeout=10)
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    assert "gw_csrf=" in page.headers.get("set-cookie", "")
    api = httpx.get(f"{serve.url}/healthz", timeout=10)
    assert api.status_code == 200 and "content-security-policy" not in api.headers


def test_more_than_one_worker_on_sqlite_is_refused(tmp_path):
    env = {**os.environ, "GATEWAY_DATABASE_URL": f"sqlite:///{tmp_path}/gateway.db"}
    refused = subprocess.run(
        [*GW, "serve", "--port", "1", "--workers", "2"], env=env, capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 2
    assert "--workers 2 needs PostgreSQL" in refused.stderr
    assert not (tmp_path / "gateway.db").exists()  # refused before anything was made
