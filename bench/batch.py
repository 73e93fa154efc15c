"""Benchmark: gw serve's CPU per run, one by one and in one POST /runs/batch, against raw sbatch.

    .venv/bin/python -m bench.batch [N] [--one-by-one M] [--clients C] [--backends cli,rest]

For each Slurm backend, ``gw serve`` in its own process on a fresh SQLite database, then side by side:

- M runs one by one (``POST /runs``, one client): gw serve's CPU per run (its processes' user +
  system time over the calls; the sbatch children it forks are not its own), and wall per run;
- N runs in one ``POST /runs/batch``: gw serve's CPU per run and the wall time of the request;
- N raw ``sbatch --parsable`` from C parallel shells right after (the issue's reference: 1,000
  calls from 8 shells): their wall time and the sbatch processes' CPU per job.

Every figure is reported as a ratio against the raw side measured in the same run. Then Slurm
is asked that every run and every raw call is exactly one job, and the jobs are cancelled.

Targets (issue 31): gw serve CPU <= 2.5 ms per run one by one and <= 1.0 ms per run in a batch of
1,000; the batch's wall <= 1.0x the raw burst's on slurmrestd and <= 1.3x on the CLI backend;
0 failed and 0 duplicated submissions. Exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bench import take_down
from bench.burst import check_once, raw_burst, run_tags, slurm_comments
from bench.burst_configs import cancel, wait_for_room
from bench.serve import GwServe
from bench.submit import SITE, SPEC, ensure_os_user
from gateway.core.access.values import Principal
from gateway.core.sbatch.context import SubmitTarget
from gateway.core.sbatch.render import render_sbatch
from gateway.core.site.schema import parse_site
from gateway.core.spec.run_spec import build_spec
from gateway.settings import Settings
from gateway.wiring import build_services

ONE_CPU_TARGET_MS = 2.5
BATCH_CPU_TARGET_MS = 1.0
WALL_TARGET = {"rest": 1.0, "cli": 1.3}


@dataclass(frozen=True)
class Side:
    """One backend's figures."""

    backend: str
    one_cpu_ms: float  # gw serve CPU per run, one by one
    one_wall_ms: float  # wall per POST /runs
    batch_cpu_ms: float  # gw serve CPU per run in the batch
    batch_wall_s: float
    raw_wall_s: float
    raw_cpu_ms: float  # the raw sbatch processes' CPU per job
    failed: int
    problems: list[str]

    @property
    def wall_ratio(self) -> float:
        return self.batch_wall_s / self.raw_wall_s


class Api:
    """One kept-alive connection to gw serve with a token."""

    def __init__(self, url: str, token: str) -> None:
        parts = urlsplit(url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(self, path: str, body: object, key: str | None = None) -> dict:
        headers = {**self.headers, **({"Idempotency-Key": key} if key else {})}
        self.conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status not in (200, 201):
            raise RuntimeError(f"POST {path} answered {response.status}: {data[:300]!r}")
        return json.loads(data)

    def close(self) -> None:
        self.conn.close()


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_backend(backend: str, args: argparse.Namespace, workdir: Path, account: str, script: str) -> Side:
    """One backend's three sides; its jobs are cancelled before it returns."""
    jobs: list[str] = []
    user = "benchu" if backend == "rest" else "bench"
    db = workdir / f"{backend}.db"
    url = f"sqlite:///{db}"
    wait_for_room(2 * args.n + args.one_by_one + 200)
    settings = Settings(database_url=url, runs_dir=workdir / "runs")
    services = build_services(settings)
    try:
        services.site.apply(
            Principal.operator(), parse_site(SITE.format(account=account, os_user=args.os_user))
        )
        token = services.auth.issue_token(Principal.operator(), user, name="batch")[0]
    finally:
        services.close()
    env = {
        "GATEWAY_DATABASE_URL": url,
        "GATEWAY_RUNS_DIR": str(workdir / "runs"),
        "GATEWAY_SLURM_BACKEND": backend,
        "GATEWAY_SLURMRESTD_SOCKET_DIR": str(workdir / "restd"),
    }
    run_ids: list[str] = []
    failed = 0
    try:
        with GwServe(env, workdir / f"serve-{backend}.log") as serve:
            api = Api(serve.url, token)
            try:
                for _ in range(3):  # warm-up, not timed: the connection, the first requests, the daemons
                    jobs.append(api.post("/runs", SPEC)["job_id"])
                warm = api.post("/runs/batch", {"items": [{"spec": SPEC}] * 8})
                jobs += [i["run"]["job_id"] for i in warm["items"]]
                before, started = serve.cpu_s()[0], time.perf_counter()
                for _ in range(args.one_by_one):
                    run = api.post("/runs", SPEC, key=f"one-{uuid.uuid4()}")
                    jobs.append(run["job_id"])
                    run_ids.append(run["id"])
                one_wall = (time.perf_counter() - started) / args.one_by_one
                one_cpu = (serve.cpu_s()[0] - before) / args.one_by_one
                items = [{"spec": {**SPEC, "params": {"i": i}}} for i in range(args.n)]
                before, started = serve.cpu_s()[0], time.perf_counter()
                answer = api.post("/runs/batch", {"items": items}, key=f"batch-{uuid.uuid4()}")
                batch_wall = time.perf_counter() - started
                batch_cpu = (serve.cpu_s()[0] - before) / args.n
            finally:
                api.close()
        for item in answer["items"]:
            run = item.get("run")
            if item.get("error") or not run or not run.get("job_id"):
                failed += 1
            if run:
                run_ids.append(run["id"])
                jobs.append(run.get("job_id") or "")
        raw_before = children_cpu_s()
        raw, prefix = raw_burst(script, args.n, args.clients, jobs)
        raw_cpu = (children_cpu_s() - raw_before) / args.n
        comments = slurm_comments(account)
        problems = check_once(comments, run_tags(run_ids))
        problems += check_once(comments, [f"{prefix}{i}" for i in range(args.n)])
        ms = 1000
        cpu = (one_cpu * ms, one_wall * ms, batch_cpu * ms)
        return Side(backend, *cpu, batch_wall, raw.wall_s, raw_cpu * ms, failed, problems)
    finally:
        cancel(jobs)


def verdict(value: float, target: float) -> str:
    return "meets" if value <= target else "MISSES"


def report(sides: list[Side], n: int, clients: int) -> int:
    missed = []
    for s in sides:
        target = WALL_TARGET[s.backend]
        one, batch = s.one_cpu_ms, s.batch_cpu_ms
        print(f"[{s.backend} backend]")
        print(
            f"  one by one: gw serve CPU {one:.2f} ms/run ({one / s.raw_cpu_ms:.2f}x raw sbatch's "
            f"{s.raw_cpu_ms:.2f} ms/job), wall {s.one_wall_ms:.1f} ms/run "
            f"(target CPU <= {ONE_CPU_TARGET_MS} ms: {verdict(one, ONE_CPU_TARGET_MS)})"
        )
        print(
            f"  batch of {n}: gw serve CPU {batch:.2f} ms/run ({batch / s.raw_cpu_ms:.2f}x raw) "
            f"(target <= {BATCH_CPU_TARGET_MS} ms: {verdict(batch, BATCH_CPU_TARGET_MS)})"
        )
        print(
            f"  wall: batch {s.batch_wall_s:.2f} s, {n} raw sbatch from {clients} shells "
            f"{s.raw_wall_s:.2f} s: {s.wall_ratio:.2f}x (target <= {target}: {verdict(s.wall_ratio, target)})"
        )
        print(
            f"  failed {s.failed}; " + ("; ".join(s.problems) or "every run and raw call is exactly one job")
        )
        if one > ONE_CPU_TARGET_MS:
            missed.append(f"{s.backend}: CPU one by one")
        if batch > BATCH_CPU_TARGET_MS:
            missed.append(f"{s.backend}: CPU in a batch")
        if s.wall_ratio > target:
            missed.append(f"{s.backend}: batch wall")
        if s.failed or s.problems:
            missed.append(f"{s.backend}: exactly once")
    if missed:
        print("missed: " + ", ".join(missed))
    return 1 if missed else 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench.batch", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "n", type=int, nargs="?", default=1000, help="runs in the batch, and raw sbatch calls"
    )
    parser.add_argument("--one-by-one", type=int, default=100, help="runs submitted one by one")
    parser.add_argument("--clients", type=int, default=8, help="parallel shells of the raw side")
    parser.add_argument("--backends", default="cli,rest", help="cli, rest or both (cli,rest)")
    parser.add_argument(
        "--os-user", default="gwbench", help="the non-root OS user of the rest backend's side"
    )
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not backends or set(backends) - {"cli", "rest"}:
        parser.error("--backends: cli, rest or cli,rest")
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-batch-"))
    workdir.chmod(0o755)  # the mapped user's run directories lie below it
    ensure_os_user(args.os_user)
    account = f"gwbatch{uuid.uuid4().hex[:8]}"
    setup = build_services(Settings(database_url=f"sqlite:///{workdir}/setup.db", runs_dir=workdir / "runs"))
    setup.site.apply(Principal.operator(), parse_site(SITE.format(account=account, os_user=args.os_user)))
    target = SubmitTarget("cpu", account=account)
    script = render_sbatch(
        build_spec(SPEC), setup.templates, run_id="raw-1", run_dir="/tmp", target=target
    ).text
    try:
        sides = [measure_backend(b, args, workdir, account, script) for b in backends]
    finally:
        take_down(setup, account)
        setup.close()
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"(a shared 2-core machine: figures are noisy; load average {load})")
    return report(sides, args.n, args.clients)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
