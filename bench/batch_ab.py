"""Benchmark: gw serve's CPU per run for two trees of the gateway, side by side in one process run.

    .venv/bin/python -m bench.batch_ab BEFORE_TREE [N] [--one-by-one M] [--rounds R] [--backend cli]

``BEFORE_TREE`` is a checkout of the gateway to compare with (``git archive COMMIT | tar -x -C
DIR``); the other side is this tree. Each round starts ``gw serve`` of one tree then of the other
(the order alternates), each on a fresh SQLite database, and measures as ``bench.batch`` does: its
processes' CPU per run over M runs one by one (``POST /runs``) and over one ``POST /runs/batch`` of
N. On a shared machine the load moves within minutes, so the two trees are measured in turns and
the ratio after/before is reported per round and as the median over rounds. Every job is cancelled.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench import take_down
from bench.batch import Api
from bench.burst_configs import cancel, wait_for_room
from bench.serve import ROOT, GwServe
from bench.submit import SITE, SPEC, ensure_os_user
from gateway.core.access.values import Principal
from gateway.core.site.schema import parse_site
from gateway.settings import Settings
from gateway.wiring import build_services


def measure(tree: Path, backend: str, workdir: Path, account: str, n: int, one: int) -> tuple[float, float]:
    """gw serve of ``tree``: (CPU ms per run one by one, CPU ms per run in a batch of ``n``)."""
    db = workdir / f"{tree.name}-{uuid.uuid4().hex[:6]}.db"
    url = f"sqlite:///{db}"
    settings = Settings(database_url=url, runs_dir=workdir / "runs")
    services = build_services(settings)
    try:
        services.site.apply(Principal.operator(), parse_site(SITE.format(account=account, os_user="gwbench")))
        token = services.auth.issue_token(Principal.operator(), "bench", name="ab")[0]
    finally:
        services.close()
    env = {
        "PYTHONPATH": str(tree),
        "GATEWAY_DATABASE_URL": url,
        "GATEWAY_RUNS_DIR": str(workdir / "runs"),
        "GATEWAY_SLURM_BACKEND": backend,
        "GATEWAY_SLURMRESTD_SOCKET_DIR": str(workdir / "restd"),
    }
    jobs: list[str] = []
    try:
        with GwServe(env, workdir / f"serve-{tree.name}.log") as serve:
            api = Api(serve.url, token)
            try:
                for _ in range(3):
                    jobs.append(api.post("/runs", SPEC)["job_id"])
                warm = api.post("/runs/batch", {"items": [{"spec": SPEC}] * 8})
                jobs += [i["run"]["job_id"] for i in warm["items"]]
                before = serve.cpu_s()[0]
                for _ in range(one):
                    jobs.append(api.post("/runs", SPEC, key=f"one-{uuid.uuid4()}")["job_id"])
                one_ms = (serve.cpu_s()[0] - before) / one * 1000
                items = [{"spec": {**SPEC, "params": {"i": i}}} for i in range(n)]
                before = serve.cpu_s()[0]
                answer = api.post("/runs/batch", {"items": items}, key=f"batch-{uuid.uuid4()}")
                batch_ms = (serve.cpu_s()[0] - before) / n * 1000
                jobs += [(i.get("run") or {}).get("job_id") or "" for i in answer["items"]]
                failed = sum(1 for i in answer["items"] if i.get("error"))
                if failed:
                    raise RuntimeError(f"{failed} items of the batch failed")
            finally:
                api.close()
    finally:
        cancel([j for j in jobs if j])
    return one_ms, batch_ms


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bench.batch_ab", description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the tree to compare with (a gateway checkout)")
    parser.add_argument("n", type=int, nargs="?", default=200, help="runs in each batch")
    parser.add_argument("--one-by-one", type=int, default=50, help="runs submitted one by one")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default="cli", choices=["cli", "rest"])
    args = parser.parse_args(argv)
    trees = {"before": args.before.resolve(), "after": ROOT}
    workdir = Path(tempfile.mkdtemp(prefix="gw-bench-ab-"))
    workdir.chmod(0o755)
    ensure_os_user("gwbench")
    account = f"gwab{uuid.uuid4().hex[:8]}"
    setup = build_services(Settings(database_url=f"sqlite:///{workdir}/setup.db", runs_dir=workdir / "runs"))
    setup.site.apply(Principal.operator(), parse_site(SITE.format(account=account, os_user="gwbench")))
    got: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
    try:
        for r in range(args.rounds):
            order = ["before", "after"] if r % 2 == 0 else ["after", "before"]
            pair = {}
            for side in order:
                wait_for_room(args.n + args.one_by_one + 100)
                try:
                    pair[side] = measure(trees[side], args.backend, workdir, account, args.n, args.one_by_one)
                except RuntimeError as exc:  # gw serve did not come up on a loaded machine: round dropped
                    print(f"round {r + 1} {side}: {str(exc)[:200]}; round dropped", flush=True)
                    break
                load = Path("/proc/loadavg").read_text().split()[0]
                one, batch = pair[side]
                print(
                    f"round {r + 1} {side:6}: one by one {one:.2f} ms/run, "
                    f"batch of {args.n} {batch:.2f} ms/run (load {load})",
                    flush=True,
                )
            if len(pair) == 2:
                for side in pair:
                    got[side].append(pair[side])
            time.sleep(0.5)
    finally:
        take_down(setup, account)
        setup.close()
    if not got["after"]:
        print("no round completed")
        return 1
    for k, label in ((0, "one by one"), (1, f"batch of {args.n}")):
        ratios = [a[k] / b[k] for a, b in zip(got["after"], got["before"], strict=True)]
        med_b = statistics.median(x[k] for x in got["before"])
        med_a = statistics.median(x[k] for x in got["after"])
        print(
            f"{label}: before {med_b:.2f} ms/run, after {med_a:.2f} ms/run "
            f"(medians of {len(ratios)} rounds); "
            "after/before per round "
            + ", ".join(f"{x:.2f}" for x in ratios)
            + f"; median {statistics.median(ratios):.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
