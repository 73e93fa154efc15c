"""Cost math on plain values: TRES x elapsed x rate, split at rate changes, charge rules."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from gateway.core.accounting.cost import (
    Rate,
    RateTable,
    midnight,
    part_cost,
    price,
    table_from_json,
    table_to_json,
)
from gateway.core.accounting.records import SacctRecord, Tres

START = datetime(2026, 11, 14, 20, 0, tzinfo=UTC)


def record(*, partition="cpu", cpus=4, mem_mb=8192, gpus=0, gpu_type=None, elapsed_s=3600, start=START):
    tres = Tres(cpus=cpus, mem_mb=mem_mb, gpus=gpus, gpu_type=gpu_type, nodes=1, billing=cpus)
    return SacctRecord(
        "c", 1, "10", "10", None, None, "j", "u", "acct", partition, "normal", "FAILED", None, 1, 0,
        start - timedelta(minutes=5), start - timedelta(minutes=5), start,
        start + timedelta(seconds=elapsed_s), elapsed_s, 60, tres, tres, "", "", "n1", None, None,
    )  # fmt: skip


def table(*rates: Rate, charge=None) -> RateTable:
    return RateTable(3, "EUR", rates, charge or {})


def test_sum_of_parts():
    t = table(Rate("cpu", "*", midnight(START.date().replace(day=1)), 0, 0.02, 0.001))
    p = price(record(), t)
    # 4 cores x 1 h x 0.02 + 8 GiB x 1 h x 0.001
    assert p.cost == pytest.approx(0.08 + 0.008)
    assert (p.rate_version, p.currency, p.note) == (3, "EUR", None)
    assert [part.rate_id for part in p.parts] == ["cpu/*@2026-11-01"]


def test_max_rule_counts_the_largest_part_only():
    r = Rate("gpu", "*", midnight(START.date()), 2.0, 0.05, 0.01)
    p = price(record(partition="gpu", gpus=2, gpu_type="a100"), table(r, charge={"gpu": "max"}))
    assert p.cost == pytest.approx(max(2 * 2.0, 4 * 0.05, 8 * 0.01))
    assert part_cost(r, "sum", gpus=2, cpus=4, mem_gb=8, hours=1) == pytest.approx(4 + 0.2 + 0.08)
    with pytest.raises(ValueError, match="charge rule"):
        part_cost(r, "min", gpus=1, cpus=1, mem_gb=1, hours=1)


def test_a_rate_change_mid_month_splits_the_record():
    old = Rate("cpu", "*", midnight(START.date().replace(day=1)), 0, 0.02, 0)
    new = Rate("cpu", "*", midnight(START.date() + timedelta(days=1)), 0, 0.05, 0)  # from 15 Nov
    rec = record(elapsed_s=6 * 3600)  # 20:00 on the 14th to 02:00 on the 15th
    p = price(rec, table(new, old))
    assert [(part.rate_id, part.hours) for part in p.parts] == [
        ("cpu/*@2026-11-01", pytest.approx(4.0)),
        ("cpu/*@2026-11-15", pytest.approx(2.0)),
    ]
    assert p.cost == pytest.approx(4 * 4 * 0.02 + 4 * 2 * 0.05)
    assert p.parts[0].end == p.parts[1].start == midnight(START.date() + timedelta(days=1))
    # a rate that starts after the record ended does not touch it
    assert price(replace(rec, elapsed_s=3600), table(new, old)).cost == pytest.approx(4 * 0.02)


def test_a_rate_change_at_a_moment_inside_the_run():
    at = START + timedelta(seconds=1000)
    p = price(
        record(elapsed_s=3000), table(Rate("cpu", "*", START, 0, 1.0, 0), Rate("cpu", "*", at, 0, 2.0, 0))
    )
    assert [part.rate_id for part in p.parts] == ["cpu/*@2026-11-14T20:00:00Z", "cpu/*@2026-11-14T20:16:40Z"]
    assert p.cost == pytest.approx(4 * 1000 / 3600 * 1.0 + 4 * 2000 / 3600 * 2.0)


def test_typed_gpu_rate_preferred_then_any_then_partition_fallback():
    day = midnight(START.date())
    rates = (Rate("gpu", "a100", day, 3.0), Rate("gpu", "*", day, 1.0), Rate("*", "*", day, 0, 0.5))
    assert (
        price(record(partition="gpu", gpus=1, gpu_type="a100", cpus=0, mem_mb=0), table(*rates)).cost == 3.0
    )
    assert (
        price(record(partition="gpu", gpus=1, gpu_type="v100", cpus=0, mem_mb=0), table(*rates)).cost == 1.0
    )
    assert price(record(partition="other", cpus=2, mem_mb=0), table(*rates)).cost == pytest.approx(1.0)


def test_time_before_any_rate_is_unpriced_and_said_so():
    p = price(record(elapsed_s=7200), table(Rate("cpu", "*", START + timedelta(hours=1), 0, 1.0, 0)))
    assert p.cost == pytest.approx(4.0)
    assert p.note is not None and "3600 s of 7200 s have no rate" in p.note
    none = price(record(partition="gpu"), table(Rate("cpu", "*", START, 0, 1.0, 0)))
    assert none.cost == 0 and none.parts == () and "partition gpu" in (none.note or "")


def test_never_started_costs_nothing():
    rec = replace(record(), start_time=None, elapsed_s=0)
    assert price(rec, table(Rate("cpu", "*", START, 0, 1.0, 0))).cost == 0


def test_table_json_round_trip():
    t = table(
        Rate("cpu", "*", midnight(START.date()), 0, 0.02, 0.001),
        Rate("gpu", "a100", START, 2.5),
        charge={"gpu": "max"},
    )
    assert table_from_json(3, "EUR", table_to_json(t)) == t


def test_a_clusters_own_rates_come_before_the_sites_and_fall_back_to_them():
    """gwlocal2 prices CPU-hours at 3 and GPU-hours of partition gpu at 5; the site prices CPU at 1:
    the same use costs what each cluster's rates say, and what gwlocal2 leaves out the site prices."""
    from gateway.core.accounting.cost import ClusterRates, price_all

    day = midnight(START.date())
    own = ClusterRates((Rate("cpu", "*", day, 0, 3.0, 0, "gwlocal2"),), charge={"cpu": "max"})
    t = RateTable(3, "EUR", (Rate("*", "*", day, 2.0, 1.0, 0),), {}, {"gwlocal2": own})
    one = replace(record(cpus=4, mem_mb=0), cluster="gwlocal")
    two = replace(record(cpus=4, mem_mb=0), cluster="c2")  # sacct's Cluster; gwlocal2 to the gateway
    gpu_two = replace(record(partition="gpu", cpus=1, mem_mb=0, gpus=1), cluster="c2")
    priced = price_all([one, two, gpu_two], t, {"c2": "gwlocal2"})
    assert [p.cost for p in priced] == pytest.approx([4 * 1.0, 4 * 3.0, 2.0 + 1.0])
    assert priced[1].parts[0].rate_id == f"gwlocal2:cpu/*@{day.date()}"
    assert priced[2].parts[0].rate_id == f"*/*@{day.date()}"  # partition gpu: gwlocal2 has none, the site's
    assert t.rule("cpu", "gwlocal2") == "max" and t.rule("cpu", "gwlocal") == "sum"
    assert price(two, t).cost == pytest.approx(4.0)  # no cluster given: the site's alone
    assert table_from_json(3, "EUR", table_to_json(t)) == t
    assert "clusters" not in table_to_json(table(Rate("cpu", "*", day, 0, 1.0, 0)))  # as it always was
