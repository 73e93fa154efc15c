"""Benchmark: submitting through the service and the API against raw sbatch.

    .venv/bin/python -m bench.submit [N]

In one process: N raw ``sbatch --parsable`` calls of rendered scripts, N runs
through ``RunService.submit`` (render, record, sbatch, record), and N runs
through the REST API (a real uvicorn server on loopback, httpx client).
Then a refresh cycle with 1,000 live attempts in the database, counting its
Slurm calls. Prints per-job medians and ratios; exits 1 when a target is
missed. Every job is cancelled at the end.

Targets: service <= 1.5x raw sbatch per job, API <= 2x, refresh <= 2 Slurm calls.
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import uvicorn

from bench import CountingRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.api import create_app
from gateway.core.render import SubmitTarget, render_sbatch
from gateway.core.spec import build_spec
from gateway.services import build_services
from gateway.services.site import parse_site
from gateway.settings import Settings

SERVICE_TARGET = 1.5
API_TARGET = 2.0
REFRESH_CALLS_TARGET = 2
SPEC = {
    "name": "bench",
    "project": "bench",
    "queue": "cpu",
    "command": "true",
    "workdir": "/tmp",
    "resources": {"mem_gb": 0.1, "walltime_min": 1},
    # Held, so no job starts while the next is submitted: on a 2-core host a job
    # launching beside the benchmark would steal CPU from whichever side is timed.
    "hold": True,
}


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def raw_sbatch(scripts: list[str], jobs: list[str]) -> list[float]:
    times = []
    for script in scripts:
        started = time.perf_counter()
        out = subprocess.run(
            ["sbatch", "--parsable", f"--comment=raw-{uuid.uuid4().hex}"],
            input=script,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - started)
        jobs.append(out.stdout.strip().split(";")[0])
    return times


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


SITE = """
allow_root_mapping: true
users: [{{name: bench, os_user: root}}]
projects:
  - name: bench
    slurm_account: {account}
    members: [{{user: bench, role: member}}]
    queues: [{{name: cpu, partition: cpu}}]
"""


def main(n: int) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-"))
    settings = Settings(database_url=f"sqlite:///{workdir}/gateway.db", runs_dir=workdir / "runs")
    services = build_services(settings)
    account = f"gwbench{uuid.uuid4().hex[:8]}"
    services.site.apply(None, parse_site(SITE.format(account=account)))
    services.slurm_sync.sync(None)
    jobs: list[str] = []
    try:
        return measure(n, services, settings, workdir, jobs)
    finally:
        subprocess.run(["scancel", f"--account={account}"], check=False, capture_output=True)
        subprocess.run(["scancel", *[j for j in jobs if j]], check=False, capture_output=True)
        for _ in range(60):  # Slurm keeps an association with queued jobs: wait for them to go
            if not subprocess.run(["squeue", "-h", f"--account={account}"], capture_output=True).stdout:
                break
            time.sleep(0.5)
        services.site.apply(None, parse_site("users: []\nprojects: []\n"))
        services.slurm_sync.sync(None)
        services.close()


def measure(n: int, services, settings: Settings, workdir: Path, jobs: list[str]) -> int:  # noqa: ANN001
    principal = services.access.principal("bench")
    token = services.auth.issue_token(None, "bench", name="bench")[0]
    spec = build_spec(SPEC)
    target = SubmitTarget("cpu", account=services.access.project("bench").slurm_account)
    scripts = [
        render_sbatch(spec, services.templates, run_id=f"raw-{i}", run_dir=str(workdir), target=target).text
        for i in range(n)
    ]

    # Each side alternates with raw sbatch, so both see the same cluster load.
    raw_sbatch(scripts[:3], jobs)  # warm-up, not measured
    jobs.append(services.runs.submit(spec, principal=principal).latest.job_id)
    raw_for_service: list[float] = []
    service_times: list[float] = []
    for script in scripts:
        raw_for_service += raw_sbatch([script], jobs)
        started = time.perf_counter()
        run = services.runs.submit(spec, principal=principal)
        service_times.append(time.perf_counter() - started)
        jobs.append(run.latest.job_id)

    # The API side: a real uvicorn server on loopback, in a thread of this process.
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(services=services), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    raw_for_api: list[float] = []
    api_times: list[float] = []
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as client:
        warm = client.post("/runs", json=SPEC)
        warm.raise_for_status()
        jobs.append(warm.json()["job_id"])
        for script in scripts:
            raw_for_api += raw_sbatch([script], jobs)
            started = time.perf_counter()
            response = client.post("/runs", json=SPEC)
            api_times.append(time.perf_counter() - started)
            response.raise_for_status()
            jobs.append(response.json()["job_id"])
    server.should_exit = True
    thread.join(timeout=10)

    # A refresh cycle with 1,000 live attempts (ids Slurm no longer knows: squeue + sacct both asked).
    for i in range(1000):
        run = services.runs.store.create_run(
            run_id=f"r-bench-{uuid.uuid4().hex[:12]}",
            name="bench",
            project="bench",
            queue="cpu",
            submitter="bench",
            tags=[],
            spec=SPEC,
            spec_sha256="0" * 64,
            script="#!/bin/bash\n",
            script_sha256="0" * 64,
            template_name="single.sbatch.j2",
            template_version="bench",
            run_dir=str(workdir),
            attempt_tag=f"gw-bench-{uuid.uuid4().hex}",
        )
        services.runs.store.record_job_id(run.attempts[0].id, str(90_000_000 + i))
    runner = CountingRunner()
    counted = build_services(settings, slurm=SlurmCLI(runner), upgrade=False)
    started = time.perf_counter()
    report = counted.refresher.refresh()
    refresh_s = time.perf_counter() - started

    raw_s_ms, service_ms = median_ms(raw_for_service), median_ms(service_times)
    raw_a_ms, api_ms = median_ms(raw_for_api), median_ms(api_times)
    service_ratio, api_ratio = service_ms / raw_s_ms, api_ms / raw_a_ms
    print(f"jobs per side: {n}")
    print(
        f"service submit   median {service_ms:7.2f} ms/job vs raw sbatch {raw_s_ms:5.2f}: "
        f"ratio {service_ratio:.2f}"
        f" (target <= {SERVICE_TARGET})"
    )
    print(
        f"API POST /runs   median {api_ms:7.2f} ms/job vs raw sbatch {raw_a_ms:5.2f}: ratio {api_ratio:.2f}"
        f" (target <= {API_TARGET})"
    )
    print(
        f"refresh cycle    {report.polled} live attempts, {runner.calls} Slurm calls "
        f"(target <= {REFRESH_CALLS_TARGET}), {refresh_s * 1000:.0f} ms"
    )
    ok = service_ratio <= SERVICE_TARGET and api_ratio <= API_TARGET and runner.calls <= REFRESH_CALLS_TARGET
    print("all targets met" if ok else "TARGET MISSED")
    counted.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
