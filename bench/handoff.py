"""Benchmark: what the hand-off adds to a promotion, and how fast the outbox delivers webhooks.

    .venv/bin/python -m bench.handoff [MOVES]

On a fresh SQLite database (no Slurm: runs are written to the store and ended
there, as tests/service/registry_world.py does), times MOVES alias moves of
protected aliases, best of 5 rounds (the two interleaved):

- with no hand-off configured (the reference, measured in the same run);
- with an MLflow server and three webhook endpoints configured, so each move
  enqueues four outbox items in its own transaction after the move's (MLflow
  is not asked: delivery is the scheduler's).

Then works the outbox (webhooks only) with the three endpoints on a loopback receiver
that answers 204 and reports deliveries per second. Prints the ratio; exits 1
when a move with the hand-off costs 1.5 times one without or more.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from gateway.settings import Settings
from gateway.wiring import build_services
from tests.service.registry_world import add_project, ended_run, principals

TARGET = 1.5


class _Ok(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _moves(services, project: str, who, moves: int) -> float:
    name = f"m{uuid.uuid4().hex[:6]}"
    services.releases.register_model(project, name, principal=who["member"])
    services.alias_policies.set_policy(
        project, name, "prod", principal=who["lead"], roles=["lead"], approvals=0
    )
    for _ in range(2):
        _, sha = ended_run(services, project)
        services.releases.create_release(project, name, sha, principal=who["member"])
    started = time.perf_counter()
    for i in range(moves):
        services.promotions.promote(project, name, 1 + i % 2, "prod", principal=who["lead"])
    return (time.perf_counter() - started) / moves


def main(moves: int) -> int:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{receiver.server_address[1]}/hook"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = {
            "database_url": f"sqlite:///{root}/gw.db",
            "runs_dir": root / "runs",
            "audit_anchor_path": root / "a",
        }
        plain = build_services(Settings(**base))
        hooks = [{"name": f"h{i}", "url": url, "secret": "s" * 24} for i in range(3)]
        handed = build_services(
            Settings(**base, webhooks=hooks, mlflow_tracking_uri="http://127.0.0.1:9"), upgrade=False
        )
        project = f"bh{uuid.uuid4().hex[:6]}"
        add_project(plain, project)
        who = principals(project)
        times: dict[str, list[float]] = {"without": [], "with": []}
        for _ in range(5):  # interleaved, so a change in the machine's load hits both alike
            times["without"].append(_moves(plain, project, who, moves))
            times["with"].append(_moves(handed, project, who, moves))
        without, with_handoff = min(times["without"]), min(times["with"])
        queued = handed.handoff.items(principal=who["admin"], kind="webhook", status="pending")
        deliverer = build_services(Settings(**base, webhooks=hooks), upgrade=False)  # webhooks only
        started = time.perf_counter()
        while deliverer.handoff.process_due().done:
            pass
        took = time.perf_counter() - started
        deliverer.close()
        delivered = len(queued)
        plain.close()
        handed.close()
    receiver.shutdown()
    ratio = with_handoff / without
    print(
        f"alias move without hand-off: {without * 1000:.2f} ms; with MLflow + 3 webhooks enqueued: "
        f"{with_handoff * 1000:.2f} ms; ratio {ratio:.2f} (target < {TARGET})"
    )
    print(
        f"outbox: {delivered} webhook deliveries in {took:.2f} s ({delivered / took:.0f}/s, signed, loopback)"
    )
    return 0 if ratio < TARGET else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
