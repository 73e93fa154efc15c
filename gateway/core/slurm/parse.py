"""Parse Slurm's machine-readable output into plain values.

The adapter asks for the field lists defined here (``SQUEUE_FIELDS``,
``SACCT_FIELDS``) with ``US`` (0x1F) as the delimiter, so no field value
(job names, comments, reasons) can be mistaken for a separator. Times are
read as UTC: the adapter runs Slurm with ``TZ=UTC``.
"""

from __future__ import annotations

import re

from gateway.core.slurm.records import (
    AccountingRecord,
    JobStatus,
    NodeInfo,
    PartitionInfo,
    StepRecord,
)
from gateway.core.slurm.states import map_slurm_state
from gateway.core.slurm.units import (
    mem_to_kb,
    opt,
    parse_exit_code,
    parse_minutes,
    parse_time,
    parse_tres,
)
from gateway.errors import SlurmOutputError

US = "\x1f"

# (attribute, squeue --format code), in output order.
SQUEUE_FIELDS: tuple[tuple[str, str], ...] = (
    ("job_id", "%i"),
    ("array_job_id", "%F"),
    ("array_task_id", "%K"),
    ("state", "%T"),
    ("reason", "%r"),
    ("node_list", "%N"),
    ("partition", "%P"),
    ("user", "%u"),
    ("name", "%j"),
    ("comment", "%k"),
    ("submit", "%V"),
    ("start", "%S"),
    ("nodes", "%D"),
    ("cpus", "%C"),
    ("tres", "%b"),
    ("priority", "%Q"),
    ("account", "%a"),
)
SQUEUE_FORMAT = US.join(code for _, code in SQUEUE_FIELDS)

SACCT_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "Comment",
    "State",
    "ExitCode",
    "Submit",
    "Start",
    "End",
    "ElapsedRaw",
    "Timelimit",
    "AllocTRES",
    "NodeList",
    "Reason",
    "MaxRSS",
)
SACCT_FORMAT = ",".join(SACCT_FIELDS)


def _int(value: str) -> int | None:
    value = value.strip()
    return int(value) if value.isdigit() else None


def _split(line: str, count: int, command: str) -> list[str]:
    parts = line.split(US)
    if len(parts) != count:
        raise SlurmOutputError(
            f"{command} printed a line with {len(parts)} fields where {count} were asked for: {line!r}"
        )
    return parts


def parse_squeue(text: str) -> list[JobStatus]:
    """Parse ``squeue --noheader --array --format=SQUEUE_FORMAT`` output."""
    jobs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        raw = dict(
            zip((n for n, _ in SQUEUE_FIELDS), _split(line, len(SQUEUE_FIELDS), "squeue"), strict=True)
        )
        reason = opt(raw["reason"])
        mapped = map_slurm_state(raw["state"], reason)
        task = opt(raw["array_task_id"])
        jobs.append(
            JobStatus(
                job_id=raw["job_id"].strip(),
                array_job_id=raw["array_job_id"].strip() if task is not None else None,
                array_task_id=task,
                slurm_state=mapped.slurm_state,
                state=mapped.state,
                reason=reason,
                node_list=opt(raw["node_list"]),
                partition=raw["partition"].strip(),
                user=raw["user"].strip(),
                name=raw["name"],
                comment=opt(raw["comment"]),
                submit_time=parse_time(raw["submit"]),
                start_time=parse_time(raw["start"]),
                nodes=_int(raw["nodes"]),
                cpus=_int(raw["cpus"]),
                tres_per_node=opt(raw["tres"]),
                priority=_int(raw["priority"]),
                account=opt(raw["account"]),
            )
        )
    return jobs


def parse_sacct(text: str) -> list[AccountingRecord]:
    """Parse ``sacct --parsable2 --delimiter=US --noheader --duplicates --format=SACCT_FORMAT``.

    Returns one record per job attempt; step rows (``123.batch``) fold into
    the record they follow, and the largest step MaxRSS becomes the job's.
    """
    records: list[dict] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        raw = dict(zip(SACCT_FIELDS, _split(line, len(SACCT_FIELDS), "sacct"), strict=True))
        job_id = raw["JobID"].strip()
        if "." in job_id:
            base, _, step = job_id.partition(".")
            owner = next((r for r in reversed(records) if r["job_id"] == base), None)
            if owner is None:
                continue  # a step whose job row was not printed: nothing to attach it to
            code, signal = parse_exit_code(raw["ExitCode"])
            owner["steps"].append(
                StepRecord(
                    step=step,
                    slurm_state=map_slurm_state(raw["State"]).slurm_state,
                    exit_code=code,
                    exit_signal=signal,
                    max_rss_kb=mem_to_kb(raw["MaxRSS"]),
                    node_list=opt(raw["NodeList"]),
                )
            )
            continue
        array_job_id = array_task_id = None
        if "_" in job_id:
            array_job_id, _, array_task_id = job_id.partition("_")
        reason = opt(raw["Reason"])
        mapped = map_slurm_state(raw["State"], reason)
        code, signal = parse_exit_code(raw["ExitCode"])
        records.append(
            {
                "job_id": job_id,
                "job_id_raw": raw["JobIDRaw"].strip(),
                "array_job_id": array_job_id,
                "array_task_id": array_task_id,
                "name": raw["JobName"],
                "user": raw["User"].strip(),
                "account": opt(raw["Account"]),
                "partition": opt(raw["Partition"]),
                "comment": opt(raw["Comment"]),
                "slurm_state": mapped.slurm_state,
                "state": mapped.state,
                "cancelled_by_uid": mapped.by_uid,
                "exit_code": code,
                "exit_signal": signal,
                "submit_time": parse_time(raw["Submit"]),
                "start_time": parse_time(raw["Start"]),
                "end_time": parse_time(raw["End"]),
                "elapsed_s": _int(raw["ElapsedRaw"]) or 0,
                "timelimit_min": parse_minutes(raw["Timelimit"]),
                "alloc_tres": parse_tres(raw["AllocTRES"]),
                "node_list": opt(raw["NodeList"]),
                "reason": reason,
                "max_rss_kb": mem_to_kb(raw["MaxRSS"]),
                "steps": [],
            }
        )
    result = []
    for rec in records:
        rss = [s.max_rss_kb for s in rec["steps"] if s.max_rss_kb is not None]
        if rec["max_rss_kb"] is not None:
            rss.append(rec["max_rss_kb"])
        rec["max_rss_kb"] = max(rss) if rss else None
        result.append(AccountingRecord(**rec))
    return result


_KV_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_:/.]*)=")


def parse_kv_line(line: str) -> dict[str, str]:
    """One ``scontrol show ... --oneliner`` line -> {key: value}; values may hold spaces."""
    matches = list(_KV_KEY.finditer(line))
    result = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        result[match.group(1)] = line[match.end() : end].strip()
    return result


def parse_partitions(text: str) -> list[PartitionInfo]:
    """Parse ``scontrol show partition --oneliner``."""
    partitions = []
    for line in text.splitlines():
        if not line.strip():
            continue
        kv = parse_kv_line(line)
        if "PartitionName" not in kv:
            raise SlurmOutputError(f"scontrol printed a partition line without a name: {line!r}")
        partitions.append(
            PartitionInfo(
                name=kv["PartitionName"],
                is_default=kv.get("Default", "NO") == "YES",
                state=kv.get("State", "UNKNOWN"),
                node_list=kv.get("Nodes", ""),
                total_nodes=_int(kv.get("TotalNodes", "")) or 0,
                total_cpus=_int(kv.get("TotalCPUs", "")) or 0,
                max_time_min=parse_minutes(kv.get("MaxTime", "UNLIMITED")),
                default_time_min=parse_minutes(kv.get("DefaultTime", "NONE")),
                qos=opt(kv.get("QoS", "")),
                allow_accounts=opt(kv.get("AllowAccounts", "")),
                max_nodes=_limit(kv.get("MaxNodes", "")),
                min_nodes=_limit(kv.get("MinNodes", "")) or 0,
                max_cpus_per_node=_limit(kv.get("MaxCPUsPerNode", "")),
                max_mem_per_node_mb=_limit(kv.get("MaxMemPerNode", "")),
                max_mem_per_cpu_mb=_limit(kv.get("MaxMemPerCPU", "")),
                def_mem_per_node_mb=_limit(kv.get("DefMemPerNode", "")),
                def_mem_per_cpu_mb=_limit(kv.get("DefMemPerCPU", "")),
            )
        )
    return partitions


def _limit(value: str) -> int | None:
    """A partition limit: a count or MiB; None for UNLIMITED, 0 (Slurm's "not set") or a field it left
    out. scontrol prints either ``MaxMemPerNode=`` or ``MaxMemPerCPU=`` (and ``DefMemPer...``), as the
    limit was set in slurm.conf, with UNLIMITED for none (Slurm 22.05 ``slurm_sprint_partition_info``)."""
    number = _int(value)
    return number or None


_GRES = re.compile(r"gpu(?::([A-Za-z0-9_.-]+))?:(\d+)")


def parse_nodes(text: str) -> list[NodeInfo]:
    """Parse ``scontrol show node --oneliner``."""
    nodes = []
    for line in text.splitlines():
        if not line.strip():
            continue
        kv = parse_kv_line(line)
        if "NodeName" not in kv:
            raise SlurmOutputError(f"scontrol printed a node line without a name: {line!r}")
        cfg = parse_tres(kv.get("CfgTRES", ""))
        alloc = parse_tres(kv.get("AllocTRES", ""))
        gres = _GRES.search(kv.get("Gres", "") or "")
        nodes.append(
            NodeInfo(
                name=kv["NodeName"],
                state=kv.get("State", "UNKNOWN"),
                partitions=[p for p in kv.get("Partitions", "").split(",") if p],
                cpus=_int(kv.get("CPUTot", "")) or 0,
                alloc_cpus=_int(kv.get("CPUAlloc", "")) or 0,
                real_memory_mb=_int(kv.get("RealMemory", "")) or 0,
                alloc_memory_mb=_int(kv.get("AllocMem", "")) or 0,
                gpus=int(cfg.get("gres/gpu", "0") or 0),
                gpus_alloc=int(alloc.get("gres/gpu", "0") or 0),
                gpu_type=gres.group(1) if gres else None,
                reason=opt(kv.get("Reason", "")),
            )
        )
    return nodes


_JOB_ID = re.compile(r"(\d+)(?:;[A-Za-z0-9_.-]+)?")


def parse_sbatch_parsable(stdout: str) -> str | None:
    """``sbatch --parsable`` prints ``jobid`` or ``jobid;cluster``; None when it did not."""
    lines = [ln.strip() for ln in stdout.splitlines() if ln.strip()]
    if not lines:
        return None
    match = _JOB_ID.fullmatch(lines[-1])
    return match.group(1) if match else None
