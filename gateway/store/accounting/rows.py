"""Accounting rows <-> values: the column values of a record to save, and stored rows as core values."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gateway.core.accounting.cost import RateVersion, table_from_json
from gateway.core.accounting.parse import tres_numbers
from gateway.core.accounting.records import (
    CostPart,
    LedgerRecord,
    Price,
    RecordLink,
    SacctRecord,
    SacctStep,
    Tres,
)
from gateway.store.accounting.models import AccountingRecordRow, AccountingStepRow, RateVersionRow


@dataclass(frozen=True)
class Entry:
    """One record to save, with its link and its price (None: no rate table yet)."""

    record: SacctRecord
    link: RecordLink
    price: Price | None


def columns(entry: Entry) -> dict[str, Any]:
    """The ``accounting_records`` column values of ``entry`` (identity, numbers, link and price)."""
    r, link = entry.record, entry.link
    values = {
        "cluster": r.cluster,
        "job_id_raw": r.job_id_raw,
        "submit_time": r.submit_time,
        "db_index": r.db_index,
        "job_id": r.job_id,
        "array_job_id": r.array_job_id,
        "array_task_id": r.array_task_id,
        "name": r.name,
        "user_name": r.user,
        "account": r.account,
        "partition": r.partition,
        "qos": r.qos,
        "state": r.state,
        "cancelled_by_uid": r.cancelled_by_uid,
        "exit_code": r.exit_code,
        "exit_signal": r.exit_signal,
        "eligible_time": r.eligible_time,
        "start_time": r.start_time,
        "end_time": r.end_time,
        "elapsed_s": r.elapsed_s,
        "timelimit_min": r.timelimit_min,
        "alloc_cpus": r.alloc.cpus,
        "alloc_mem_mb": r.alloc.mem_mb,
        "alloc_gpus": r.alloc.gpus,
        "gpu_type": r.alloc.gpu_type,
        "alloc_nodes": r.alloc.nodes,
        "alloc_billing": r.alloc.billing,
        "req_cpus": r.req.cpus,
        "req_mem_mb": r.req.mem_mb,
        "req_gpus": r.req.gpus,
        "req_nodes": r.req.nodes,
        "alloc_tres": r.alloc_tres,
        "req_tres": r.req_tres,
        "node_list": r.node_list,
        "comment": r.comment,
        "max_rss_kb": r.max_rss_kb,
        "ended": r.ended,
        "failed": r.failed,
        "gpu_hours": r.gpu_hours,
        "cpu_hours": r.cpu_hours,
        "run_id": link.run_id,
        "attempt_id": link.attempt_id,
        "attempt_number": link.attempt_number,
        "project": link.project,
    }
    values.update(price_columns(entry.price))
    return values


def price_columns(price: Price | None) -> dict[str, Any]:
    """The price columns of a record; all None when ``price`` is None (not priced)."""
    if price is None:
        return {"rate_version": None, "currency": None, "cost": None, "cost_parts": None, "cost_note": None}
    return {
        "rate_version": price.rate_version,
        "currency": price.currency,
        "cost": price.cost,
        "cost_parts": [
            {
                "rate_id": p.rate_id,
                "start": p.start.isoformat(),
                "end": p.end.isoformat(),
                "hours": p.hours,
                "cost": p.cost,
            }
            for p in price.parts
        ],
        "cost_note": price.note,
    }


def step_columns(step: SacctStep) -> dict[str, Any]:
    """The ``accounting_steps`` column values of ``step`` (without its record id)."""
    return {
        "step": step.step,
        "name": step.name,
        "state": step.state,
        "exit_code": step.exit_code,
        "exit_signal": step.exit_signal,
        "start_time": step.start_time,
        "end_time": step.end_time,
        "elapsed_s": step.elapsed_s,
        "node_list": step.node_list,
        "max_rss_kb": step.max_rss_kb,
        "tres_usage_in_max": step.tres_usage_in_max,
    }


def to_step(row: AccountingStepRow) -> SacctStep:
    """A stored step as a core value."""
    return SacctStep(
        step=row.step,
        name=row.name,
        state=row.state,
        exit_code=row.exit_code,
        exit_signal=row.exit_signal,
        start_time=row.start_time,
        end_time=row.end_time,
        elapsed_s=row.elapsed_s,
        node_list=row.node_list,
        max_rss_kb=row.max_rss_kb,
        tres_usage_in_max=row.tres_usage_in_max,
    )


def to_ledger(row: AccountingRecordRow, steps: list[AccountingStepRow]) -> LedgerRecord:
    """A stored record (with its ``steps``) as a core value."""
    record = SacctRecord(
        cluster=row.cluster,
        db_index=row.db_index,
        job_id=row.job_id,
        job_id_raw=row.job_id_raw,
        array_job_id=row.array_job_id,
        array_task_id=row.array_task_id,
        name=row.name,
        user=row.user_name,
        account=row.account,
        partition=row.partition,
        qos=row.qos,
        state=row.state,
        cancelled_by_uid=row.cancelled_by_uid,
        exit_code=row.exit_code,
        exit_signal=row.exit_signal,
        submit_time=row.submit_time,
        eligible_time=row.eligible_time,
        start_time=row.start_time,
        end_time=row.end_time,
        elapsed_s=row.elapsed_s,
        timelimit_min=row.timelimit_min,
        alloc=Tres(
            row.alloc_cpus, row.alloc_mem_mb, row.alloc_gpus, row.gpu_type, row.alloc_nodes, row.alloc_billing
        ),
        req=tres_numbers(row.req_tres),
        alloc_tres=row.alloc_tres,
        req_tres=row.req_tres,
        node_list=row.node_list,
        comment=row.comment,
        max_rss_kb=row.max_rss_kb,
        steps=tuple(to_step(s) for s in steps),
    )
    link = RecordLink(row.run_id, row.attempt_id, row.attempt_number, row.project)
    return LedgerRecord(row.id, record, link, _price(row), row.first_seen_at, row.updated_at)


def _price(row: AccountingRecordRow) -> Price | None:
    if row.rate_version is None or row.cost is None:
        return None
    parts = tuple(
        CostPart(
            p["rate_id"],
            datetime.fromisoformat(p["start"]),
            datetime.fromisoformat(p["end"]),
            p["hours"],
            p["cost"],
        )
        for p in row.cost_parts or []
    )
    return Price(row.rate_version, row.currency or "", row.cost, parts, row.cost_note)


def to_rate_version(row: RateVersionRow) -> RateVersion:
    """A stored rate table version as a core value."""
    return RateVersion(
        table_from_json(row.version, row.currency, row.rates), row.sha256, row.applied_by, row.applied_at
    )
