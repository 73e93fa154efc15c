"""The world the report tests read: records ingested from real jobs (``world``), made once per backend.

Gateway runs in project ``test`` (one that succeeds, one that fails, one with a GPU, one cancelled
while it ran), a rerun of the
eval world's strong training run, two GPU runs sampled by the fake NVML (every GPU at 40 %, every GPU
at 0 %) and harvested, and a plain ``sbatch`` job in project ``other``'s Slurm account; a rate table
applied; then two ingests (the second adds nothing). Kept for the whole test process, like the eval
world, so the report modules share it.
"""

from __future__ import annotations

import subprocess
import time
from datetime import UTC, datetime, timedelta

from gateway.core.site.schema import parse_site
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.store.accounting.accounting import RecordFilter
from gateway.wiring import build_services
from tests.service.conftest import OPERATOR, PROJECT, SITE, refresh_until, unique_tag

RATES = """
accounting:
  currency: EUR
  rates:
    - {partition: cpu, valid_from: 2026-01-01, cpu_core_hour: 0.5, mem_gb_hour: 0.01}
    - {partition: gpu, valid_from: 2026-01-01, gpu_hour: 30.0, cpu_core_hour: 0.5}
"""


def _spec(command: str, *, queue: str = "cpu", gpus: int = 0) -> dict:
    resources = {"mem_gb": 0.1, "walltime_min": 2}
    if gpus:
        resources |= {"gpus_per_node": gpus, "gpu_type": "fake"}
    return {
        "name": "rep",
        "project": PROJECT,
        "queue": queue,
        "command": command,
        "workdir": "/tmp",
        "tags": [unique_tag()],
        "resources": resources,
    }


def _sbatch(account: str) -> str:
    out = subprocess.run(
        ["sbatch", "--parsable", "-A", account, "-p", "cpu", "-o", "/dev/null", "--wrap", "sleep 2"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip().split(";")[0]


def _wait_ended(job_id: str, timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", job_id, "-o", "State,End"], capture_output=True, text=True
        ).stdout.split("\n")[0]
        state, _, end = out.partition("|")
        if state and end not in ("", "Unknown", "None") and not state.startswith(("RUNNING", "PENDING")):
            return
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not end in {timeout_s} s")


def _gpu_telemetry_runs(settings, principal) -> dict[str, str]:
    """Two GPU runs sampled by the fake NVML (every GPU at 40 %, every GPU at 0 %), harvested."""
    changes = {"gpu_sample_interval_s": 1.0, "gpu_nvml": "fake"}
    built = build_services(settings.model_copy(update=changes), upgrade=False)
    try:
        runs = {}
        for name, util in (("busy", 40), ("idle", 0)):
            spec = _spec("sleep 5", queue="gpu", gpus=2)
            spec["env"] = {"FAKE_NVML_UTIL": ";".join(f"{i}:{util}" for i in range(4))}
            runs[name] = built.runs.submit(build_spec(spec), principal=principal).id
        for run_id in runs.values():
            assert refresh_until(built, run_id, timeout_s=120).state is RunState.SUCCEEDED
        built.harvester.harvest_due(limit=500)
        for run_id in runs.values():
            found = built.telemetry.for_run(run_id, principal=principal)["attempts"]
            assert [a["status"] for a in found] == ["ok"], found
        return runs
    finally:
        built.close()


def get_world(kept, backend, services, settings, principal, eval_world) -> dict:
    """The world of ``backend``: built the first time a test process asks, then kept."""
    return kept.get("report_world", backend, lambda _stack: _build(services, settings, principal, eval_world))


def _build(services, settings, principal, eval_world) -> dict:
    account = services.access.project(PROJECT).slurm_account
    services.site.apply(OPERATOR, parse_site(SITE.format(account=account) + RATES))
    began = datetime.now(UTC)
    runs = {
        "ok": services.runs.submit(build_spec(_spec("sleep 1")), principal=principal).id,
        "failed": services.runs.submit(build_spec(_spec("sleep 1; exit 3")), principal=principal).id,
        "gpu": services.runs.submit(
            build_spec(_spec("sleep 2", queue="gpu", gpus=1)), principal=principal
        ).id,
    }
    runs["rerun"] = services.runs.rerun(eval_world.training["strong"], principal=principal).id
    runs["cancelled"] = services.runs.submit(build_spec(_spec("sleep 60")), principal=principal).id
    refresh_until(services, runs["cancelled"], states={RunState.RUNNING}, timeout_s=120)
    time.sleep(2)  # a few seconds of allocation: a cost to count
    services.runs.cancel(runs["cancelled"], principal=principal)
    other = services.access.project("other").slurm_account
    plain = _sbatch(other)
    telemetry_runs = _gpu_telemetry_runs(settings, principal)
    for name, run_id in runs.items():
        run = refresh_until(services, run_id, timeout_s=120)
        ended = {"failed": RunState.FAILED, "cancelled": RunState.CANCELLED}.get(name, RunState.SUCCEEDED)
        assert run.state is ended, run.latest
    _wait_ended(plain)
    since = began - timedelta(hours=6)  # the eval world's jobs ran earlier in this session
    first = services.accounting.ingest(since=since)
    assert first.read > 0
    ours = [RecordFilter(account=a) for a in (account, other)]  # others' jobs may end meanwhile
    before = [sorted(r.id for r in services.accounting.store.records(f)) for f in ours]
    services.accounting.ingest(since=since)
    assert [sorted(r.id for r in services.accounting.store.records(f)) for f in ours] == before
    today = datetime.now(UTC).date()
    period = f"{(today - timedelta(days=1)).isoformat()}..{today.isoformat()}"
    return {
        "runs": runs,
        "telemetry": telemetry_runs,
        "plain": plain,
        "period": period,
        "accounts": (account, other),
    }
