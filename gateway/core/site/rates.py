"""The site file's ``accounting`` section: the rate table, its currency and charge rules.

```yaml
accounting:
  currency: EUR
  charge: {gpu: max}            # per partition: sum (default) or max (Slurm billing, largest part)
  rates:
    - {partition: cpu, valid_from: 2026-11-01, cpu_core_hour: 0.02, mem_gb_hour: 0.002}
    - {partition: gpu, gpu_type: a100, valid_from: 2026-11-01, gpu_hour: 2.5, cpu_core_hour: 0.02}
  clusters:                     # a cluster's own rates (by its name in clusters:), before the site's
    gwlocal2:
      charge: {gpu: sum}
      rates:
        - {partition: gpu, valid_from: 2026-11-01, gpu_hour: 4.0, cpu_core_hour: 0.03}
```

A record of a cluster that has rates of its own for its partition and GPU
type is priced by them; any other record (and every record of a cluster
without its own rates) by the site's (``gateway.core.accounting.cost``).

``AccountingSpec.table`` turns it into the core's ``RateTable``; its
``sha256`` says whether an apply changes anything (the same table again
adds no version). See docs/accounting.md and accounting/rates.example.yaml.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gateway.core import names
from gateway.core.accounting.cost import ANY, ClusterRates, Rate, RateTable, midnight, table_sha256
from gateway.core.described import documented

PRICE = Annotated[float, Field(ge=0, le=1_000_000)]
CURRENCY = r"^[A-Z]{3}$"
PARTITION = f"^(?:\\*|{names.NAME.pattern})$"  # a partition name, or * for any
GPU_TYPE = f"^(?:\\*|{names.GPU_TYPE.pattern})$"
EARLIEST = date(1970, 1, 2)  # rates start no earlier (a day after the epoch: any zone stays in range)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _partition(value: str) -> str:
    if value != ANY and not names.NAME.fullmatch(value):
        raise ValueError(f"not a valid partition; use {names.NAME_HELP}, or * for any partition")
    return value


class RateSpec(_Strict):
    """One rate: prices per hour from ``valid_from`` on, for a partition and GPU type."""

    partition: Annotated[str, documented(pattern=PARTITION)] = ANY
    gpu_type: Annotated[str, documented(pattern=GPU_TYPE)] = ANY
    valid_from: date | datetime = Field(
        description="From when the rate applies: a date (its midnight UTC) or a time with a time zone"
    )
    gpu_hour: PRICE = 0.0
    cpu_core_hour: PRICE = 0.0
    mem_gb_hour: PRICE = 0.0

    @field_validator("partition")
    @classmethod
    def _check_partition(cls, value: str) -> str:
        return _partition(value)

    @field_validator("valid_from")
    @classmethod
    def _check_valid_from(cls, value: date | datetime) -> date | datetime:
        if isinstance(value, datetime) and value.tzinfo is None:
            raise ValueError("give the time zone of the time (e.g. 2026-11-15T12:00:00Z), or a date alone")
        day = value.date() if isinstance(value, datetime) else value
        if day < EARLIEST or day.year > 9998:
            raise ValueError(f"out of range: give a date from {EARLIEST} to 9998-12-31")
        return value

    @property
    def starts(self) -> datetime:
        """When this rate applies from, as an aware UTC datetime, to the second: the stored table keeps
        seconds (two rates a fraction of a second apart are the same rate twice, and are refused)."""
        if isinstance(self.valid_from, datetime):
            return self.valid_from.astimezone(UTC).replace(microsecond=0)
        return midnight(self.valid_from)

    @field_validator("gpu_type")
    @classmethod
    def _check_gpu_type(cls, value: str) -> str:
        if value != ANY and not names.GPU_TYPE.fullmatch(value):
            raise ValueError(f"GPU type {value!r} is not valid; use {names.GPU_TYPE_HELP}, or * for any")
        return value


Charge = Annotated[dict[str, Literal["sum", "max"]], documented(propertyNames={"pattern": PARTITION})]


def _unique_rates(rates: list[RateSpec], where: str = "") -> None:
    seen = set()
    for rate in rates:
        key = (rate.partition, rate.gpu_type, rate.starts)
        if key in seen:
            at = f"{where}partition {rate.partition}, GPU type {rate.gpu_type}"
            raise ValueError(f"two rates for {at} from {rate.valid_from}; give each once")
        seen.add(key)


def _core_rates(rates: list[RateSpec], cluster: str | None = None) -> tuple[Rate, ...]:
    return tuple(
        sorted(
            (
                Rate(r.partition, r.gpu_type, r.starts, r.gpu_hour, r.cpu_core_hour, r.mem_gb_hour, cluster)
                for r in rates
            ),
            key=lambda r: (r.partition, r.gpu_type, r.valid_from),
        )
    )


def _rate_specs(rates: tuple[Rate, ...]) -> list[RateSpec]:
    return [
        RateSpec(
            partition=r.partition,
            gpu_type=r.gpu_type,
            valid_from=_day_or_moment(r.valid_from),
            gpu_hour=r.gpu_hour,
            cpu_core_hour=r.cpu_core_hour,
            mem_gb_hour=r.mem_gb_hour,
        )
        for r in rates
    ]


class ClusterRatesSpec(_Strict):
    """One cluster's own rates and charge rules (docs/clusters.md): they price that cluster's records
    before the site's, which price whatever they leave out."""

    rates: list[RateSpec] = Field(default_factory=list, max_length=1000)
    charge: Charge = Field(default_factory=dict)

    @field_validator("charge")
    @classmethod
    def _charge(cls, value: dict[str, str]) -> dict[str, str]:
        for partition in value:
            _partition(partition)
        return value

    @model_validator(mode="after")
    def _unique(self) -> ClusterRatesSpec:
        _unique_rates(self.rates)
        return self


class AccountingSpec(_Strict):
    """The rate table: currency, rates, and a charge rule per partition; and clusters' own rates."""

    currency: Annotated[str, documented(pattern=CURRENCY)] = "EUR"
    rates: list[RateSpec] = Field(default_factory=list, max_length=1000)
    charge: Charge = Field(default_factory=dict)
    # by the cluster's name in the site file's clusters: (one it lists); in the same currency
    clusters: Annotated[
        dict[str, ClusterRatesSpec], documented(propertyNames={"pattern": names.NAME.pattern})
    ] = Field(default_factory=dict, max_length=100)

    @field_validator("currency")
    @classmethod
    def _currency(cls, value: str) -> str:
        if len(value) != 3 or not value.isascii() or not value.isupper() or not value.isalpha():
            raise ValueError("give an ISO 4217 code: three capital letters, e.g. EUR or USD")
        return value

    @field_validator("charge")
    @classmethod
    def _charge(cls, value: dict[str, str]) -> dict[str, str]:
        for partition in value:
            _partition(partition)
        return value

    @field_validator("clusters")
    @classmethod
    def _cluster_names(cls, value: dict[str, ClusterRatesSpec]) -> dict[str, ClusterRatesSpec]:
        for name in value:
            if not names.NAME.fullmatch(name):
                raise ValueError(f"cluster {name!r} is not a valid cluster name; use {names.NAME_HELP}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> AccountingSpec:
        _unique_rates(self.rates)
        return self

    def table(self, version: int = 0) -> RateTable:
        """This section as the core's ``RateTable`` (rates sorted by partition, GPU type, date)."""
        clusters = {
            name: ClusterRates(_core_rates(own.rates, name), dict(own.charge))
            for name, own in self.clusters.items()
        }
        return RateTable(version, self.currency, _core_rates(self.rates), dict(self.charge), clusters)

    @property
    def sha256(self) -> str:
        """The sha256 of the table's canonical JSON (``table_sha256``: currency, rates, charge rules)."""
        return table_sha256(self.table())


def spec_of(table: RateTable) -> AccountingSpec:
    """A stored rate table back as the site file's section (for ``gw admin export``)."""
    return AccountingSpec(
        currency=table.currency,
        rates=_rate_specs(table.rates),
        charge=dict(table.charge),  # type: ignore[arg-type]  # stored from a validated spec
        clusters={
            name: ClusterRatesSpec(rates=_rate_specs(own.rates), charge=dict(own.charge))  # type: ignore[arg-type]
            for name, own in table.clusters.items()
        },
    )


def _day_or_moment(at: datetime) -> date | datetime:
    """A date alone when ``at`` is a midnight UTC (as the site file gave it), else ``at``."""
    return at.date() if at == midnight(at.date()) else at
