"""The burst of ``bench.submit`` in several server configurations, each against its own raw burst.

A configuration is ``DATABASE:WORKERS:BACKEND`` (``sqlite:1:cli``, ``postgresql:2:rest``):
``gw serve --workers WORKERS`` in its own process(es) on a fresh database of that kind, with
``GATEWAY_SLURM_BACKEND=BACKEND``. The CLI backend submits for the bench user mapped to root
(``sbatch`` forked per run); the rest backend for the user mapped to the non-root OS user
(slurmrestd runs as no root), through one kept-alive slurmrestd per user and worker. Each
configuration's API burst is followed at once by a raw burst of as many ``sbatch`` calls
from as many parallel shells (its reference, under the same load), then Slurm is asked that
every run and every raw call is exactly one job, and the configuration's jobs are cancelled
(by id) before the next one starts: Slurm keeps ended jobs for ``MinJobAge`` and refuses
submissions above ``MaxJobCount`` (10,000 here).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.burst import Burst, api_burst, check_once, raw_burst, run_tags, slurm_comments
from bench.databases import fresh_url
from bench.serve import GwServe
from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.settings import Settings
from gateway.wiring import build_services

WARM_UP_PER_CLIENT = 3  # not timed: connections, each worker's first requests, the rest daemons


@dataclass(frozen=True)
class Config:
    """One server configuration of the burst."""

    database: str  # sqlite | postgresql
    workers: int
    backend: str  # cli | rest

    @property
    def label(self) -> str:
        """For the report: ``cli, 2 workers, postgresql``."""
        plural = "s" if self.workers > 1 else ""
        return f"{self.backend}, {self.workers} worker{plural}, {self.database}"

    @property
    def user(self) -> str:
        """The gateway user of the site (``bench.submit``'s SITE) this configuration submits as."""
        return "benchu" if self.backend == "rest" else "bench"


def parse_configs(text: str) -> list[Config]:
    """``sqlite:1:cli,postgresql:2:rest`` -> configurations; raises ValueError naming a bad one."""
    configs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        parts = item.split(":")
        if (
            len(parts) != 3
            or parts[0] not in ("sqlite", "postgresql")
            or not parts[1].isdigit()
            or int(parts[1]) < 1
            or parts[2] not in ("cli", "rest")
        ):
            raise ValueError(
                f"burst configuration {item!r}: expected DATABASE:WORKERS:BACKEND, DATABASE sqlite or "
                "postgresql, WORKERS 1 or more, BACKEND cli or rest (e.g. postgresql:2:rest)"
            )
        configs.append(Config(parts[0], int(parts[1]), parts[2]))
    return configs


@dataclass(frozen=True)
class Outcome:
    """One configuration's burst: the API side, its raw reference, what Slurm found wrong."""

    config: Config
    api: Burst
    raw: Burst
    problems: list[str]
    serve_cpu_ms_per_run: float  # gw serve's CPU (its Python processes) during the API burst, per run
    daemons_cpu_ms_per_run: float  # the slurmrestd daemons' (rest backend), per run

    @property
    def ratio(self) -> float:
        """API throughput / raw throughput."""
        return self.api.per_s / self.raw.per_s


def run_config(config: Config, site: str, script: str, account: str, workdir: Path, n: int, clients: int,
               spec: dict) -> Outcome:  # fmt: skip
    """One configuration's API burst and raw burst; its jobs are cancelled before it returns."""
    jobs: list[str] = []
    runs_dir = workdir / "runs"
    wait_for_room(2 * n + 200)
    try:
        with fresh_url(config.database, workdir) as url:
            settings = Settings(database_url=url, runs_dir=runs_dir)
            services = build_services(settings)
            try:
                services.site.apply(Principal.operator(), parse_site(site))  # the account exists: adopted
                token = services.auth.issue_token(Principal.operator(), config.user, name="burst")[0]
            finally:
                services.close()
            env = {
                "GATEWAY_DATABASE_URL": url,
                "GATEWAY_RUNS_DIR": str(runs_dir),
                "GATEWAY_SLURM_BACKEND": config.backend,
                "GATEWAY_SLURMRESTD_SOCKET_DIR": str(workdir / "restd"),
            }
            log = workdir / f"serve-{config.database}-{config.workers}-{config.backend}.log"
            with GwServe(env, log, workers=config.workers) as serve:
                warm_up(serve.url, token, spec, clients, jobs)
                before = serve.cpu_s()
                api, run_ids = api_burst(serve.url, token, spec, n, clients, jobs)
                after = serve.cpu_s()
                cpu_ms = [(b - a) * 1000 / max(api.done, 1) for a, b in zip(before, after, strict=True)]
        raw, prefix = raw_burst(script, n, clients, jobs)
        comments = slurm_comments(account)
        problems = check_once(comments, run_tags(run_ids))
        problems += check_once(comments, [f"{prefix}{i}" for i in range(n)])
        if len(set(run_ids)) != len(run_ids):
            problems.append(f"{len(run_ids) - len(set(run_ids))} run ids answered twice")
        return Outcome(config, api, raw, problems, cpu_ms[0], cpu_ms[1])
    finally:
        cancel(jobs)


def warm_up(url: str, token: str, spec: dict, clients: int, jobs: list[str]) -> None:
    """A few submissions on as many connections as the burst uses, not timed."""
    api_burst(url, token, spec, clients * WARM_UP_PER_CLIENT, clients, jobs)


def wait_for_room(jobs: int, *, timeout_s: float = 400) -> None:
    """Wait until Slurm can take ``jobs`` more (its ``MaxJobCount`` counts ended jobs too, until
    ``MinJobAge`` has passed); raises RuntimeError when it cannot within ``timeout_s``."""
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"^MaxJobCount\s*=\s*(\d+)", config, re.MULTILINE)
    limit = int(found.group(1)) if found else 10_000
    deadline = time.monotonic() + timeout_s
    while True:
        listed = subprocess.run(["squeue", "-h", "--states=all", "-o", "%i"], capture_output=True, text=True)
        held = len(listed.stdout.split())
        if held + jobs <= limit:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"Slurm holds {held} jobs of at most {limit}: no room for {jobs} more")
        print(f"waiting for Slurm to purge ended jobs: {held} held, {limit} at most, {jobs} to come")
        time.sleep(10)


def cancel(jobs: list[str]) -> None:
    """Cancel these Slurm jobs by id, a thousand per call."""
    ids = [j for j in jobs if j]
    for start in range(0, len(ids), 1000):
        subprocess.run(["scancel", *ids[start : start + 1000]], check=False, capture_output=True)


def report_lines(outcomes: list[Outcome], target: float) -> tuple[list[str], list[str]]:
    """(lines to print, targets missed). Single-process SQLite is the reference, reported only;
    every configuration must submit each run exactly once."""
    lines, missed = [], []
    for o in outcomes:
        gated = not (o.config.database == "sqlite" and o.config.workers == 1)
        lines.append(f"burst [{o.config.label}]")
        lines.append("  " + o.api.line("API"))
        lines.append("  " + o.raw.line("raw sbatch"))
        verdict = ("meets" if o.ratio >= target else "MISSES") if gated else "reported, not gated"
        lines.append(
            f"  throughput ratio {o.ratio:.2f} (target >= {target}: {verdict}); "
            f"CPU per run: gw serve {o.serve_cpu_ms_per_run:.2f} ms"
            + (f", slurmrestd {o.daemons_cpu_ms_per_run:.2f} ms" if o.config.backend == "rest" else "")
        )
        lines += [f"  problem: {p}" for p in o.problems] or ["  every submission is exactly one Slurm job"]
        if gated and o.ratio < target:
            missed.append(f"burst throughput [{o.config.label}]")
        if o.problems:
            missed.append(f"burst exactly-once [{o.config.label}]")
    return lines, missed
