"""Where one submission's time goes: milliseconds and SQL statements per part.

    .venv/bin/python -m bench.profile_submit [N]

Submits N held runs through ``RunService.submit`` and N through ``POST
/runs`` (uvicorn in a thread of this process), timing each part of the path
by wrapping the service methods that do it, and counting the SQL statements
each part sends (SQLAlchemy's ``before_cursor_execute``). Prints the median
per part; ``docs/performance.md`` keeps the figures. For a sampling profile
of the same path run it under py-spy::

    py-spy record -o submit.svg -- .venv/bin/python -m bench.profile_submit 200

Every job is cancelled at the end.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event

import gateway.services.runs.run_service as runs_module
from bench import take_down
from bench.serve import serve_in_thread
from bench.submit import SITE, SPEC, http
from gateway.api import create_app
from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.core.spec.run_spec import build_spec
from gateway.settings import Settings
from gateway.wiring import build_services


class Parts:
    """Time and SQL statements per named part of one request, summed while a part runs."""

    def __init__(self) -> None:
        self.current: list[str] = []
        self.ms: dict[str, float] = defaultdict(float)
        self.statements: dict[str, int] = defaultdict(int)
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.counts: dict[str, list[int]] = defaultdict(list)

    def wrap(self, owner: Any, attribute: str, part: str) -> None:
        """Replace ``owner.attribute`` (a callable) with one that books its time under ``part``."""
        inner: Callable = getattr(owner, attribute)

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.current.append(part)
            started = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.ms[part] += (time.perf_counter() - started) * 1000
                self.current.pop()
                if self.current:  # an inner part's time is not its caller's own
                    self.ms[self.current[-1]] -= (time.perf_counter() - started) * 1000

        setattr(owner, attribute, timed)

    def statement(self, *_args: Any) -> None:
        self.statements[self.current[-1] if self.current else "outside"] += 1

    def close_request(self, total_ms: float) -> None:
        """End one request: keep its parts, with what no part took as ``other``."""
        self.ms["other"] = total_ms - sum(v for k, v in self.ms.items() if k != "other")
        for part, value in self.ms.items():
            self.samples[part].append(value)
        for part in set(self.statements) | set(self.ms):
            self.counts[part].append(self.statements.get(part, 0))
        self.ms, self.statements = defaultdict(float), defaultdict(int)

    def report(self, title: str) -> None:
        print(f"\n{title}")
        total = 0.0
        for part in sorted(self.samples, key=lambda p: -statistics.median(self.samples[p])):
            median = statistics.median(self.samples[part])
            total += median
            statements = statistics.median(self.counts.get(part, [0]))
            print(f"  {part:<22} {median:7.3f} ms   {statements:4.0f} SQL statements")
        print(f"  {'sum of medians':<22} {total:7.3f} ms")
        self.samples, self.counts = defaultdict(list), defaultdict(list)


def instrument(services: Any, parts: Parts) -> None:
    """Wrap each part of the submit path of ``services`` (and count its SQL statements)."""
    runs = services.runs
    parts.wrap(services.auth, "authenticate", "authentication")
    parts.wrap(runs.admission, "admit", "admission reads")
    parts.wrap(runs_module, "render_sbatch", "rendering")
    parts.wrap(runs_module, "resolve_inputs", "inputs")
    parts.wrap(runs_module, "environment_of", "environment")
    parts.wrap(runs_module, "_submit_audit", "audit entry")
    parts.wrap(runs.store, "create_run", "commit before sbatch")
    parts.wrap(runs.host, "make_run_dir", "run directory")
    parts.wrap(runs.slurm, "submit", "sbatch")
    parts.wrap(runs.store, "record_job_id", "commit after sbatch")
    parts.wrap(runs.metrics, "submitted", "metrics")
    event.listen(services.db.engine, "before_cursor_execute", parts.statement)


def main(n: int) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gw-profile-"))
    settings = Settings(database_url=f"sqlite:///{workdir}/gateway.db", runs_dir=workdir / "runs")
    services = build_services(settings)
    account = f"gwprof{uuid.uuid4().hex[:8]}"
    services.site.apply(Principal.operator(), parse_site(SITE.format(account=account, os_user="root")))
    try:
        profile(n, services)
    finally:
        take_down(services, account)
        services.close()
    return 0


def profile(n: int, services: Any) -> None:
    token = services.auth.issue_token(Principal.operator(), "bench", name="bench")[0]
    parts = Parts()
    instrument(services, parts)
    spec = build_spec(SPEC)
    for i in range(n + 3):
        started = time.perf_counter()
        principal = services.auth.authenticate(token)
        services.runs.submit(spec, principal=principal)
        parts.close_request((time.perf_counter() - started) * 1000)
        if i < 3:  # warm-up
            parts.samples.clear()
            parts.counts.clear()
    parts.report(f"through the service (authenticate + RunService.submit), median of {n}")

    with serve_in_thread(create_app(services=services)) as url, http(url, token) as c:
        for i in range(n + 3):
            started = time.perf_counter()
            c.request("POST", "/runs", body=SPEC)
            parts.close_request((time.perf_counter() - started) * 1000)
            if i < 3:
                parts.samples.clear()
                parts.counts.clear()
    parts.report(f"through the API (POST /runs, uvicorn in this process; other: HTTP, JSON), median of {n}")


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
