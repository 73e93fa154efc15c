"""Benchmark: submitting through the SSH runner (a real sshd on loopback) against the local runner.

    .venv/bin/python -m bench.ssh [N]

In one process, alternating job by job so both sides see the same cluster load:
- runner: N ``sbatch`` of the same rendered script as the job's user, through
  ``LocalRunner`` (``runuser``) and through ``SshRunner`` (that user's own key,
  pooled connections);
- service: N runs through ``RunService.submit`` of a gateway on this machine
  and of one whose submit host is the sshd (its run directory, account
  look-up and sbatch all over SSH).
Prints per-job medians and ratios; exits 1 when a ratio misses its target.
Jobs are held (none starts while the next is timed) and cancelled.

Targets: over SSH <= 1.5x local per job, for the runner and for the service (pooling: no
handshake per job; the account look-up is remembered for a minute).
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import take_down
from bench.submit import ensure_os_user, median_ms
from gateway.adapters.runner import LocalRunner
from gateway.adapters.slurm import SlurmCLI
from gateway.core.access.values import Principal
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.site.schema import parse_site
from gateway.core.spec.run_spec import build_spec
from gateway.settings import Settings
from gateway.wiring import build_machine, build_services
from tests.sshd import SshServer, ensure_home

RUNNER_TARGET = 1.5
USER = "gwtalice"  # a real OS user (the tests' own); created here when missing
SPEC = {
    "name": "bench-ssh",
    "project": "bench",
    "queue": "cpu",
    "command": "true",
    "workdir": "/tmp",
    "resources": {"mem_gb": 0.1, "walltime_min": 1},
    "hold": True,
}
SITE = """
users: [{{name: bench, os_user: {user}}}]
projects:
  - name: bench
    slurm_account: {account}
    members: [{{user: bench, role: member}}]
    queues: [{{name: cpu, partition: cpu}}]
"""


def timed(call) -> tuple[float, str]:  # noqa: ANN001
    started = time.perf_counter()
    job = call()
    return time.perf_counter() - started, job


def main(n: int) -> int:
    ensure_os_user(USER)
    ensure_home(USER)
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-ssh-"))
    workdir.chmod(0o755)
    runs = workdir / "runs"
    runs.mkdir(mode=0o1777)
    runs.chmod(0o1777)
    server = SshServer(workdir / "sshd", ["root", USER])
    server.start()
    account = f"gwbench{uuid.uuid4().hex[:8]}"
    site = parse_site(SITE.format(user=USER, account=account))
    common = {"runs_dir": runs, "slurm_submit_timeout_s": 30}
    local = build_services(Settings(database_url=f"sqlite:///{workdir}/local.db", **common))
    ssh_env = {k.removeprefix("GATEWAY_").lower(): v for k, v in server.settings().items()}
    remote = build_services(Settings(database_url=f"sqlite:///{workdir}/ssh.db", **common, **ssh_env))
    local.site.apply(Principal.operator(), site)
    remote.site.apply(Principal.operator(), site, sync_slurm=False)  # the same account, made once
    jobs: list[str] = []
    try:
        return measure(n, local, remote, account, jobs)
    finally:
        take_down(local, account)
        remote.close()
        local.close()
        server.stop()


def measure(n: int, local, remote, account: str, jobs: list[str]) -> int:  # noqa: ANN001
    spec = build_spec(SPEC)
    script = render_sbatch(
        spec, local.templates, run_id="bench-ssh", run_dir="/tmp", target=SubmitTarget("cpu", account=account)
    ).text
    direct = SlurmCLI(LocalRunner(), submit_timeout_s=30)
    ssh, _, _ = build_machine(remote.settings)  # a runner of its own, as the gateway's is built
    over_ssh = SlurmCLI(ssh, submit_timeout_s=30)

    def tag() -> str:
        return f"bench-{uuid.uuid4().hex}"

    for _ in range(3):  # warm-up: the pooled connection is made here, as a running gateway has it
        jobs.append(direct.prepare_submit(tag=tag(), as_user=USER).send(script))
        jobs.append(over_ssh.prepare_submit(tag=tag(), as_user=USER).send(script))
    local_runner, ssh_runner = [], []
    for _ in range(n):
        for times, cli in ((local_runner, direct), (ssh_runner, over_ssh)):
            took, job = timed(lambda cli=cli: cli.prepare_submit(tag=tag(), as_user=USER).send(script))
            times.append(took)
            jobs.append(job)

    local_principal = local.access.principal("bench")
    remote_principal = remote.access.principal("bench")
    remote.runs.submit(spec, principal=remote_principal)  # warm-up
    local_service, ssh_service = [], []
    for _ in range(n):
        for times, services, who in (
            (local_service, local, local_principal),
            (ssh_service, remote, remote_principal),
        ):
            took, run = timed(lambda s=services, p=who: s.runs.submit(spec, principal=p))
            times.append(took)
            jobs.append(run.latest.job_id)

    runner_ratio = median_ms(ssh_runner) / median_ms(local_runner)
    service_ratio = median_ms(ssh_service) / median_ms(local_service)
    print(f"jobs per side: {n}, as {USER}; SSH logins with a connection open: {ssh.pool.logins()}")
    for what, ssh_times, local_times, ratio in (
        ("sbatch via runner", ssh_runner, local_runner, runner_ratio),
        ("service submit   ", ssh_service, local_service, service_ratio),
    ):
        print(
            f"{what}  ssh {median_ms(ssh_times):6.2f} ms/job vs local {median_ms(local_times):6.2f}: "
            f"ratio {ratio:.2f} (target <= {RUNNER_TARGET})"
        )
    ok = runner_ratio <= RUNNER_TARGET and service_ratio <= RUNNER_TARGET
    print("all targets met" if ok else "TARGET MISSED")
    ssh.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
