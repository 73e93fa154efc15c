"""GPU telemetry: starting the sampler (the launch in the script), harvesting its files, reading them back.

``telemetry_launch`` is what ``RunService`` renders into a GPU job's script (the sampler program,
its Python, the interval and the NVML, from the settings). ``TelemetryHarvester.harvest`` runs
inside the outputs harvest when an attempt ends (``gateway/services/lineage/outputs.py``): it finds the
attempt's sampler files in the run directory (``telemetry/gpu-JOB-rRESTART-NODE.jsonl``), reads
each through the run host as the job's OS user (regular files inside the run directory only, at
most ``MAX_FILE_BYTES`` each, in chunks of ``CHUNK_BYTES``), summarises them
(``gateway/core/accounting/telemetry.py``) and stores the result once, with the cluster
the attempt ran on (node names such as ``g1`` repeat across clusters). ``TelemetryService.for_run`` serves
``GET /runs/{id}/telemetry`` and ``gw telemetry``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from gateway import resources
from gateway.adapters.runhost import RunHost
from gateway.core.access.policy import allowed
from gateway.core.access.values import Principal
from gateway.core.accounting.telemetry import (
    SAMPLER_FILE,
    AttemptTelemetry,
    NodeTelemetry,
    TelemetryLaunch,
    attempt_telemetry,
    parse_lines,
)
from gateway.errors import NotFound
from gateway.settings import Settings
from gateway.store.accounting.telemetry import TelemetryStore
from gateway.store.lineage.lineage import HarvestJob
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20  # one read through the run host
MAX_FILE_BYTES = 64 << 20  # the sampler's own default size limit
MAX_FILES = 256  # nodes of one attempt
_NAME = re.compile(r"gpu-(?P<job>[0-9_]+)-r(?P<restart>[0-9]+)-(?P<node>[^/]+)\.jsonl$")


def telemetry_launch(settings: Settings) -> TelemetryLaunch | None:
    """How GPU jobs start the sampler, from the settings; None when telemetry is off."""
    if not settings.gpu_telemetry:
        return None
    directory = resources.chosen(settings.accounting_dir, resources.ACCOUNTING)
    return TelemetryLaunch(
        sampler_path=os.path.join(str(directory), SAMPLER_FILE),
        python=settings.gpu_sampler_python,
        interval_s=settings.gpu_sample_interval_s,
        nvml=settings.gpu_nvml,
    )


def _as_recorded(recorded: str | None) -> str | None:
    return recorded


class TelemetryHarvester:
    def __init__(
        self,
        store: TelemetryStore,
        host: RunHost,
        *,
        idle_threshold_pct: float,
        cluster_of: Callable[[str | None], str | None] = _as_recorded,
    ) -> None:
        """``cluster_of`` names the cluster of an attempt by what it recorded (``SlurmClusters.name_of``:
        None is the first cluster); the telemetry record carries that name."""
        self.store = store
        self.host = host
        self.idle_threshold_pct = idle_threshold_pct
        self.cluster_of = cluster_of

    def harvest(self, job: HarvestJob, *, user: Callable[[], str]) -> AttemptTelemetry | None:
        """Summarise and store one ended attempt's telemetry; None when it neither held nor asked for a GPU.

        ``user()`` names the job's OS user (asked only for an attempt with GPUs).
        RunHostUnavailable when the run host does not answer
        (nothing stored: the next cycle tries again)."""
        facts = self.store.facts(job.attempt_id)
        if facts is None or not facts.job_id:
            return None  # the sampler runs only in jobs with GPUs
        problems: list[str] = []
        nodes = self._read_nodes(job.run_dir, facts.job_id, as_user=user(), problems=problems)
        telemetry = attempt_telemetry(
            nodes,
            threshold_pct=self.idle_threshold_pct,
            allocated_gpu_hours=facts.allocated_gpu_hours,
            problems=problems,
        )
        self.store.record(
            job.attempt_id,
            job.run_id,
            telemetry,
            idle_threshold_pct=self.idle_threshold_pct,
            cluster=self.cluster_of(facts.cluster),
        )
        return telemetry

    def _read_nodes(
        self, run_dir: str, job_id: str, *, as_user: str, problems: list[str]
    ) -> list[NodeTelemetry]:
        """The attempt's sampler files, parsed: those of its job (array tasks too), latest restart only."""
        base = job_id.split("_", 1)[0]
        scan = self.host.scan_outputs(
            run_dir,
            [f"telemetry/gpu-{base}-r*.jsonl", f"telemetry/gpu-{base}_*-r*.jsonl"],
            as_user=as_user,
            max_files=MAX_FILES,
        )
        problems += [f"cannot read {e}" for e in scan.errors]
        named = [(m, f.path) for f in scan.files if (m := _NAME.search(f.path))]
        if job_id != base:  # one array task's attempt
            named = [(m, p) for m, p in named if m.group("job") == job_id]
        latest: dict[tuple[str, str], tuple[int, str]] = {}
        for (
            match,
            path,
        ) in named:  # a requeued job writes a new file per restart: the newest is this attempt's
            key = (match.group("job"), match.group("node"))
            restart = int(match.group("restart"))
            if key not in latest or restart > latest[key][0]:
                latest[key] = (restart, path)
        nodes = []
        for _, path in sorted(latest.values(), key=lambda item: item[1]):
            text = self._read(os.path.join(run_dir, path), run_dir, as_user=as_user, problems=problems)
            if text is not None:
                node = parse_lines(text)
                if node.skipped_lines:
                    problems.append(f"{path}: {node.skipped_lines} line(s) skipped")
                nodes.append(node)
        return nodes

    def _read(self, path: str, run_dir: str, *, as_user: str, problems: list[str]) -> str | None:
        """A sampler file's text, read in chunks up to MAX_FILE_BYTES (cut at the last whole line)."""
        chunks: list[bytes] = []
        offset = 0
        while offset < MAX_FILE_BYTES:
            read = self.host.read_file(
                path, as_user=as_user, max_bytes=CHUNK_BYTES, offset_bytes=offset, inside=run_dir
            )
            if not read.exists or read.error:
                problems.append(f"cannot read {os.path.relpath(path, run_dir)}: {read.error or 'gone'}")
                return None
            chunks.append(read.data)
            offset = read.end_bytes
            if not read.data or offset >= read.size_bytes:
                break
        else:
            problems.append(f"{os.path.relpath(path, run_dir)}: only the first {MAX_FILE_BYTES} bytes read")
        data = b"".join(chunks)
        return data[: data.rfind(b"\n") + 1].decode("utf-8", errors="replace")


class TelemetryService:
    def __init__(
        self,
        store: TelemetryStore,
        runs: RunStore,
        *,
        cluster_of: Callable[[str | None], str | None] = _as_recorded,
    ) -> None:
        self.store = store
        self.runs = runs
        self.cluster_of = cluster_of  # a record from before clusters (None) was on the first one

    def for_run(self, run_id: str, *, principal: Principal, samples: bool = False) -> dict[str, Any]:
        """A run's GPU telemetry per harvested attempt: per-GPU summaries, idle GPU-hours, energy, and
        with ``samples`` each GPU's thinned series. NotFound when there is no such run or the caller
        may not read it."""
        run = self.runs.get_run(run_id)
        if not allowed(principal, "run.read", run.project):
            raise NotFound(f"no run {run_id!r}")
        attempts = []
        for stored in self.store.for_run(run.id):
            t = stored.telemetry
            gpus = [asdict(g) for g in t.gpus]
            if not samples:
                for g in gpus:
                    g["series"] = None
            attempts.append(
                {
                    "attempt": stored.attempt,
                    "job_id": stored.job_id,
                    "cluster": self.cluster_of(stored.cluster),
                    "status": t.status,
                    "note": t.note,
                    "idle_threshold_pct": stored.idle_threshold_pct,
                    "harvested_at": stored.harvested_at,
                    "allocated_gpu_hours": t.allocated_gpu_hours,
                    "idle_fraction": t.idle_fraction,
                    "idle_gpu_hours": t.idle_gpu_hours,
                    "energy_wh": t.energy_wh,
                    "gpus": gpus,
                }
            )
        return {"run_id": run.id, "attempts": attempts}
