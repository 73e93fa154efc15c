"""Benchmark: submitting through the adapter (render + sbatch) against raw sbatch.

    .venv/bin/python -m bench.submit [N]

Both sides submit the same N rendered scripts in one process; the raw side
pipes each script to ``sbatch --parsable`` with subprocess, the gateway side
renders it from the spec and submits with ``SlurmCLI.submit``. Prints per-job
times and the ratio. All jobs are cancelled at the end.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.render import SubmitTarget, build_template_env, render_sbatch
from gateway.core.spec import build_spec

TARGET_RATIO = 1.5


def main(n: int) -> int:
    env = build_template_env()
    cli = SlurmCLI(LocalRunner())
    run_dir = tempfile.mkdtemp(prefix="gw-bench-", dir="/tmp")
    os.chmod(run_dir, 0o777)
    spec = build_spec(
        {"name": "bench", "project": "bench", "queue": "cpu", "command": "true", "resources": {"mem_gb": 0.1}}
    )
    target = SubmitTarget("cpu")
    run_ids = [f"b-{uuid.uuid4().hex[:12]}" for _ in range(n)]
    scripts = [render_sbatch(spec, env, run_id=r, run_dir=run_dir, target=target).text for r in run_ids]
    jobs: list[str] = []

    raw_times = []
    for script in scripts:
        started = time.perf_counter()
        out = subprocess.run(
            ["sbatch", "--parsable", f"--comment=raw-{uuid.uuid4().hex}"],
            input=script,
            capture_output=True,
            text=True,
            check=True,
        )
        raw_times.append(time.perf_counter() - started)
        jobs.append(out.stdout.strip())

    gw_times = []
    for run_id in run_ids:
        started = time.perf_counter()
        rendered = render_sbatch(spec, env, run_id=run_id, run_dir=run_dir, target=target)
        jobs.append(cli.submit(rendered.text, tag=f"gw-{run_id}"))
        gw_times.append(time.perf_counter() - started)

    subprocess.run(["scancel", *jobs], check=False, capture_output=True)
    raw_ms = statistics.median(raw_times) * 1000
    gw_ms = statistics.median(gw_times) * 1000
    ratio = gw_ms / raw_ms
    print(f"jobs per side: {n}")
    print(f"raw sbatch        median {raw_ms:7.2f} ms/job  mean {statistics.mean(raw_times) * 1000:7.2f}")
    print(f"adapter (render+) median {gw_ms:7.2f} ms/job  mean {statistics.mean(gw_times) * 1000:7.2f}")
    verdict = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
    print(f"ratio adapter/raw {ratio:.2f} (target <= {TARGET_RATIO}) {verdict}")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
