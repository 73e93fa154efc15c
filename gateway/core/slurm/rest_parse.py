"""slurmrestd's JSON (OpenAPI v0.0.38 and dbv0.0.38, Slurm 22.05) as the values the CLI parser gives.

Each function reads one endpoint's answer into the same records ``slurm_parse``
reads from squeue, sacct and scontrol, so the services cannot tell the
backends apart. Times come as epoch seconds (0: none); memory in MB; a
pending array comes as one record with ``array_task_string`` and is expanded
task by task, as ``squeue --array`` shows it. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from gateway.core.slurm.records import AccountingRecord, JobStatus, NodeInfo, PartitionInfo, StepRecord
from gateway.core.slurm.states import map_slurm_state
from gateway.core.slurm.units import opt
from gateway.errors import SlurmOutputError

_TASK_RANGE = re.compile(r"(\d+)(?:-(\d+)(?::(\d+))?)?")
_GRES_USED = re.compile(r"gpu(?::[A-Za-z0-9_.-]+)?:(\d+)")
_GRES = re.compile(r"gpu(?::([A-Za-z0-9_.-]+))?:(\d+)")


def _time(value: Any) -> datetime | None:
    return datetime.fromtimestamp(value, UTC) if isinstance(value, int) and value > 0 else None


def _text(value: Any) -> str | None:
    return opt(value) if isinstance(value, str) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def expand_tasks(task_string: str) -> list[str]:
    """``1-3,7,10-14:2%2`` -> ["1", "2", "3", "7", "10", "12", "14"]; SlurmOutputError when unreadable."""
    tasks: list[str] = []
    for part in task_string.split("%")[0].split(","):
        match = _TASK_RANGE.fullmatch(part.strip())
        if not match:
            raise SlurmOutputError(f"slurmrestd gave an unreadable array task list {task_string!r}")
        first = int(match[1])
        last = int(match[2]) if match[2] else first
        tasks.extend(str(t) for t in range(first, last + 1, int(match[3] or 1)))
    return tasks


def parse_jobs(answer: Mapping[str, Any]) -> list[JobStatus]:
    """``GET /slurm/v0.0.38/jobs`` -> every live job, array tasks one by one (``squeue --array``)."""
    statuses: list[JobStatus] = []
    for job in answer.get("jobs", []):
        reason = _text(job.get("state_reason"))
        mapped = map_slurm_state(str(job.get("job_state", "")), reason)
        array_id = job.get("array_job_id") or 0
        task = job.get("array_task_id")
        pending_tasks = job.get("array_task_string") or ""
        ids: list[tuple[str, str | None]]
        if array_id and task is None and pending_tasks:
            ids = [(f"{array_id}_{t}", t) for t in expand_tasks(pending_tasks)]
        elif array_id and task is not None:
            ids = [(f"{array_id}_{task}", str(task))]
        else:
            ids = [(str(job["job_id"]), None)]
        for job_id, task_id in ids:
            statuses.append(
                JobStatus(
                    job_id=job_id,
                    array_job_id=str(array_id) if task_id is not None else None,
                    array_task_id=task_id,
                    slurm_state=mapped.slurm_state,
                    state=mapped.state,
                    reason=reason,
                    node_list=_text(job.get("nodes")),
                    partition=str(job.get("partition", "")),
                    user=str(job.get("user_name", "")),
                    name=str(job.get("name", "")),
                    comment=_text(job.get("comment")),
                    submit_time=_time(job.get("submit_time")),
                    start_time=_time(job.get("start_time")),
                    nodes=_count(job.get("node_count")),
                    cpus=_count(job.get("cpus")),
                    tres_per_node=_text(job.get("tres_per_node")),
                    priority=_count(job.get("priority")),
                    account=_text(job.get("account")),
                )
            )
    return statuses


def live_exit_codes(answer: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``GET /slurm/v0.0.38/jobs`` -> {raw job id: (exit status, signal)} of the jobs slurmctld still
    holds (it keeps ended ones for MinJobAge). Its ``exit_code`` is the raw wait status."""
    codes = {}
    for job in answer.get("jobs", []):
        status = job.get("exit_code")
        if isinstance(status, int) and status >= 0:
            codes[str(job["job_id"])] = ((status >> 8) & 0xFF, status & 0x7F)
    return codes


def _tres(items: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    tres: dict[str, str] = {}
    for item in items or []:
        count = item.get("count")
        if count is None:
            continue
        kind, name = item.get("type"), item.get("name")
        tres[f"{kind}/{name}" if name else str(kind)] = str(count)
    return tres


def _max_rss_kb(step: Mapping[str, Any]) -> int | None:
    peaks = ((step.get("tres") or {}).get("requested") or {}).get("max") or []
    rss = [
        item["count"] for item in peaks if item.get("type") == "mem" and isinstance(item.get("count"), int)
    ]
    return max(rss) // 1024 if rss else None  # bytes -> KiB, as sacct --units=K


def _exit(status: Mapping[str, Any] | None) -> tuple[int | None, int | None]:
    if not status:
        return None, None
    signal = (status.get("signal") or {}).get("signal_id")
    return _count(status.get("return_code")), _count(signal) or 0


def parse_accounting(
    answer: Mapping[str, Any],
    *,
    uid_of: Callable[[str], int | None],
    exit_codes: Mapping[str, tuple[int, int]] | None = None,
) -> list[AccountingRecord]:
    """``GET /slurmdb/v0.0.38/job/{id}`` -> one record per job (array task) with its steps.

    ``uid_of`` turns the cancelling user's name into a uid (``CANCELLED by UID`` in sacct).
    ``exit_codes`` (raw job id -> (status, signal)) win over slurmdbd's: dbv0.0.38 of Slurm
    22.05.8 reports every exit code as SUCCESS/0 (a job that exited 3 included).
    """
    records = []
    for job in answer.get("jobs", []):
        raw_id = str(job["job_id"])
        array = job.get("array") or {}
        task = array.get("task_id")
        job_id = f"{array['job_id']}_{task}" if task is not None and array.get("job_id") else raw_id
        state = job.get("state") or {}
        reason = _text(state.get("reason"))
        mapped = map_slurm_state(str(state.get("current", "")), reason)
        killer = _text(job.get("kill_request_user"))
        code, signal = (exit_codes or {}).get(raw_id) or _exit(job.get("exit_code"))
        # (the caller corrects ``code`` of jobs slurmctld has forgotten, from sacct)
        times = job.get("time") or {}
        steps = [_step(step, (code, signal)) for step in job.get("steps") or []]
        rss = [s.max_rss_kb for s in steps if s.max_rss_kb is not None]
        records.append(
            AccountingRecord(
                job_id=job_id,
                job_id_raw=raw_id,
                array_job_id=str(array["job_id"]) if task is not None else None,
                array_task_id=str(task) if task is not None else None,
                name=str(job.get("name", "")),
                user=str(job.get("user", "")),
                account=_text(job.get("account")),
                partition=_text(job.get("partition")),
                comment=_text((job.get("comment") or {}).get("job")),
                slurm_state=mapped.slurm_state,
                state=mapped.state,
                cancelled_by_uid=uid_of(killer) if killer and mapped.slurm_state == "CANCELLED" else None,
                exit_code=code,
                exit_signal=signal,
                submit_time=_time(times.get("submission")),
                start_time=_time(times.get("start")),
                end_time=_time(times.get("end")),
                elapsed_s=_count(times.get("elapsed")) or 0,
                timelimit_min=_count(times.get("limit")) or None,  # 0: slurmdbd's placeholder, as sacct's ""
                alloc_tres=_tres((job.get("tres") or {}).get("allocated")),
                node_list=None if job.get("nodes") == "None assigned" else _text(job.get("nodes")),
                reason=reason,
                max_rss_kb=max(rss) if rss else None,
                steps=steps,
            )
        )
    return records


def _step(step: Mapping[str, Any], job_exit: tuple[int | None, int | None]) -> StepRecord:
    # dbv0.0.38 step exit codes are as wrong as the job's: the batch step's is the job's, others unknown.
    name = str((step.get("step") or {}).get("name", ""))
    code, signal = job_exit if name == "batch" else (None, None)
    return StepRecord(
        step=name,
        slurm_state=map_slurm_state(str(step.get("state", ""))).slurm_state,
        exit_code=code,
        exit_signal=signal,
        max_rss_kb=_max_rss_kb(step),
        node_list=_text((step.get("nodes") or {}).get("range")),
    )


def parse_partitions_json(answer: Mapping[str, Any]) -> list[PartitionInfo]:
    """``GET /slurm/v0.0.38/partitions`` -> every partition (limits in minutes; None: unlimited)."""
    partitions = []
    for part in answer.get("partitions", []):
        max_time = part.get("max_time_limit")
        default_time = part.get("default_time_limit")
        partitions.append(
            PartitionInfo(
                name=str(part["name"]),
                is_default="default" in (part.get("flags") or []),
                state=str(part.get("state", "UNKNOWN")).upper(),
                node_list=str(part.get("nodes", "")),
                total_nodes=_count(part.get("total_nodes")) or 0,
                total_cpus=_count(part.get("total_cpus")) or 0,
                max_time_min=_count(max_time),
                default_time_min=_count(default_time),
                qos=_text(part.get("qos")),
                allow_accounts=_text(part.get("allowed_accounts")) or "ALL",
                # -1 (INFINITE) and null (not set) are None; slurmrestd 22.05 writes MinNodes with spaces
                max_nodes=_count(part.get("maximum_nodes_per_job")) or None,
                min_nodes=_count(part.get("min nodes per job")) or 0,
                max_cpus_per_node=_count(part.get("maximum_cpus_per_node")) or None,
                max_mem_per_node_mb=_count(part.get("maximum_memory_per_node")) or None,
                max_mem_per_cpu_mb=_count(part.get("maximum_memory_per_cpu")) or None,
                def_mem_per_node_mb=_count(part.get("default_memory_per_node")) or None,
                def_mem_per_cpu_mb=_count(part.get("default_memory_per_cpu")) or None,
            )
        )
    return partitions


def parse_nodes_json(answer: Mapping[str, Any]) -> list[NodeInfo]:
    """``GET /slurm/v0.0.38/nodes`` -> every node (state as scontrol prints it: ``IDLE+DRAIN``)."""
    nodes = []
    for node in answer.get("nodes", []):
        gres = _GRES.search(str(node.get("gres") or ""))
        used = _GRES_USED.search(str(node.get("gres_used") or ""))
        flags = [str(f).upper() for f in node.get("state_flags") or []]
        nodes.append(
            NodeInfo(
                name=str(node["name"]),
                state="+".join([str(node.get("state", "unknown")).upper(), *flags]),
                partitions=[str(p) for p in node.get("partitions") or []],
                cpus=_count(node.get("cpus")) or 0,
                alloc_cpus=_count(node.get("alloc_cpus")) or 0,
                real_memory_mb=_count(node.get("real_memory")) or 0,
                alloc_memory_mb=_count(node.get("alloc_memory")) or 0,
                gpus=int(gres.group(2)) if gres else 0,
                gpus_alloc=int(used.group(1)) if used else 0,
                gpu_type=gres.group(1) if gres else None,
                reason=_text(node.get("reason")),
            )
        )
    return nodes
