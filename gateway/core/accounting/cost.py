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
Failed, cancelled and requeued attempts are priced like any other: they
held the resources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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

    @property
    def rate_id(self) -> str:
        """``<partition>/<gpu type>@<valid from>``: how a priced record names the rate (a date alone
        when the rate starts at midnight UTC)."""
        return f"{self.partition}/{self.gpu_type}@{_moment(self.valid_from)}"

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
class RateTable:
    """One version of the rate table: its rates, charge rules per partition and currency."""

    version: int
    currency: str  # e.g. "EUR"
    rates: tuple[Rate, ...]
    charge: dict[str, str]  # partition -> "sum" | "max"; partitions not named use "sum"

    def rule(self, partition: str | None) -> str:
        """The charge rule of ``partition`` (``sum`` unless the table says otherwise)."""
        return self.charge.get(partition or "", self.charge.get(ANY, "sum"))


def _candidates(table: RateTable, partition: str | None, gpu_type: str | None) -> list[Rate]:
    """The rates that may price a record in ``partition`` with ``gpu_type``, oldest first."""
    parts = [r for r in table.rates if r.partition == partition]
    if not parts:
        parts = [r for r in table.rates if r.partition == ANY]
    typed = [r for r in parts if gpu_type is not None and r.gpu_type == gpu_type]
    chosen = typed or [r for r in parts if r.gpu_type == ANY]
    return sorted(chosen, key=lambda r: r.valid_from)


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


def price(record: SacctRecord, table: RateTable, *, _rates: list[Rate] | None = None) -> Price:
    """The price of ``record`` under ``table``, split at each rate change inside its run.

    A record that never started (or ran 0 s) costs 0 with no parts. A record
    with no rate valid for (part of) its run is priced for the parts that
    have one, and ``note`` says what was left unpriced.
    """
    if record.start_time is None or record.elapsed_s <= 0:
        return Price(table.version, table.currency, 0.0, (), None)
    start = record.start_time
    end = start + timedelta(seconds=record.elapsed_s)
    rates = _rates if _rates is not None else _candidates(table, record.partition, record.alloc.gpu_type)
    rule = table.rule(record.partition)
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


def price_all(records: Sequence[SacctRecord], table: RateTable) -> list[Price]:
    """``price`` of each record, in order (the rates of each partition and GPU type looked up once)."""
    found: dict[tuple[str | None, str | None], list[Rate]] = {}
    prices = []
    for r in records:
        key = (r.partition, r.alloc.gpu_type)
        if key not in found:
            found[key] = _candidates(table, *key)
        prices.append(price(r, table, _rates=found[key]))
    return prices


def table_to_json(table: RateTable) -> dict:
    """The table's rates and charge rules as JSON-ready values (what ``rate_versions.rates`` holds)."""
    return {
        "rates": [
            {
                "partition": r.partition,
                "gpu_type": r.gpu_type,
                "valid_from": _moment(r.valid_from),
                "gpu_hour": r.gpu_hour,
                "cpu_core_hour": r.cpu_core_hour,
                "mem_gb_hour": r.mem_gb_hour,
            }
            for r in table.rates
        ],
        "charge": dict(sorted(table.charge.items())),
    }


def table_from_json(version: int, currency: str, data: dict) -> RateTable:
    """The ``RateTable`` that ``table_to_json`` wrote, as version ``version``."""
    rates = tuple(
        Rate(
            partition=r["partition"],
            gpu_type=r["gpu_type"],
            valid_from=_read_moment(r["valid_from"]),
            gpu_hour=float(r["gpu_hour"]),
            cpu_core_hour=float(r["cpu_core_hour"]),
            mem_gb_hour=float(r["mem_gb_hour"]),
        )
        for r in data.get("rates", [])
    )
    return RateTable(version, currency, rates, dict(data.get("charge", {})))


def _read_moment(text: str) -> datetime:
    if "T" not in text:
        return midnight(date.fromisoformat(text))
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


@dataclass(frozen=True)
class RateVersion:
    """One applied rate table, as the store keeps it."""

    table: RateTable
    sha256: str  # of the canonical JSON of currency, rates and charge rules
    applied_by: str
    applied_at: datetime

    @property
    def version(self) -> int:
        """The table's version number (1, 2, ...)."""
        return self.table.version
