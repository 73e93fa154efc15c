"""The site file's accounting section: the shipped example, and what it refuses."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gateway.core.accounting.cost import price, table_from_json, table_sha256, table_to_json
from gateway.core.accounting.records import SacctRecord, Tres
from gateway.core.site.rates import spec_of
from gateway.core.site.schema import parse_site
from gateway.errors import SpecError

EXAMPLE = Path(__file__).resolve().parents[2] / "accounting" / "rates.example.yaml"


def gpu_record(start: datetime, elapsed_s: int) -> SacctRecord:
    tres = Tres(cpus=8, mem_mb=64 * 1024, gpus=2, gpu_type="a100", nodes=1, billing=2)
    return SacctRecord(
        "c", None, "1", "1", None, None, "j", "u", "a", "gpu", None, "COMPLETED", None, 0, 0,
        start, start, start, start + timedelta(seconds=elapsed_s), elapsed_s, None, tres, tres, "", "", None,
        None, None,
    )  # fmt: skip


def test_the_example_rate_table_parses_and_prices():
    config = parse_site(EXAMPLE.read_text(), source=str(EXAMPLE))
    table = config.accounting.table(version=1)
    assert table.currency == "EUR" and table.rule("gpu") == "max" and table.rule("cpu") == "sum"
    p = price(gpu_record(datetime(2026, 11, 20, tzinfo=UTC), 3600), table)
    assert p.cost == pytest.approx(max(2 * 2.5, 8 * 0.02, 64 * 0.003))  # the a100 rate, max rule
    assert spec_of(table).sha256 == config.accounting.sha256  # export gives the same table back


@pytest.mark.parametrize(
    ("section", "word"),
    [
        ("{currency: euro}", "ISO 4217"),
        ("{rates: [{partition: cpu, valid_from: '2026-01-01T12:00:00'}]}", "time zone"),
        ("{rates: [{partition: 'a b', valid_from: 2026-01-01}]}", "partition"),
        ("{rates: [{partition: cpu, valid_from: 2026-01-01, cpu_core_hour: -1}]}", "greater than or equal"),
        (
            "{rates: [{partition: cpu, valid_from: 2026-01-01}, {partition: cpu, valid_from: 2026-01-01}]}",
            "two rates for partition cpu",
        ),
        (  # a table keeps its times to the second: two rates in one second would be one rate twice
            "{rates: [{partition: cpu, valid_from: '2026-01-01T12:00:00.1Z'},"
            " {partition: cpu, valid_from: '2026-01-01T12:00:00.7Z'}]}",
            "two rates for partition cpu",
        ),
        ("{charge: {cpu: min}}", "sum"),
        ("{rates: [{partition: cpu, valid_from: 2026-01-01, gpu_type: 'A 100'}]}", "GPU type"),
    ],
)
def test_bad_sections_are_refused_with_the_reason(section, word):
    with pytest.raises(SpecError) as caught:
        parse_site(f"accounting: {section}\n")
    assert word in str(caught.value)


@pytest.mark.parametrize(
    "section",
    [
        "{currency: USD, rates: [{partition: cpu, valid_from: '2026-11-01T12:00:00.5+05:30', gpu_hour: 1}]}",
        "{rates: [{valid_from: '2026-11-01T00:00:00Z', gpu_hour: 1.0e-300}, {valid_from: 2026-12-01}]}",
        "{charge: {gpu: max}, rates: [{partition: gpu, gpu_type: a100, valid_from: 2026-11-01}]}",
    ],
)
def test_an_exported_table_has_the_digest_of_the_applied_one(section):
    """What the store keeps (the table's JSON) read back and exported is the same table (same digest)."""
    applied = parse_site(f"accounting: {section}\n").accounting
    kept = table_from_json(1, applied.currency, json.loads(json.dumps(table_to_json(applied.table()))))
    assert spec_of(kept).sha256 == applied.sha256 == table_sha256(kept)


CLUSTER_RATES = """
clusters: [{name: gwlocal}, {name: gwlocal2, slurm_conf: /etc/slurm-gwlocal2/slurm.conf}]
accounting:
  currency: EUR
  rates: [{partition: cpu, valid_from: 2026-11-01, cpu_core_hour: 0.02}]
  clusters:
    gwlocal2:
      charge: {gpu: max}
      rates: [{partition: cpu, valid_from: 2026-11-01, cpu_core_hour: 0.05}]
"""


def test_cluster_rates_parse_export_and_change_the_tables_digest():
    config = parse_site(CLUSTER_RATES)
    table = config.accounting.table(version=2)
    assert [r.rate_id for r in table.clusters["gwlocal2"].rates] == ["gwlocal2:cpu/*@2026-11-01"]
    assert table.rule("gpu", "gwlocal2") == "max"
    assert spec_of(table).sha256 == config.accounting.sha256
    site_only = parse_site(CLUSTER_RATES.split("  clusters:\n")[0])
    assert site_only.accounting.sha256 != config.accounting.sha256


@pytest.mark.parametrize(
    ("text", "word"),
    [
        (
            CLUSTER_RATES.replace("    gwlocal2:", "    nosuch:"),
            "cluster 'nosuch', which the site file does not",
        ),
        (CLUSTER_RATES.split("\n", 2)[2].replace("accounting:", "accounting:", 1), "lists no clusters"),
        (CLUSTER_RATES.replace("0.05}]", "0.05}, {partition: cpu, valid_from: 2026-11-01}]"), "two rates"),
        (CLUSTER_RATES.replace("charge: {gpu: max}", "charge: {gpu: min}"), "sum"),
    ],
)
def test_bad_cluster_rates_are_refused_with_the_reason(text, word):
    with pytest.raises(SpecError) as caught:
        parse_site(text)
    assert word in str(caught.value)
