"""The accounting ledger's store on SQLite and PostgreSQL: identity, update in place, prices, versions."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import update

from gateway.core.accounting.cost import Rate, RateTable, price, table_sha256
from gateway.core.accounting.records import RecordLink, SacctRecord, SacctStep, Tres
from gateway.core.reports.rows import unreconciled
from gateway.core.site.rates import spec_of
from gateway.store.accounting.accounting import AccountingStore, Entry, RecordFilter
from gateway.store.accounting.models import RateVersionRow
from tests.service.conftest import OPERATOR

T0 = datetime(2026, 11, 3, 8, 0, tzinfo=UTC)


def running(cluster: str, job: str = "7") -> SacctRecord:
    tres = Tres(cpus=2, mem_mb=2048, gpus=1, gpu_type="fake", nodes=1, billing=2)
    req = replace(tres, gpu_type=None)
    alloc_text = "billing=2,cpu=2,gres/gpu:fake=1,gres/gpu=1,mem=2G,node=1"
    step = SacctStep("batch", "batch", "RUNNING", 0, 0, T0, None, 30, "g1", 1000, "mem=1000K")
    return SacctRecord(
        cluster, 11, job, job, None, None, "j", "u", "acct", "gpu", "normal", "RUNNING", None, 0, 0,
        T0 - timedelta(minutes=1), T0 - timedelta(minutes=1), T0, None, 30, 60, tres, req,
        alloc_text, "billing=2,cpu=2,gres/gpu=1,mem=2G,node=1", "g1", "gw-r-x-1", 1000, (step,),
    )  # fmt: skip


def test_a_record_that_ended_since_is_updated_in_place(services):
    store: AccountingStore = services.accounting.store
    cluster = f"st-{uuid.uuid4().hex[:8]}"
    first = running(cluster)
    assert store.save([Entry(first, RecordLink(), None)], now=T0).new == 1
    assert store.save([Entry(first, RecordLink(), None)], now=T0 + timedelta(minutes=1)).updated == 0
    (before,) = [r for r in store.records(RecordFilter(job_ids=["7"])) if r.record.cluster == cluster]
    assert before.updated_at == T0 and not before.record.ended
    ended = replace(
        first,
        state="COMPLETED",
        end_time=T0 + timedelta(hours=1),
        elapsed_s=3600,
        max_rss_kb=5000,
        steps=(
            replace(first.steps[0], state="COMPLETED", end_time=T0 + timedelta(hours=1), max_rss_kb=5000),
        ),
    )
    link = RecordLink(project="test")
    counts = store.save([Entry(ended, link, None)], now=T0 + timedelta(hours=2))
    assert (counts.new, counts.updated) == (0, 1)
    (after,) = [r for r in store.records(RecordFilter(job_ids=["7"])) if r.record.cluster == cluster]
    assert after.id == before.id and after.first_seen_at == T0 and after.updated_at == T0 + timedelta(hours=2)
    assert after.record == ended and after.link == link and after.record.gpu_hours == 1.0
    # a requeue of the same job id is its own record
    again = replace(ended, submit_time=T0 + timedelta(hours=3), db_index=12)
    assert store.save([Entry(again, link, None)]).new == 1
    assert len([r for r in store.records(RecordFilter(job_ids=["7"])) if r.record.cluster == cluster]) == 2


def test_prices_and_rate_versions(services):
    store: AccountingStore = services.accounting.store
    cluster = f"st-{uuid.uuid4().hex[:8]}"
    record = replace(running(cluster, "8"), state="FAILED", end_time=T0 + timedelta(hours=2), elapsed_s=7200)
    store.save([Entry(record, RecordLink(), None)])
    table = RateTable(0, "EUR", (Rate("gpu", "fake", T0 - timedelta(days=30), 2.0, 0.1, 0.01),), {})
    version = store.add_rate_version(table, "pytest")
    assert (
        store.current_rates().version == version.version and store.current_rates().table.rates == table.rates
    )
    # the version keeps the table's own digest, and an export of it applied again plans nothing (a
    # digest given by the caller, once "sha-<cluster>", made the next file's round trip plan a version)
    assert version.sha256 == table_sha256(table) == spec_of(version.table).sha256
    assert [c for c in rate_plan(services) if "rate table" in c] == []
    stored = next(r for r in store.priced_with(version.version, limit=100_000) if r.record.cluster == cluster)
    priced = price(stored.record, version.table)
    store.set_prices([(stored.id, priced)])
    (got,) = [r for r in store.records(RecordFilter(job_ids=["8"])) if r.record.cluster == cluster]
    assert got.price == priced and got.price.cost == 2 * (2.0 + 2 * 0.1 + 2 * 0.01)
    assert all(r.id != got.id for r in store.priced_with(version.version, limit=100_000))


def rate_plan(services) -> list[str]:
    """What a dry-run apply of the site's own export would change."""
    return services.site.apply(OPERATOR, services.site.export(OPERATOR), dry_run=True).changes


def test_an_export_of_a_version_whose_row_keeps_another_digest_plans_nothing(services):
    """The apply compares the stored table's content with the file's, not the digest its row keeps
    (a row written by an earlier release, or by hand, with a digest of something else)."""
    store: AccountingStore = services.accounting.store
    current = store.current_rates()  # the worker's table stays as it was (its content, then its digest)
    table = current.table if current else RateTable(0, "EUR", (Rate("cpu", "*", T0, 0.0, 0.25, 0.0),), {})
    version = store.add_rate_version(table, "pytest").version
    row = update(RateVersionRow).where(RateVersionRow.version == version)
    with store.db.session() as session:
        session.execute(row.values(sha256="0" * 64))
    try:
        assert store.current_rates().sha256 == "0" * 64
        assert [c for c in rate_plan(services) if "rate table" in c] == []
    finally:
        with store.db.session() as session:
            session.execute(row.values(sha256=table_sha256(table)))


def test_one_job_id_on_two_clusters_is_two_records_each_reported_under_its_cluster(services):
    """Job ids are unique per cluster only: the same id on two clusters is two records, and a report
    by cluster counts each under its own cluster with its own numbers."""
    store: AccountingStore = services.accounting.store
    tag = uuid.uuid4().hex[:8]
    first, second = f"ca-{tag}", f"cb-{tag}"
    on_a = replace(running(first, "9"), state="COMPLETED", end_time=T0 + timedelta(hours=1), elapsed_s=3600)
    on_b = replace(
        running(second, "9"),
        state="FAILED",
        end_time=T0 + timedelta(hours=2),
        elapsed_s=7200,
        alloc=Tres(cpus=4, mem_mb=1024, gpus=2, gpu_type="fake", nodes=1, billing=4),
    )
    assert store.save([Entry(on_a, RecordLink(), None), Entry(on_b, RecordLink(), None)]).new == 2
    mine = {
        r.record.cluster: r for r in store.records(RecordFilter(job_ids=["9"])) if tag in r.record.cluster
    }
    assert set(mine) == {first, second}
    assert (mine[first].record.gpu_hours, mine[second].record.gpu_hours) == (1.0, 4.0)
    assert mine[second].record.failed and not mine[first].record.failed
    report = services.reports.report(OPERATOR, "usage", by="cluster", period="2026-11")
    rows = {r.key: r.values for r in report.rows}
    assert (rows[first]["records"], rows[first]["gpu_hours"], rows[first]["cpu_hours"]) == (1, 1.0, 2.0)
    assert (rows[second]["records"], rows[second]["gpu_hours"], rows[second]["cpu_hours"]) == (1, 4.0, 8.0)
    assert unreconciled(report) == []
    by_queue = services.reports.report(OPERATOR, "usage", by="queue", period="2026-11")
    queues = {r.key for r in by_queue.rows}
    assert {f"(partition gpu on {first})", f"(partition gpu on {second})"} <= queues
