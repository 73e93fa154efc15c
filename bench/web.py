"""Benchmark: the web run list against the API's own GET /runs, for the same page of a big database.

    .venv/bin/python -m bench.web [RUNS] [REPEATS]

The database gets RUNS runs (default 10,000; store records, no Slurm jobs).
One uvicorn server in this process serves both the API and the pages; the
benchmark signs in to the pages with the same token the API calls carry,
then alternates GET /runs?limit=50 and GET /ui/runs?limit=50 (the first
page, then the page after a cursor), REPEATS times each (default 40), and
compares the medians.

Target: the page renders in at most 2x the API's time for the same page.
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench import bench_run
from bench.serve import serve_in_thread
from gateway.api import create_app
from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.settings import Settings
from gateway.web import mount_web
from gateway.wiring import build_services

RATIO_TARGET = 2.0
PAGE = 50
SITE = """
allow_root_mapping: true
users: [{name: bench, os_user: root}]
projects:
  - name: bench
    slurm_account: gwbenchweb
    members: [{user: bench, role: member}]
    queues: [{name: cpu, partition: cpu}]
"""


def _timed(client: httpx.Client, path: str, params: dict) -> float:
    started = time.perf_counter()
    response = client.get(path, params=params)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def _sign_in(client: httpx.Client, token: str) -> None:
    page = client.get("/ui/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert csrf is not None, "the sign-in page has no CSRF token"
    signed = client.post("/ui/login", data={"csrf": csrf.group(1), "token": token, "next": "/ui/runs"})
    assert signed.status_code == 303, signed.text


def main(total: int, repeats: int) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-web-"))
    settings = Settings(database_url=f"sqlite:///{workdir}/gateway.db", runs_dir=workdir / "runs")
    services = build_services(settings)
    services.site.apply(Principal.operator(), parse_site(SITE), sync_slurm=False)
    token = services.auth.issue_token(Principal.operator(), "bench", name="bench")[0]
    started = time.perf_counter()
    for _ in range(total):
        services.runs.store.create_run(bench_run())
    print(f"{total} runs recorded in {time.perf_counter() - started:.1f} s")
    app = mount_web(create_app(services=services))
    try:
        with (
            serve_in_thread(app) as url,
            httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client,
        ):
            _sign_in(client, token)
            cursor = client.get("/runs", params={"limit": PAGE}).json()["next_cursor"]
            api_s: list[float] = []
            web_s: list[float] = []
            for i in range(repeats + 3):
                params = {"limit": PAGE, **({"cursor": cursor} if i % 2 else {})}
                a = _timed(client, "/runs", params)
                w = _timed(client, "/ui/runs", params)
                if i >= 3:  # the first few warm both up
                    api_s.append(a)
                    web_s.append(w)
            rows = client.get("/ui/runs", params={"limit": PAGE}).text.count("<tr data-run=")
            assert rows == PAGE, f"the page shows {rows} runs, not {PAGE}"
    finally:
        services.site.apply(
            Principal.operator(), parse_site("users: []\nprojects: []\n"), prune=True, sync_slurm=False
        )
        services.close()
    api_ms, web_ms = statistics.median(api_s) * 1000, statistics.median(web_s) * 1000
    ratio = web_ms / api_ms
    verdict = "ok" if ratio <= RATIO_TARGET else "TOO SLOW"
    print(
        f"run list of {PAGE} out of {total} runs: API GET /runs {api_ms:.1f} ms, "
        f"page /ui/runs {web_ms:.1f} ms (medians of {repeats}): {ratio:.2f}x "
        f"(target <= {RATIO_TARGET}x) {verdict}"
    )
    return 0 if ratio <= RATIO_TARGET else 1


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    sys.exit(main(args[0] if args else 10_000, args[1] if len(args) > 1 else 40))
