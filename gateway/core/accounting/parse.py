"""Parse the cluster-wide ``sacct`` read of an accounting ingest into ``SacctRecord`` values.

The adapter runs ``sacct --allusers --duplicates --parsable2 --noheader
--delimiter=US --units=K --format=LEDGER_FORMAT`` over a time window, with
``TZ=UTC`` and ``SLURM_TIME_FORMAT=standard`` so every time is UTC. Each
allocation line is followed by its step lines (``123.batch``, ``123.0``);
a step is folded into the allocation record printed last with its job id.

Odd lines do not stop an ingest: a line that cannot be read is skipped and
named in ``LedgerRead.problems``. Known oddities (fixtures in
``tests/unit/test_accounting_parse.py``): ``CANCELLED by 1001``; a job name
or comment holding a newline, which splits one record over two lines
(re-joined while fields are missing); ``Unknown`` end times of running jobs;
pending array rests (``123_[5-9%2]``); a step line whose allocation was not
printed (before the window); TRES with typed GPUs (``gres/gpu:a100=2``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from gateway.core.accounting.records import SacctRecord, SacctStep, Tres
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

LEDGER_FIELDS: tuple[str, ...] = (
    "Cluster",
    "DBIndex",
    "JobID",
    "JobIDRaw",
    "JobName",
    "User",
    "Account",
    "Partition",
    "QOS",
    "State",
    "ExitCode",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "ElapsedRaw",
    "Timelimit",
    "AllocTRES",
    "ReqTRES",
    "NodeList",
    "Comment",
    "MaxRSS",
    "TRESUsageInMax",
)
LEDGER_FORMAT = ",".join(LEDGER_FIELDS)
_ARRAY = re.compile(r"(\d+)_(\d+|\[[^\]]*\])")
_GPU_TYPED = re.compile(r"gres/gpu:([A-Za-z0-9_.-]+)")


@dataclass
class LedgerRead:
    """What one sacct read gave: the records (steps folded in) and the lines that were skipped."""

    records: list[SacctRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    lines: int = 0  # lines read (allocation and step lines)


def tres_numbers(text: str) -> Tres:
    """``billing=4,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=8G,node=1`` -> ``Tres`` (mem in MiB).

    A bare memory number is MiB (Slurm's TRES unit). SlurmOutputError for an unreadable count or size.
    """
    tres = parse_tres(text)
    gpu_type = None
    for key in tres:
        match = _GPU_TYPED.fullmatch(key)
        if match:
            gpu_type = match.group(1)
            break

    def count(key: str) -> int:
        value = tres.get(key, "0") or "0"
        if not value.isdigit():
            raise SlurmOutputError(f"unreadable TRES count {key}={value!r} in {text!r}")
        return int(value)

    mem_kb = mem_to_kb(tres.get("mem", ""), default_unit="M") or 0
    gpus = count("gres/gpu") if "gres/gpu" in tres else (count(f"gres/gpu:{gpu_type}") if gpu_type else 0)
    return Tres(
        cpus=count("cpu"),
        mem_mb=mem_kb // 1024,
        gpus=gpus,
        gpu_type=gpu_type,
        nodes=count("node"),
        billing=count("billing"),
    )


def _time(value: str) -> datetime | None:
    """``parse_time``, with a fast path for the ISO form the adapter asks for (100,000s per ingest)."""
    if len(value) == 19 and value[10] == "T":
        try:
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        except ValueError:
            pass  # parse_time names the bad value
    return parse_time(value)


def _lines(text: str, problems: list[str]) -> list[list[str]]:
    """Split into field lists, re-joining a record that a newline in a name or comment split."""
    want = len(LEDGER_FIELDS)
    out: list[list[str]] = []
    pending = ""
    for line in text.split("\n"):
        if not pending and not line.strip():
            continue
        joined = f"{pending}\n{line}" if pending else line
        parts = joined.split(US)
        if len(parts) < want:
            pending = joined
            continue
        pending = ""
        if len(parts) > want:
            problems.append(
                f"skipped a line with {len(parts)} fields where {want} were asked for: {joined!r}"
            )
            continue
        out.append(parts)
    if pending:
        problems.append(f"skipped an incomplete last line: {pending!r}")
    return out


def _step(raw: dict[str, str], step: str) -> SacctStep:
    code, signal = parse_exit_code(raw["ExitCode"])
    return SacctStep(
        step=step,
        name=raw["JobName"],
        state=map_slurm_state(raw["State"]).slurm_state,
        exit_code=code,
        exit_signal=signal,
        start_time=_time(raw["Start"]),
        end_time=_time(raw["End"]),
        elapsed_s=int(raw["ElapsedRaw"]) if raw["ElapsedRaw"].strip().isdigit() else 0,
        node_list=opt(raw["NodeList"]),
        max_rss_kb=mem_to_kb(raw["MaxRSS"]),
        tres_usage_in_max=opt(raw["TRESUsageInMax"]),
    )


def _record(raw: dict[str, str]) -> SacctRecord:
    job_id = raw["JobID"].strip()
    submit = _time(raw["Submit"])
    if submit is None:
        raise SlurmOutputError(f"a record without a submit time: {job_id}")
    array = _ARRAY.fullmatch(job_id)
    mapped = map_slurm_state(raw["State"])
    code, signal = parse_exit_code(raw["ExitCode"])
    db_index = raw["DBIndex"].strip()
    return SacctRecord(
        cluster=raw["Cluster"].strip(),
        db_index=int(db_index) if db_index.isdigit() else None,
        job_id=job_id,
        job_id_raw=raw["JobIDRaw"].strip(),
        array_job_id=array.group(1) if array else None,
        array_task_id=array.group(2) if array else None,
        name=raw["JobName"],
        user=raw["User"].strip(),
        account=opt(raw["Account"]),
        partition=opt(raw["Partition"]),
        qos=opt(raw["QOS"]),
        state=mapped.slurm_state,
        cancelled_by_uid=mapped.by_uid,
        exit_code=code,
        exit_signal=signal,
        submit_time=submit,
        eligible_time=_time(raw["Eligible"]),
        start_time=_time(raw["Start"]),
        end_time=_time(raw["End"]),
        elapsed_s=int(raw["ElapsedRaw"]) if raw["ElapsedRaw"].strip().isdigit() else 0,
        timelimit_min=parse_minutes(raw["Timelimit"]),
        alloc=tres_numbers(raw["AllocTRES"]),
        req=tres_numbers(raw["ReqTRES"]),
        alloc_tres=raw["AllocTRES"].strip(),
        req_tres=raw["ReqTRES"].strip(),
        node_list=opt(raw["NodeList"]),
        comment=opt(raw["Comment"]),
        max_rss_kb=mem_to_kb(raw["MaxRSS"]),
    )


def parse_ledger(text: str) -> LedgerRead:
    """Parse the ingest's sacct output (module docstring): records with their steps, and problems."""
    read = LedgerRead()
    owners: dict[str, int] = {}  # job_id_raw -> index of its latest record in ``records``
    steps: dict[int, dict[str, SacctStep]] = {}
    records: list[SacctRecord] = []
    for parts in _lines(text, read.problems):
        read.lines += 1
        raw = dict(zip(LEDGER_FIELDS, parts, strict=True))
        job_id_raw = raw["JobIDRaw"].strip()
        try:
            if "." in job_id_raw:
                base, _, step = job_id_raw.partition(".")
                owner = owners.get(base)
                if owner is None:
                    continue  # its allocation is outside the window: the read that has it takes it
                steps.setdefault(owner, {})[step] = _step(raw, step)
                continue
            record = _record(raw)
        except (SlurmOutputError, ValueError) as exc:
            read.problems.append(f"skipped {raw['JobID'].strip() or 'a line'}: {exc}")
            continue
        owners[job_id_raw] = len(records)
        records.append(record)
    for i, record in enumerate(records):
        own = tuple(sorted(steps.get(i, {}).values(), key=lambda s: s.step))
        rss = [s.max_rss_kb for s in own if s.max_rss_kb is not None]
        if record.max_rss_kb is not None:
            rss.append(record.max_rss_kb)
        read.records.append(replace(record, steps=own, max_rss_kb=max(rss) if rss else None))
    return read
