"""Cost math: an accounting record's allocated TRES x elapsed x the rate valid at the time.

A rate table (``RateTable``, one applied version of the site file's
``accounting`` section) holds rates per partition and GPU type, each valid
from a moment (a date alone: its midnight UTC) until the next rate for the
same partition and GPU type. A record is priced over [start, start + elapsed): the stretch is
split where a rate for its partition and GPU type begins, each part priced
by the rate valid in it. A part's cost under the partition's charge rule:

- ``sum`` (the default): GPU-hours x gpu_hour + core-hours x cpu_core_hour
  + GiB-hours of memory x mem_gb_hour;
- ``max`` (Slurm's billing weights with ``PriorityFlags=MAX_TRES``): only the
  largest of those three parts counts.

A rate for GPU type ``*`` (or none given) applies to any GPU type, and to
records without GPUs; one for a named type is preferred for that type;
partition ``*`` is the fallback for partitions without their own rates.

A table may also hold rates of its own for a cluster (``RateTable.clusters``:
a site whose clusters price CPU and GPU hours differently, docs/clusters.md).
A record of that cluster is priced by them when they have a rate for its
partition (or ``*``) and GPU type, else by the site's rates, as any other
record; its charge rule is the cluster's for the partition when the cluster
gives one, else the site's. A cluster rate names its cluster in its id
(``gwlocal2:gpu/*@2026-11-01``).
Failed, cancelled and requeued attempts are priced like any other: they
held the resources.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from gateway.core.accounting.records import CostPart, Price, SacctRecord

ANY = "*"
CHARGE_RULES = ("sum", "max")


@dataclass(frozen=True)
class Rate:
    """Prices from ``valid_from`` on, for one partition and GPU type."""

    partition: str  # "*": any partition without rates of its own
    gpu_type: str  # "*": any GPU type (and no GPUs)
    valid_from: datetime  # aware UTC; a date in the site file means its midnight UTC
    gpu_hour: float = 0.0  # currency per GPU-hour
    cpu_core_hour: float = 0.0  # currency per CPU-core-hour
    mem_gb_hour: float = 0.0  # currency per GiB-of-memory-hour
    cluster: str | None = None  # the cluster whose own rate this is; None: the site's, any cluster

    @property
    def rate_id(self) -> str:
        """``[<cluster>:]<partition>/<gpu type>@<valid from>``: how a priced record names the rate (a
        date alone when the rate starts at midnight UTC; the cluster for a cluster's own rate)."""
        where = f"{self.cluster}:" if self.cluster else ""
        return f"{where}{self.partition}/{self.gpu_type}@{_moment(self.valid_from)}"

    @property
    def starts(self) -> datetime:
        """The moment this rate starts to apply."""
        return self.valid_from


def midnight(day: date) -> datetime:
    """Midnight UTC at the start of ``day``: when a rate given with a date alone starts."""
    return datetime.combine(day, time(0), tzinfo=UTC)


def _moment(at: datetime) -> str:
    at = at.astimezone(UTC)
    return at.date().isoformat() if at == midnight(at.date()) else at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ClusterRates:
    """A cluster's own rates and charge rules, before the site's (module docstring)."""

    rates: tuple[Rate, ...]  # each with ``cluster`` set to the cluster's name
    charge: dict[str, str] = field(default_factory=dict)  # partition -> "sum" | "max"


@dataclass(frozen=True)
class RateTable:
    """One version of the rate table: its rates, charge rules per partition and currency; and the
    clusters' own rates (by the gateway's cluster name), which come before the site's."""

    version: int
    currency: str  # e.g. "EUR"
    rates: tuple[Rate, ...]
    charge: dict[str, str]  # partition -> "sum" | "max"; partitions not named use "sum"
    clusters: dict[str, ClusterRates] = field(default_factory=dict)

    def rule(self, partition: str | None, cluster: str | None = None) -> str:
        """The charge rule of ``partition`` on ``cluster`` (the cluster's when it names one for the
        partition, else the site's; ``sum`` unless the table says otherwise)."""
        own = self.clusters.get(cluster or "")
        if own is not None and (partition or "") in own.charge:
            return own.charge[partition or ""]
        return self.charge.get(partition or "", self.charge.get(ANY, "sum"))


def _pick(rates: Sequence[Rate], partition: str | None, gpu_type: str | None) -> list[Rate]:
    parts = [r for r in rates if r.partition == partition]
    if not parts:
        parts = [r for r in rates if r.partition == ANY]
    typed = [r for r in parts if gpu_type is not None and r.gpu_type == gpu_type]
    chosen = typed or [r for r in parts if r.gpu_type == ANY]
    return sorted(chosen, key=lambda r: r.valid_from)


def _candidates(
    table: RateTable, partition: str | None, gpu_type: str | None, cluster: str | None = None
) -> list[Rate]:
    """The rates that may price a record in ``partition`` with ``gpu_type`` on ``cluster``, oldest
    first: the cluster's own when it has any for them, else the site's."""
    own = table.clusters.get(cluster or "")
    if own is not None:
        found = _pick(own.rates, partition, gpu_type)
        if found:
            return found
    return _pick(table.rates, partition, gpu_type)


def part_cost(rate: Rate, rule: str, *, gpus: int, cpus: int, mem_gb: float, hours: float) -> float:
    """The cost of ``hours`` of an allocation of ``gpus``, ``cpus`` and ``mem_gb`` GiB at ``rate``.

    ``rule`` is ``sum`` or ``max`` (module docstring); ValueError for another rule.
    """
    pieces = (
        gpus * hours * rate.gpu_hour,
        cpus * hours * rate.cpu_core_hour,
        mem_gb * hours * rate.mem_gb_hour,
    )
    if rule == "sum":
        return sum(pieces)
    if rule == "max":
        return max(pieces)
    raise ValueError(f"unknown charge rule {rule!r}; rules are {', '.join(CHARGE_RULES)}")


def price(
    record: SacctRecord, table: RateTable, *, cluster: str | None = None, _rates: list[Rate] | None = None
) -> Price:
    """The price of ``record`` under ``table``, split at each rate change inside its run; ``cluster``
    is the gateway's name of the record's cluster (its own rates first; None: the site's alone).

    A record that never started (or ran 0 s) costs 0 with no parts. A record
    with no rate valid for (part of) its run is priced for the parts that
    have one, and ``note`` says what was left unpriced.
    """
    if record.start_time is None or record.elapsed_s <= 0:
        return Price(table.version, table.currency, 0.0, (), None)
    start = record.start_time
    end = start + timedelta(seconds=record.elapsed_s)
    if _rates is None:
        _rates = _candidates(table, record.partition, record.alloc.gpu_type, cluster)
    rates = _rates
    rule = table.rule(record.partition, cluster)
    parts: list[CostPart] = []
    for i, rate in enumerate(rates):
        until = rates[i + 1].starts if i + 1 < len(rates) else end
        lo, hi = max(start, rate.starts), min(end, until)
        if hi <= lo:
            continue
        hours = (hi - lo).total_seconds() / 3600
        cost = part_cost(
            rate,
            rule,
            gpus=record.alloc.gpus,
            cpus=record.alloc.cpus,
            mem_gb=record.alloc.mem_gb,
            hours=hours,
        )
        parts.append(CostPart(rate.rate_id, lo, hi, hours, cost))
    priced_s = sum((p.end - p.start).total_seconds() for p in parts)
    note = None
    if priced_s < record.elapsed_s:
        where = f"partition {record.partition or '?'}, GPU type {record.alloc.gpu_type or 'none'}"
        note = f"{record.elapsed_s - priced_s:g} s of {record.elapsed_s} s have no rate ({where})"
    return Price(table.version, table.currency, sum(p.cost for p in parts), tuple(parts), note)


def price_all(
    records: Sequence[SacctRecord], table: RateTable, names: Mapping[str, str] | None = None
) -> list[Price]:
    """``price`` of each record, in order (the rates of each cluster, partition and GPU type looked up
    once). ``names`` gives the gateway's name of each cluster as sacct prints it (``Cluster``); a
    cluster it leaves out is taken by its printed name."""
    names = names or {}
    found: dict[tuple[str | None, str | None, str | None], list[Rate]] = {}
    prices = []
    for r in records:
        cluster = names.get(r.cluster, r.cluster) or None
        key = (r.partition, r.alloc.gpu_type, cluster)
        if key not in found:
            found[key] = _candidates(table, *key)
        prices.append(price(r, table, cluster=cluster, _rates=found[key]))
    return prices


def _rates_to_json(rates: Sequence[Rate]) -> list[dict]:
    return [
        {
            "partition": r.partition,
            "gpu_type": r.gpu_type,
            "valid_from": _moment(r.valid_from),
            "gpu_hour": r.gpu_hour,
            "cpu_core_hour": r.cpu_core_hour,
            "mem_gb_hour": r.mem_gb_hour,
        }
        for r in rates
    ]


def table_to_json(table: RateTable) -> dict:
    """The table's rates and charge rules as JSON-ready values (what ``rate_versions.rates`` holds);
    ``clusters`` only when a cluster has rates of its own (a table without any reads as it always did,
    and keeps its sha256)."""
    doc: dict = {"rates": _rates_to_json(table.rates), "charge": dict(sorted(table.charge.items()))}
    if table.clusters:
        doc["clusters"] = {
            name: {"rates": _rates_to_json(own.rates), "charge": dict(sorted(own.charge.items()))}
            for name, own in sorted(table.clusters.items())
        }
    return doc


def table_sha256(table: RateTable) -> str:
    """The sha256 of the table's canonical JSON (currency, rates, charge rules, clusters' own rates):
    two tables that price alike have the same, whatever their version number."""
    doc = {"currency": table.currency, **table_to_json(table)}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def _rates_from_json(items: Sequence[dict], cluster: str | None = None) -> tuple[Rate, ...]:
    return tuple(
        Rate(
            partition=r["partition"],
            gpu_type=r["gpu_type"],
            valid_from=_read_moment(r["valid_from"]),
            gpu_hour=float(r["gpu_hour"]),
            cpu_core_hour=float(r["cpu_core_hour"]),
            mem_gb_hour=float(r["mem_gb_hour"]),
            cluster=cluster,
        )
        for r in items
    )


def table_from_json(version: int, currency: str, data: dict) -> RateTable:
    """The ``RateTable`` that ``table_to_json`` wrote, as version ``version``."""
    clusters = {
        name: ClusterRates(_rates_from_json(own.get("rates", []), name), dict(own.get("charge", {})))
        for name, own in data.get("clusters", {}).items()
    }
    return RateTable(
        version, currency, _rates_from_json(data.get("rates", [])), dict(data.get("charge", {})), clusters
    )


def _read_moment(text: str) -> datetime:
    if "T" not in text:
        return midnight(date.fromisoformat(text))
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@dataclass(frozen=True)
class RateVersion:
    """One applied rate table, as the store keeps it."""

    table: RateTable
    sha256: str  # table_sha256 of the table, computed by the store when it keeps the version
    applied_by: str
    applied_at: datetime

    @property
    def version(self) -> int:
        """The table's version number (1, 2, ...)."""
        return self.table.version
