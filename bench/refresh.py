"""Benchmark: one refresh cycle over a big database against the raw Slurm commands it stands for.

    .venv/bin/python -m bench.refresh [TOTAL] [LIVE]

The database gets TOTAL attempts (default 10,000): LIVE of them (default 500)
are real Slurm jobs, 400 held in the queue and the rest already finished
(so the cycle must ask sacct about them too); the others are finished
attempts with synthetic accounting, which a cycle must not touch. It then
times one refresh cycle, counts its Slurm calls, and times the raw
``squeue`` + ``sacct`` of the same jobs in the same process.

Targets: at most 2 Slurm calls, and at most 2x the raw commands' time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import CountingRunner, bench_run
from gateway.adapters.slurm import SlurmCLI
from gateway.adapters.slurm.cli_argv import sacct_argv, squeue_argv
from gateway.core.runs.values import AttemptFacts, AttemptUpdate
from gateway.core.slurm.states import RunState
from gateway.settings import Settings
from gateway.wiring import build_services

CALLS_TARGET = 2
RATIO_TARGET = 2.0
FINISHED_LIVE = 100  # of the live attempts, how many are jobs that already ended


def sbatch(held: bool) -> str:
    args = ["sbatch", "--parsable", "-o", "/dev/null", "--mem=50M", "-t", "1", "-J", "bench-refresh"]
    if held:
        args.append("--hold")
    return (
        subprocess.run([*args, "--wrap", "true"], capture_output=True, text=True, check=True)
        .stdout.strip()
        .split(";")[0]
    )


def add_attempts(services, job_ids: list[str], *, finished: bool) -> list[int]:
    store = services.runs.store
    ids = []
    for job_id in job_ids:
        run = store.create_run(bench_run())
        attempt = run.attempts[0]
        ids.append(attempt.id)
        store.record_job_id(attempt.id, job_id)
        if finished:
            store.apply_updates(
                [
                    AttemptUpdate(
                        attempt.id,
                        RunState.SUCCEEDED,
                        "COMPLETED",
                        None,
                        source="sacct",
                        facts=AttemptFacts(exit_code=0, elapsed_s=60, alloc_tres={"cpu": "1"}),
                    )
                ]
            )
    return ids


def main(total: int, live: int) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-refresh-"))
    settings = Settings(database_url=f"sqlite:///{workdir}/gateway.db", runs_dir=workdir)
    services = build_services(settings)
    held = [sbatch(held=True) for _ in range(live - FINISHED_LIVE)]
    ended = [sbatch(held=False) for _ in range(FINISHED_LIVE)]
    try:
        started = time.perf_counter()
        add_attempts(services, held, finished=False)
        ended_attempts = add_attempts(services, ended, finished=False)
        add_attempts(services, [str(80_000_000 + i) for i in range(total - live)], finished=True)
        print(f"database: {total} attempts ({live} live) written in {time.perf_counter() - started:.1f} s")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # let the short jobs finish and reach accounting
            if not subprocess.run(
                ["squeue", "-h", "-j", ",".join(ended)], capture_output=True, text=True
            ).stdout:
                break
            time.sleep(1)
        time.sleep(3)

        cycles, raws = [], []
        calls = None
        for _ in range(5):
            # Every cycle sees the same work: 400 jobs in squeue, 100 that ended and need sacct.
            services.runs.store.apply_updates(
                [AttemptUpdate(a, RunState.QUEUED, "PENDING", None, source="bench") for a in ended_attempts]
            )
            runner = CountingRunner()
            counted = build_services(settings, slurm=SlurmCLI(runner), upgrade=False)
            t0 = time.perf_counter()
            report = counted.refresher.refresh()
            cycles.append(time.perf_counter() - t0)
            calls = runner.calls if calls is None else max(calls, runner.calls)
            counted.close()
            t0 = time.perf_counter()
            subprocess.run(squeue_argv(held + ended), capture_output=True, check=False)
            subprocess.run(sacct_argv(ended), capture_output=True, check=False)
            raws.append(time.perf_counter() - t0)
            print(
                f"cycle: polled {report.polled}, transitions {report.transitions}, Slurm calls {runner.calls}"
            )
    finally:
        subprocess.run(["scancel", *held, *ended], check=False, capture_output=True)
        services.close()
    cycle_ms, raw_ms = statistics.median(cycles) * 1000, statistics.median(raws) * 1000
    ratio = cycle_ms / raw_ms
    print(
        f"refresh cycle  median {cycle_ms:7.1f} ms   raw squeue+sacct {raw_ms:7.1f} ms   ratio {ratio:.2f}"
        f" (target <= {RATIO_TARGET})"
    )
    print(f"Slurm calls per cycle: {calls} (target <= {CALLS_TARGET})")
    ok = ratio <= RATIO_TARGET and calls <= CALLS_TARGET
    print("all targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    sys.exit(main(*(args + [10_000, 500][len(args) :])))
