"""Benchmark: submitting through the slurmrestd backend against raw sbatch, for a non-root user.

    .venv/bin/python -m bench.submit_rest [N]

In one process, alternating so every side sees the same cluster load, N of each:
raw ``sbatch --parsable`` as root; raw ``runuser -u USER -- sbatch`` (what the CLI
backend forks for a user mapped to their own OS account); ``RunService.submit``
through the CLI backend for that user; ``RunService.submit`` through the rest
backend for that user (one kept-alive slurmrestd per user: no fork per job);
and the rest backend's ``submit`` alone, each call after a short pause (``SETTLE_S``) so
none pays for slurmctld's work on the one before. Prints per-job medians and ratios;
exits 1 when a target is missed. Every job is held, then cancelled.

Then N ``POST /runs`` through the API on the rest backend, alternating with ``runuser`` +
``sbatch``: with ``gw serve`` in its own process (``GATEWAY_SLURM_BACKEND=rest``, its own
slurmrestd daemons), as production runs it, and with uvicorn in a thread of this process (as
in ``bench/submit``, client and server sharing the GIL; reported, not gated).

Targets (issue 19): rest-backend service submit <= 1.0x raw runuser + sbatch; API submit
with the server in its own process <= 1.3x raw runuser + sbatch.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.serve import GwServe, serve_in_thread
from bench.submit import SPEC, http, median_ms
from gateway.api import create_app
from gateway.core.access.values import Principal
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.site.schema import parse_site
from gateway.core.spec.run_spec import build_spec
from gateway.settings import Settings
from gateway.wiring import build_services

USER = "gwtalice"  # the non-root OS account the bench user is mapped to (made if missing)
REST_TARGET = 1.0
API_REST_TARGET = 1.3
# Before each timed call: slurmctld finishes what the previous submission started (a scheduling
# pass), so no side pays for the one before it.
SETTLE_S = 0.02
SITE = """
users: [{{name: bench, os_user: {user}}}]
projects:
  - name: bench
    slurm_account: {account}
    members: [{{user: bench, role: member}}]
    queues: [{{name: cpu, partition: cpu}}]
"""


def timed_sbatch(script: str, jobs: list[str], prefix: tuple[str, ...] = ()) -> float:
    """One ``sbatch --parsable`` (after ``prefix``, e.g. runuser), its job id kept; seconds taken."""
    time.sleep(SETTLE_S)
    started = time.perf_counter()
    out = subprocess.run(
        [*prefix, "sbatch", "--parsable", f"--comment=raw-{uuid.uuid4().hex}"],
        input=script,
        capture_output=True,
        text=True,
        check=True,
    )
    elapsed = time.perf_counter() - started
    jobs.append(out.stdout.strip().split(";")[0])
    return elapsed


def main(n: int) -> int:
    """Run the benchmark with ``n`` jobs a side; 0 when the target is met, 1 when missed."""
    if subprocess.run(["id", "-u", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/bash", USER], check=True)
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-rest-"))
    workdir.chmod(0o755)
    (workdir / "runs").mkdir(mode=0o777)
    (workdir / "runs").chmod(0o777)
    # Each side its own database, so neither waits on the other's commits.
    runs = workdir / "runs"
    cli = build_services(Settings(database_url=f"sqlite:///{workdir}/cli.db", runs_dir=runs))
    rest = build_services(
        Settings(
            database_url=f"sqlite:///{workdir}/rest.db",
            runs_dir=runs,
            slurm_backend="rest",
            slurmrestd_socket_dir=workdir / "restd",
        )
    )
    account = f"gwbench{uuid.uuid4().hex[:8]}"
    for side in (cli, rest):  # the second finds the account made by the first, the gateway's own
        side.site.apply(Principal.operator(), parse_site(SITE.format(user=USER, account=account)))
    # raw sbatch as root needs root in the account too (the prune at the end removes the account)
    subprocess.run(
        ["sacctmgr", "-i", "add", "user", "root", f"account={account}"], capture_output=True, check=True
    )
    time.sleep(1)  # slurmctld learns the association a moment later
    jobs: list[str] = []
    try:
        return measure(n, cli, rest, workdir, account, jobs)
    finally:
        subprocess.run(["scancel", f"--account={account}"], check=False, capture_output=True)
        subprocess.run(["scancel", *[j for j in jobs if j]], check=False, capture_output=True)
        for _ in range(60):  # Slurm keeps an association with queued jobs: wait for them to go
            if not subprocess.run(["squeue", "-h", f"--account={account}"], capture_output=True).stdout:
                break
            time.sleep(0.5)
        for side in (rest, cli):
            side.site.apply(Principal.operator(), parse_site("users: []\nprojects: []\n"), prune=True)
        rest.close()
        cli.close()
        shutil.rmtree(workdir, ignore_errors=True)


def measure(n: int, cli, rest, workdir: Path, account: str, jobs: list[str]) -> int:  # noqa: ANN001
    """The alternating measurement and its report (see the module docstring)."""
    spec = build_spec(SPEC)
    target = SubmitTarget("cpu", account=account)
    script = render_sbatch(spec, cli.templates, run_id="raw", run_dir=str(workdir), target=target).text
    backend = rest.runs.slurm
    as_user = ("runuser", "-u", USER, "--")
    principal_cli, principal_rest = cli.access.principal("bench"), rest.access.principal("bench")
    times: dict[str, list[float]] = {k: [] for k in ("raw", "runuser", "cli", "rest", "rest_adapter")}
    # Warm-up, not measured: the rest side starts its daemons here.
    timed_sbatch(script, jobs)
    timed_sbatch(script, jobs, as_user)
    jobs.append(cli.runs.submit(spec, principal=principal_cli).latest.job_id)
    jobs.append(rest.runs.submit(spec, principal=principal_rest).latest.job_id)
    rest_jobs: list[str] = []
    for _ in range(n):
        times["raw"].append(timed_sbatch(script, jobs))
        times["runuser"].append(timed_sbatch(script, jobs, as_user))
        for side, services, principal in (("cli", cli, principal_cli), ("rest", rest, principal_rest)):
            time.sleep(SETTLE_S)
            started = time.perf_counter()
            run = services.runs.submit(spec, principal=principal)
            times[side].append(time.perf_counter() - started)
            jobs.append(run.latest.job_id)
            if side == "rest":
                rest_jobs.append(run.latest.job_id)
        time.sleep(SETTLE_S)
        started = time.perf_counter()
        jobs.append(backend.prepare_submit(tag=f"raw-{uuid.uuid4().hex}", as_user=USER).send(script))
        times["rest_adapter"].append(time.perf_counter() - started)
    times["api_runuser"], times["api_rest"] = api_times(n, rest, script, jobs, rest_jobs, as_user)
    times["serve_runuser"], times["serve_rest"] = serve_times(
        n, rest, workdir, script, jobs, rest_jobs, as_user
    )
    ms = {k: median_ms(v) for k, v in times.items()}
    owners = subprocess.run(
        ["squeue", "-h", "-o", "%u", f"--jobs={','.join(rest_jobs)}"], capture_output=True, text=True
    )
    ran_as = sorted(set(owners.stdout.split()))
    print(f"jobs per side: {n}; mapped OS user {USER}; the rest backend's jobs belong to {ran_as}")
    print(f"raw sbatch (root)            median {ms['raw']:7.2f} ms/job")
    print(f"raw runuser + sbatch         median {ms['runuser']:7.2f} ms/job")
    for key, label in (("cli", "service, CLI backend "), ("rest", "service, rest backend"),
                       ("rest_adapter", "rest backend submit  ")):  # fmt: skip
        print(
            f"{label}        median {ms[key]:7.2f} ms/job: {ms[key] / ms['raw']:.2f}x raw sbatch, "
            f"{ms[key] / ms['runuser']:.2f}x runuser + sbatch"
        )
    print(
        f"API POST /runs, rest backend median {ms['api_rest']:7.2f} ms/job: "
        f"{ms['api_rest'] / ms['api_runuser']:.2f}x runuser + sbatch ({ms['api_runuser']:.2f}) "
        "(server in this process)"
    )
    print(
        f"API POST /runs, rest backend median {ms['serve_rest']:7.2f} ms/job: "
        f"{ms['serve_rest'] / ms['serve_runuser']:.2f}x runuser + sbatch ({ms['serve_runuser']:.2f}) "
        f"(gw serve in its own process; target <= {API_REST_TARGET})"
    )
    print(f"  (p90 rest service {statistics.quantiles(times['rest'], n=10)[-1] * 1000:.2f} ms)")
    ratio = ms["rest"] / ms["runuser"]
    api_ratio = ms["serve_rest"] / ms["serve_runuser"]
    missed = [
        what
        for what, bad in (
            ("service via rest backend", ratio > REST_TARGET),
            ("API via rest backend, gw serve", api_ratio > API_REST_TARGET),
            (f"jobs not all owned by {USER}", ran_as != [USER]),
        )
        if bad
    ]
    print(
        f"service submit via rest backend vs runuser + sbatch: ratio {ratio:.2f} (target <= {REST_TARGET}); "
        f"API through gw serve: ratio {api_ratio:.2f} (target <= {API_REST_TARGET}); "
        + ("all targets met" if not missed else f"TARGET MISSED: {', '.join(missed)}")
    )
    return 0 if not missed else 1


def api_times(n: int, services, script: str, jobs: list[str], rest_jobs: list[str], as_user: tuple[str, ...]):  # noqa: ANN001, ANN201
    """(runuser + sbatch seconds, POST /runs seconds), N of each, alternating; uvicorn in a thread."""
    token = services.auth.issue_token(Principal.operator(), "bench", name="bench")[0]
    with serve_in_thread(create_app(services=services)) as url:
        return post_times(url, token, n, script, jobs, rest_jobs, as_user)


def serve_times(  # noqa: PLR0913
    n: int,
    services,
    workdir: Path,
    script: str,
    jobs: list[str],
    rest_jobs: list[str],
    as_user: tuple[str, ...],  # noqa: ANN001
) -> tuple[list[float], list[float]]:
    """(runuser + sbatch seconds, POST /runs seconds), N of each, alternating, with ``gw serve`` in its
    own process on the rest side's database and the rest backend (daemons of its own, in their own
    socket directory)."""
    token = services.auth.issue_token(Principal.operator(), "bench", name="bench-serve")[0]
    env = {
        "GATEWAY_DATABASE_URL": services.settings.database_url,
        "GATEWAY_RUNS_DIR": str(services.settings.runs_dir),
        "GATEWAY_SLURM_BACKEND": "rest",
        "GATEWAY_SLURMRESTD_SOCKET_DIR": str(workdir / "restd-serve"),
    }
    with GwServe(env, workdir / "serve.log") as serve:
        return post_times(serve.url, token, n, script, jobs, rest_jobs, as_user)


def post_times(  # noqa: PLR0913
    url: str, token: str, n: int, script: str, jobs: list[str], rest_jobs: list[str], as_user: tuple[str, ...]
) -> tuple[list[float], list[float]]:
    """After 3 untimed posts (the server's slurmrestd for the user starts there), N raw ``runuser`` +
    ``sbatch`` and N ``POST /runs`` to ``url``, alternating: (raw seconds, API seconds)."""
    raw: list[float] = []
    api: list[float] = []
    with http(url, token) as client:
        for i in range(n + 3):
            if i >= 3:
                raw.append(timed_sbatch(script, jobs, as_user))
            time.sleep(SETTLE_S)
            started = time.perf_counter()
            run = client.request("POST", "/runs", body=SPEC)
            took = time.perf_counter() - started
            jobs.append(run["job_id"])
            if i >= 3:
                api.append(took)
                rest_jobs.append(run["job_id"])
    return raw, api


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
