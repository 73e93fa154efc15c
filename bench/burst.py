"""A burst of submissions: N runs from C concurrent API clients against N raw sbatch from C shells.

Used by ``bench.submit``. Each side reports its throughput (jobs per second
of wall time) and per-submission latency (p50, p99). The API side is then
checked against Slurm itself: every run answered 201 with a job id, and
Slurm holds exactly one job for each run's tag (no failed, no duplicated
submission); the raw side likewise by its own comments.
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.core.slurm.tags import attempt_tag


@dataclass(frozen=True)
class Burst:
    """One side of a burst: how many made it, in how long, at what latency."""

    done: int
    wall_s: float
    latencies_s: list[float]

    @property
    def per_s(self) -> float:
        """Submissions per second of wall time."""
        return self.done / self.wall_s

    def percentile_ms(self, p: int) -> float:
        """The ``p``-th percentile (1-99) of the latencies, in ms."""
        if len(self.latencies_s) < 2:
            return self.latencies_s[0] * 1000 if self.latencies_s else float("nan")
        return statistics.quantiles(self.latencies_s, n=100, method="inclusive")[p - 1] * 1000

    def line(self, label: str) -> str:
        """One report line."""
        return (
            f"{label:<28} {self.done} in {self.wall_s:6.2f} s: {self.per_s:6.1f}/s, "
            f"p50 {self.percentile_ms(50):6.1f} ms, p99 {self.percentile_ms(99):6.1f} ms"
        )


def _run_concurrently(n: int, clients: int, one: Callable[[int, int], None]) -> Burst:
    """``one(client, i)`` for i in 0..n-1, spread over ``clients`` threads; each call timed."""
    counter = iter(range(n))
    lock = threading.Lock()
    latencies: list[float] = []
    errors: list[BaseException] = []

    def work(client: int) -> None:
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            started = time.perf_counter()
            try:
                one(client, i)
            except BaseException as exc:  # noqa: BLE001 - reported after the burst
                errors.append(exc)
                continue
            took = time.perf_counter() - started
            with lock:
                latencies.append(took)

    threads = [threading.Thread(target=work, args=(c,)) for c in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall_s = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} of {n} submissions failed; the first: {errors[0]!r}")
    return Burst(len(latencies), wall_s, latencies)


def raw_burst(script: str, n: int, clients: int, jobs: list[str]) -> tuple[Burst, str]:
    """``n`` raw ``sbatch --parsable`` calls from ``clients`` parallel workers (each one after another,
    as a shell loop does); returns the burst and the comment prefix its jobs carry."""
    prefix = f"rawburst-{uuid.uuid4().hex[:8]}-"

    def one(_client: int, i: int) -> None:
        out = subprocess.run(
            ["sbatch", "--parsable", f"--comment={prefix}{i}"],
            input=script,
            capture_output=True,
            text=True,
            check=True,
            cwd="/tmp",
        )
        jobs.append(out.stdout.strip().split(";")[0])

    return _run_concurrently(n, clients, one), prefix


def api_burst(url: str, token: str, spec: dict, n: int, clients: int, jobs: list[str]) -> tuple[Burst, list]:
    """``n`` ``POST /runs`` from ``clients`` concurrent HTTP clients (one kept-alive connection each);
    returns the burst and the run ids.

    The clients are the standard library's ``http.client``: they share this process's cores with
    the server, Slurm and the raw side's shells, and the lightest client leaves the server the
    most (httpx costs about three times its CPU per request). Every answer is read in full and
    must be 201 with a job id."""
    parts = urlsplit(url)
    body = json.dumps(spec).encode()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    sessions = [http.client.HTTPConnection(parts.hostname, parts.port, timeout=60) for _ in range(clients)]
    runs: list[str] = []

    def one(client: int, _i: int) -> None:
        session = sessions[client]
        session.request("POST", "/runs", body=body, headers=headers)
        response = session.getresponse()
        answer = response.read()
        if response.status != 201:
            raise RuntimeError(f"POST /runs answered {response.status}: {answer[:300]!r}")
        run = json.loads(answer)
        if not run.get("job_id"):
            raise RuntimeError(f"run {run['id']} has no job id: {run['state']}")
        runs.append(run["id"])
        jobs.append(run["job_id"])

    try:
        return _run_concurrently(n, clients, one), runs
    finally:
        for session in sessions:
            session.close()


def slurm_comments(account: str) -> Counter:
    """How many of ``account``'s jobs in Slurm carry each comment."""
    out = subprocess.run(
        ["squeue", "-h", f"--account={account}", "--states=all", "-o", "%k"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Counter(line.strip() for line in out.stdout.splitlines() if line.strip())


def check_once(comments: Counter, expected: list[str]) -> list[str]:
    """What is wrong with Slurm's jobs for these comments: missing or duplicated ones (none: [])."""
    problems = [f"{c}: {comments[c]} jobs" for c in expected if comments[c] != 1]
    return problems[:5] + ([f"... {len(problems) - 5} more"] if len(problems) > 5 else [])


def run_tags(run_ids: list[str]) -> list[str]:
    """The ``--comment`` tags of the first attempts of these runs."""
    return [attempt_tag(r, 1) for r in run_ids]
